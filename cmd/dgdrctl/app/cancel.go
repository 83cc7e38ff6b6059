package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

func newCancelCommand() *cobra.Command {
	var kf kubeFlags
	cmd := &cobra.Command{
		Use:   "cancel DGDR|RUN",
		Short: "Stop the active search of a request (or a Run), keeping what was already published",
		Long: `cancel sets the annotation ` + v1beta2.AnnotationCancel + `: "true" on the named
DynamoGraphDeploymentRequest or, when no request has that name, on the named
DynamoGraphDeploymentRun. The operator stops the search Job and ends the Run Completed/Cancelled;
Candidates already published are kept.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kf.connect()
			if err != nil {
				return err
			}
			kind, err := cancel(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s/%s: cancellation requested\n", kind, c.namespace, args[0])
			return nil
		},
	}
	kf.add(cmd)
	return cmd
}

// cancel annotates the request named name, or else the Run, and returns which kind it was.
func cancel(ctx context.Context, c *clients, name string) (string, error) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1beta2.AnnotationCancel: "true"}}})
	targets := []struct {
		kind string
		obj  client.Object
	}{
		{"dynamographdeploymentrequest", &v1beta2.DynamoGraphDeploymentRequest{}},
		{"dynamographdeploymentrun", &v1beta2.DynamoGraphDeploymentRun{}},
	}
	req := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := c.ctrl.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: name}, req); err == nil && req.IsV1Beta1Native() {
		return "", fmt.Errorf("dynamographdeploymentrequest %s is a nvidia.com/v1beta1 request owned by the Dynamo operator: dgdr-operator does not search it, so there is nothing to cancel", name)
	}
	for _, t := range targets {
		t.obj.SetNamespace(c.namespace)
		t.obj.SetName(name)
		err := c.ctrl.Patch(ctx, t.obj, client.RawPatch(types.MergePatchType, patch))
		if err == nil {
			return t.kind, nil
		}
		if !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("%s %s: %w", t.kind, name, err)
		}
	}
	return "", fmt.Errorf("no DynamoGraphDeploymentRequest or DynamoGraphDeploymentRun named %q in namespace %s", name, c.namespace)
}
