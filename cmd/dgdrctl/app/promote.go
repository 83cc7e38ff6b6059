package app

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	dgdpromote "github.com/dgdr-operator/dgdr-operator/internal/promote"
)

type promoteOptions struct {
	candidate string
	name      string
	dryRun    bool
	force     bool
}

func newPromoteCommand() *cobra.Command {
	var kf kubeFlags
	o := &promoteOptions{}
	cmd := &cobra.Command{
		Use:   "promote DGDC --name NAME",
		Short: "Create a DynamoGraphDeployment from a published candidate",
		Long: `promote creates the DynamoGraphDeployment (nvidia.com/v1beta1) rendered in the candidate's
spec.graphDeployment, named NAME, in the candidate's namespace. It refuses a candidate whose Run
did not succeed (Completed=True with reason Succeeded) unless --force, and always a candidate that
is not deployable (its Deployable condition False, reason NotRenderable: the renderer cannot lower
a setting its search predicted). It never modifies or replaces an existing DynamoGraphDeployment. --dry-run prints the object as YAML instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.candidate = args[0]
			c, err := kf.connect()
			if err != nil {
				return err
			}
			return promote(cmd.Context(), c, o, cmd.OutOrStdout())
		},
	}
	kf.add(cmd)
	cmd.Flags().StringVar(&o.name, "name", "", "name of the DynamoGraphDeployment to create")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the DynamoGraphDeployment as YAML instead of creating it")
	cmd.Flags().BoolVar(&o.force, "force", false, "promote even if the candidate's Run did not succeed")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

func promote(ctx context.Context, c *clients, o *promoteOptions, out io.Writer) error {
	var cand v1beta2.DynamoGraphDeploymentCandidate
	if err := c.ctrl.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: o.candidate}, &cand); err != nil {
		return fmt.Errorf("getting candidate: %w", err)
	}
	if err := checkRunSucceeded(ctx, c, &cand); err != nil && !o.force {
		return fmt.Errorf("%w (use --force to promote anyway)", err)
	}
	obj, err := dgdpromote.Render(&cand, o.name, nil)
	if err != nil {
		return err
	}
	if o.dryRun {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	}
	// The same code path as the operator's autoApply, without an owner: create only.
	if _, err := dgdpromote.Apply(ctx, c.ctrl, obj, nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "dynamographdeployment.nvidia.com/%s created from %s\n", obj.GetName(), cand.Name)
	return nil
}

// checkRunSucceeded requires the candidate's Run to have succeeded (promote.CheckRunSucceeded,
// shared with dgdrctl ui).
func checkRunSucceeded(ctx context.Context, c *clients, cand *v1beta2.DynamoGraphDeploymentCandidate) error {
	return dgdpromote.CheckRunSucceeded(ctx, c.ctrl, cand)
}
