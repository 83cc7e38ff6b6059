package calibration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

var env *testenv.Env

// TestMain starts one real API server for the store's tests.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	return m.Run()
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "calibration-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func TestRecordConcurrently(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			o := obs(agg4, i, calibration.Pair{Predicted: 100, Observed: float64(100 + i)})
			o.Source = fmt.Sprintf("%s/r%d@gen1", ns, i)
			errs[i] = calibration.Record(ctx, env.Client, env.Client, ns, o)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Record %d: %v", i, err)
		}
	}
	p, err := calibration.Load(ctx, env.Client, ns)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, o := range p.Observations {
		sources = append(sources, o.Source)
	}
	var want []string
	for i := range writers {
		want = append(want, fmt.Sprintf("%s/r%d@gen1", ns, i))
	}
	if diff := cmp.Diff(want, sources); diff != "" {
		t.Errorf("observations in the profile, by time (-want +got):\n%s", diff)
	}
}

func TestRecordRefusesInvalidAndResetDeletes(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	err := calibration.Record(ctx, env.Client, env.Client, ns, calibration.Observation{Key: agg4, Source: ns + "/r@gen1"})
	if err == nil || !contains(err.Error(), "metrics") || !contains(err.Error(), "measuredAt") {
		t.Errorf("invalid observation: error %v, want one naming metrics and measuredAt", err)
	}
	if err := calibration.Record(ctx, env.Client, env.Client, ns, inNamespace(ns, obs(agg4, 1, calibration.Pair{Predicted: 1, Observed: 2}))); err != nil {
		t.Fatal(err)
	}
	if err := calibration.Reset(ctx, env.Client, ns); err != nil {
		t.Fatal(err)
	}
	p, err := calibration.Load(ctx, env.Client, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Observations) != 0 {
		t.Errorf("after Reset the profile has %d observations", len(p.Observations))
	}
	if err := calibration.Reset(ctx, env.Client, ns); err != nil {
		t.Errorf("resetting a missing profile: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// inNamespace is o as an observation of a verification in ns.
func inNamespace(ns string, o calibration.Observation) calibration.Observation {
	_, rest, _ := strings.Cut(o.Source, "/")
	o.Source = ns + "/" + rest
	return o
}

// TestProfilesAreTheNamespaces: Record keeps a namespace's observations in its own profile, with
// the operator's labels (which the fence requires), refuses another namespace's, drops what a
// tenant wrote in under another namespace's name and replaces a profile that is not JSON.
// LoadFor reads the Run's namespace's profile and the trusted namespaces' as the cluster
// profile, each only with its own observations; a profile that is not JSON is left out, named.
func TestProfilesAreTheNamespaces(t *testing.T) {
	ctx := context.Background()
	a, b, trusted := namespace(t), namespace(t), namespace(t)
	if err := calibration.Record(ctx, env.Client, env.Client, a, inNamespace(b, obs(agg4, 1, calibration.Pair{Predicted: 1, Observed: 2}))); err == nil ||
		!contains(err.Error(), "holds only its own namespace's observations") {
		t.Errorf("recording b's observation in a's profile: %v", err)
	}
	// The tenant of a writes its profile itself, claiming an observation of the trusted namespace.
	forged := inNamespace(trusted, obs(agg4, 2, calibration.Pair{Predicted: 1, Observed: 50}))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: calibration.ConfigMapName},
		Data: map[string]string{calibration.DataKey: mustJSON(t, calibration.Profile{Observations: []calibration.Observation{forged}})}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := calibration.Record(ctx, env.Client, env.Client, trusted, inNamespace(trusted, obs(agg4, 3, calibration.Pair{Predicted: 1, Observed: 1.5}))); err != nil {
		t.Fatal(err)
	}
	ps, err := calibration.LoadFor(ctx, env.Client, a, []string{trusted, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Namespace.Observations) != 0 || len(ps.Cluster.Observations) != 1 || ps.Cluster.Observations[0].Source != trusted+"/r@gen3" {
		t.Errorf("profiles for a Run in a: %+v", ps)
	}
	if err := calibration.Record(ctx, env.Client, env.Client, a, inNamespace(a, obs(agg4, 4, calibration.Pair{Predicted: 1, Observed: 3}))); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(calibration.Labels, cm.Labels); diff != "" {
		t.Errorf("labels of the profile the tenant created, after the operator's write (-want +got):\n%s", diff)
	}
	p, err := calibration.Load(ctx, env.Client, a)
	if err != nil || len(p.Observations) != 1 || p.Observations[0].Source != a+"/r@gen4" {
		t.Errorf("a's profile after its own observation: %+v, %v; want only that one", p, err)
	}

	cm.Data[calibration.DataKey] = "not json"
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	ps, err = calibration.LoadFor(ctx, env.Client, trusted, []string{a})
	if !errors.Is(err, calibration.ErrInvalidProfile) || len(ps.Namespace.Observations) != 1 {
		t.Errorf("a damaged trusted profile: %+v, %v; want the others and ErrInvalidProfile", ps, err)
	}
	if err := calibration.Record(ctx, env.Client, env.Client, a, inNamespace(a, obs(agg4, 5, calibration.Pair{Predicted: 1, Observed: 3}))); err != nil {
		t.Fatalf("recording over a damaged profile: %v", err)
	}
	if p, err := calibration.Load(ctx, env.Client, a); err != nil || len(p.Observations) != 1 {
		t.Errorf("the damaged profile replaced: %+v, %v", p, err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
