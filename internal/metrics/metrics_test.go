package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/metrics"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

func run(name string, phase v1beta2.RunPhase, reason string) *v1beta2.DynamoGraphDeploymentRun {
	r := builders.Run("ns", name).Phase(phase)
	if reason != "" {
		r.Completed(metav1.ConditionTrue, reason, "")
	}
	return r.Obj()
}

func TestMetrics(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		run("a", v1beta2.RunPhaseRunning, ""),
		run("b", v1beta2.RunPhaseFailed, v1beta2.ReasonOOMKilled),
		run("c", v1beta2.RunPhaseFailed, v1beta2.ReasonOOMKilled),
	).Build()
	metrics.Register(c)
	metrics.Register(c) // idempotent
	metrics.ObserveCompletion(v1beta2.ReasonSucceeded, 90*time.Second)

	got := map[string]float64{}
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "dgdr_operator_") {
			continue
		}
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.Gauge != nil:
				got[key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				got[key] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				got[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"dgdr_operator_runs,namespace=ns,phase=Failed,reason=OOMKilled": 2,
		"dgdr_operator_runs,namespace=ns,phase=Running,reason=":         1,
		"dgdr_operator_runs_completed_total,reason=Succeeded":           1,
		"dgdr_operator_run_duration_seconds,reason=Succeeded":           1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}
