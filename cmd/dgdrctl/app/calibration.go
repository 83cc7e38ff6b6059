package app

import (
	"fmt"
	"io"
	"strconv"
	"strings"
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
		Long: `calibration works with a namespace's calibration profile (-n, else the kubeconfig context's
namespace), the ConfigMap ` + calibration.ConfigMapName + ` of that namespace: the observations of its
verified deployments and the corrections its new searches apply to their predictions
(docs/design/candidates.md, "Calibration"). The cluster profile is the profiles of the
namespaces the operator configuration trusts (calibration.trustedNamespaces): show each of them.
show counts a correction as used from the operator configuration's calibration.minObservations,
read from the chart's ConfigMap labelled app.kubernetes.io/name=dgdr-operator in the cluster
(--operator-namespace names the operator's namespace when several operators are installed or
ConfigMaps cannot be listed in every namespace; --min-observations overrides it).`,
	}
	cmd.AddCommand(newCalibrationShowCommand(), newCalibrationResetCommand())
	return cmd
}

// calibrationFlags locate the profile: -n (the kube flags' namespace), --operator-namespace and,
// for show, --min-observations.
type calibrationFlags struct {
	kf                kubeFlags
	operatorNamespace string
	minObservations   int32
}

func (f *calibrationFlags) add(cmd *cobra.Command) {
	f.kf.add(cmd)
	cmd.Flags().StringVar(&f.operatorNamespace, "operator-namespace", "", "the operator's namespace, where its configuration is (default: found by its label in any namespace you may list ConfigMaps of, else "+DefaultOperatorNamespace+")")
}

// profile is the calibration profile a command works with.
type profile struct {
	c         *clients
	namespace string
	// minObservations and source: calibration.minObservations and the configuration it was read
	// from ("" when it came from the flag or its default).
	minObservations int32
	source          string
	// trusted is the configuration's calibration.trustedNamespaces.
	trusted []string
}

// locate connects and finds the profile: the namespace's (-n, else the kubeconfig context's);
// --min-observations when given, else the operator configuration's calibration.minObservations
// (show only). When the configuration cannot be read, the flag's value (or its default) is used,
// with a warning.
func (f *calibrationFlags) locate(cmd *cobra.Command) (*profile, error) {
	c, err := f.kf.connect()
	if err != nil {
		return nil, err
	}
	p := &profile{c: c, namespace: c.namespace, minObservations: f.minObservations}
	if cmd.Flags().Changed("min-observations") || cmd.Flags().Lookup("min-observations") == nil {
		return p, nil
	}
	oc, err := findOperatorCalibration(cmd.Context(), c.ctrl, f.operatorNamespace)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v; corrections are taken as used from %d observations (--min-observations)\n", err, p.minObservations)
		return p, nil
	}
	p.minObservations, p.source, p.trusted = oc.MinObservations, oc.Source, oc.TrustedNamespaces
	return p, nil
}

func newCalibrationShowCommand() *cobra.Command {
	f := &calibrationFlags{}
	var observations bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the profile's corrections per key and metric",
		Long: `show prints one line per key (backend, GPU system, model, mode, parallelism) and metric: the
median ratio observed/predicted, its spread (median absolute deviation), the number of
observations, and whether searches use it (at least the operator configuration's
calibration.minObservations, or --min-observations). --observations also lists the observations,
oldest first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.minObservations < 1 {
				return fmt.Errorf("--min-observations must be at least 1")
			}
			p, err := f.locate(cmd)
			if err != nil {
				return err
			}
			prof, err := calibration.Load(cmd.Context(), p.c.ctrl, p.namespace)
			if err != nil {
				return err
			}
			writeCalibration(cmd.OutOrStdout(), p, prof, observations)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().Int32Var(&f.minObservations, "min-observations", config.DefaultMinObservations, "observations a correction needs before searches use it (default: the operator configuration's calibration.minObservations)")
	cmd.Flags().BoolVar(&observations, "observations", false, "also list the observations")
	return cmd
}

func newCalibrationResetCommand() *cobra.Command {
	f := &calibrationFlags{}
	var yes bool
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Delete the profile: new searches run uncalibrated until verifications add observations again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !yes {
				return fmt.Errorf("reset deletes every observation of the profile %s: pass --yes to confirm", calibration.ConfigMapName)
			}
			p, err := f.locate(cmd)
			if err != nil {
				return err
			}
			if err := calibration.Reset(cmd.Context(), p.c.ctrl, p.namespace); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "calibration profile %s/%s deleted\n", p.namespace, calibration.ConfigMapName)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the deletion")
	return cmd
}

// writeCalibration prints the profile found at as the operator uses it (its own namespace's
// observations: calibration.Profile.Of): its corrections, and its observations when asked.
func writeCalibration(out io.Writer, at *profile, stored calibration.Profile, observations bool) {
	namespace, minCount := at.namespace, int(at.minObservations)
	p := stored.Of(namespace)
	if foreign := len(stored.Observations) - len(p.Observations); foreign > 0 {
		fmt.Fprintf(out, "calibration profile %s/%s: %d observations of another namespace, or not valid, are ignored\n", namespace, calibration.ConfigMapName, foreign)
	}
	if len(p.Observations) == 0 {
		fmt.Fprintf(out, "calibration profile %s/%s: no observations\n", namespace, calibration.ConfigMapName)
		return
	}
	from := ""
	if at.source != "" {
		from = " (calibration.minObservations of " + at.source + ")"
	}
	fmt.Fprintf(out, "calibration profile %s/%s: %d observations (at most %d kept); corrections are used from %d%s\n",
		namespace, calibration.ConfigMapName, len(p.Observations), calibration.MaxObservations, minCount, from)
	if len(at.trusted) > 0 {
		fmt.Fprintf(out, "the cluster profile, used for keys this one has too few observations of, is the profiles of %s (calibration.trustedNamespaces)\n", strings.Join(at.trusted, ", "))
	}
	fmt.Fprintln(out)
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
