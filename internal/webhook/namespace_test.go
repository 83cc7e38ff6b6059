package webhook_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// TestSystemNamespacesAreRefused: with watchNamespaces empty (the operator watches every
// namespace), a request in kube-system, kube-public or kube-node-lease is refused at admission,
// naming metadata.namespace, while the same request in an application namespace is admitted.
// Reverted, the request is stored, and the operator would run its search Job and bind its
// search identity in kube-system.
func TestSystemNamespacesAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, ns := range jobcontract.SystemNamespaces {
		obj := fromYAML(t, "sysns", "")
		obj.SetNamespace(ns)
		err := k8s.Create(ctx, obj)
		var status apierrors.APIStatus
		if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 ||
			status.Status().Details.Causes[0].Field != "metadata.namespace" || !strings.Contains(err.Error(), "cluster's own namespaces") {
			t.Errorf("a request in %s: err = %v, want Invalid at metadata.namespace", ns, err)
		}
	}
	obj := fromYAML(t, "appns", "")
	if err := k8s.Create(ctx, obj, client.DryRunAll); err != nil {
		t.Errorf("the same request in %s: %v", obj.GetNamespace(), err)
	}
}
