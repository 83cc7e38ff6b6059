package calibration_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
			o.Source = fmt.Sprintf("ns/r%d@gen1", i)
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
	want := []string{"ns/r0@gen1", "ns/r1@gen1", "ns/r2@gen1", "ns/r3@gen1", "ns/r4@gen1", "ns/r5@gen1", "ns/r6@gen1", "ns/r7@gen1"}
	if diff := cmp.Diff(want, sources); diff != "" {
		t.Errorf("observations in the profile, by time (-want +got):\n%s", diff)
	}
}

func TestRecordRefusesInvalidAndResetDeletes(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	err := calibration.Record(ctx, env.Client, env.Client, ns, calibration.Observation{Key: agg4, Source: "ns/r@gen1"})
	if err == nil || !contains(err.Error(), "metrics") || !contains(err.Error(), "measuredAt") {
		t.Errorf("invalid observation: error %v, want one naming metrics and measuredAt", err)
	}
	if err := calibration.Record(ctx, env.Client, env.Client, ns, obs(agg4, 1, calibration.Pair{Predicted: 1, Observed: 2})); err != nil {
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
