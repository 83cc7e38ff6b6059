package deployment_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
)

// TestUndeclaredKindIsNotCached: a read through the operator's cached client of a kind its cache
// does not declare (here the calibration profile's ConfigMap, which the operator may get but not
// list or watch) fails at once with ErrResourceNotCached. Without ReaderFailOnMissingInformer it
// would start a cluster-wide ConfigMap informer that the operator's RBAC never lets sync, and
// block the caller until its context ends.
func TestUndeclaredKindIsNotCached(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err := mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: calibration.ConfigMapName}, &corev1.ConfigMap{})
	var notCached *cache.ErrResourceNotCached
	if !errors.As(err, &notCached) {
		t.Fatalf("cached Get of a ConfigMap: err = %v after %s, want ErrResourceNotCached", err, time.Since(start))
	}
}
