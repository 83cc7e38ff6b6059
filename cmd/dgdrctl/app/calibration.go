package app

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

func newCalibrationCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "calibration",
		Short: "Show or reset a namespace's calibration profile",
		Long: `calibration works with a namespace's calibration profile (-n), the ConfigMap ` + calibration.ConfigMapName + `
of that namespace: the observations of its verified deployments and the corrections its new
searches apply to their predictions. The cluster profile is the profiles of the namespaces the
operator configuration trusts (calibration.trustedNamespaces): show each of them
(docs/design/candidates.md, "Calibration").`,
	}
	cmd.AddCommand(newCalibrationShowCommand(), newCalibrationResetCommand())
	return cmd
}

func newCalibrationShowCommand() *cobra.Command {
	var kf kubeFlags
	var minCount int32
	var observations bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the profile's corrections per key and metric",
		Long: `show prints one line per key (backend, GPU system, model, mode, parallelism) and metric: the
median ratio observed/predicted, its spread (median absolute deviation), the number of
observations, and whether searches use it (at least --min-observations). --observations also
lists the observations, oldest first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if minCount < 1 {
				return fmt.Errorf("--min-observations must be at least 1")
			}
			c, err := kf.connect()
			if err != nil {
				return err
			}
			p, err := calibration.Load(cmd.Context(), c.ctrl, c.namespace)
			if err != nil {
				return err
			}
			writeCalibration(cmd.OutOrStdout(), c.namespace, p, int(minCount), observations)
			return nil
		},
	}
	kf.add(cmd)
	cmd.Flags().Int32Var(&minCount, "min-observations", config.DefaultMinObservations, "the operator configuration's calibration.minObservations")
	cmd.Flags().BoolVar(&observations, "observations", false, "also list the observations")
	return cmd
}

func newCalibrationResetCommand() *cobra.Command {
	var kf kubeFlags
	var yes bool
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Delete the profile: new searches run uncalibrated until verifications add observations again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !yes {
				return fmt.Errorf("reset deletes every observation of the profile %s: pass --yes to confirm", calibration.ConfigMapName)
			}
			c, err := kf.connect()
			if err != nil {
				return err
			}
			if err := calibration.Reset(cmd.Context(), c.ctrl, c.namespace); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "calibration profile %s/%s deleted\n", c.namespace, calibration.ConfigMapName)
			return nil
		},
	}
	kf.add(cmd)
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the deletion")
	return cmd
}

// writeCalibration prints the profile of namespace as the operator uses it (its own namespace's
// observations: calibration.Profile.Of): its corrections, and its observations when asked.
func writeCalibration(out io.Writer, namespace string, stored calibration.Profile, minCount int, observations bool) {
	p := stored.Of(namespace)
	if foreign := len(stored.Observations) - len(p.Observations); foreign > 0 {
		fmt.Fprintf(out, "calibration profile %s/%s: %d observations from other namespaces are ignored\n", namespace, calibration.ConfigMapName, foreign)
	}
	if len(p.Observations) == 0 {
		fmt.Fprintf(out, "calibration profile %s/%s: no observations\n", namespace, calibration.ConfigMapName)
		return
	}
	fmt.Fprintf(out, "calibration profile %s/%s: %d observations (at most %d kept); corrections are used from %d\n\n",
		namespace, calibration.ConfigMapName, len(p.Observations), calibration.MaxObservations, minCount)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tSYSTEM\tMODEL\tMODE\tPARALLELISM\tMETRIC\tRATIO\tSPREAD\tN\tUSED")
	for _, c := range p.Corrections() {
		k := c.Key
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", k.Backend, k.System, k.Model, k.Mode, k.Parallelism,
			c.Metric, ratio(c.Ratio), ratio(c.Spread), c.Count, yesNo(c.Count >= minCount))
	}
	_ = tw.Flush()
	if !observations {
		return
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURED\tSOURCE\tKEY\tMETRIC\tPREDICTED\tOBSERVED")
	for _, o := range p.Observations {
		for _, m := range calibration.Metrics {
			if pair, ok := o.Metrics[m]; ok {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", o.MeasuredAt.UTC().Format(time.RFC3339), o.Source, o.Key, m,
					strconv.FormatFloat(pair.Predicted, 'g', 6, 64), strconv.FormatFloat(pair.Observed, 'g', 6, 64))
			}
		}
	}
	_ = tw.Flush()
}

func ratio(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
