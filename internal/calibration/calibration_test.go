package calibration_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
)

var (
	t0   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	agg4 = calibration.Key{Backend: "vllm", System: "h200_sxm", Model: "Qwen/Qwen3-8B", Mode: "aggregated", Parallelism: "agg:tp4"}
)

func obs(key calibration.Key, minute int, ttft calibration.Pair) calibration.Observation {
	return calibration.Observation{Key: key, Metrics: map[string]calibration.Pair{calibration.MetricTTFTMs: ttft},
		MeasuredAt: t0.Add(time.Duration(minute) * time.Minute), Source: fmt.Sprintf("ns/r@gen%d", minute)}
}

// TestAddReplacesTheSameSource: a verification recorded twice (a retried status write) counts
// once, with its latest values.
func TestAddReplacesTheSameSource(t *testing.T) {
	var p calibration.Profile
	first := obs(agg4, 1, calibration.Pair{Predicted: 100, Observed: 150})
	again := first
	again.Metrics = map[string]calibration.Pair{calibration.MetricTTFTMs: {Predicted: 100, Observed: 160}}
	other := obs(agg4, 2, calibration.Pair{Predicted: 100, Observed: 90})
	p = p.Add(first, 10).Add(other, 10).Add(again, 10)
	var got []string
	for _, o := range p.Observations {
		got = append(got, fmt.Sprintf("%s %g", o.Source, o.Metrics[calibration.MetricTTFTMs].Observed))
	}
	if diff := cmp.Diff([]string{"ns/r@gen1 160", "ns/r@gen2 90"}, got); diff != "" {
		t.Errorf("observations (-want +got):\n%s", diff)
	}
}

func TestAddCapsOldestFirst(t *testing.T) {
	var p calibration.Profile
	for _, m := range []int{3, 1, 4, 2} {
		p = p.Add(obs(agg4, m, calibration.Pair{Predicted: 1, Observed: float64(m)}), 3)
	}
	var minutes []int
	for _, o := range p.Observations {
		minutes = append(minutes, int(o.MeasuredAt.Sub(t0).Minutes()))
	}
	// 1 was the oldest when the fourth came in; the rest are ordered by time.
	if diff := cmp.Diff([]int{2, 3, 4}, minutes); diff != "" {
		t.Errorf("kept observations (-want +got):\n%s", diff)
	}
}

func TestCorrections(t *testing.T) {
	tp8 := agg4
	tp8.Parallelism = "agg:tp8"
	for _, tc := range []struct {
		name string
		obs  []calibration.Observation
		want []calibration.Correction
	}{
		{"none", nil, []calibration.Correction{}},
		// ratios 1.1, 1.3, 1.2, 2.0: median 1.25; deviations .15 .05 .05 .75: MAD .1
		{"median and MAD of an even count", []calibration.Observation{
			obs(agg4, 1, calibration.Pair{Predicted: 100, Observed: 110}),
			obs(agg4, 2, calibration.Pair{Predicted: 100, Observed: 130}),
			obs(agg4, 3, calibration.Pair{Predicted: 100, Observed: 120}),
			obs(agg4, 4, calibration.Pair{Predicted: 100, Observed: 200}),
		}, []calibration.Correction{{Key: agg4, Metric: "ttftMs", Ratio: 1.25, Spread: 0.1, Count: 4}}},
		{"keys and metrics apart, ordered", []calibration.Observation{
			obs(tp8, 1, calibration.Pair{Predicted: 10, Observed: 5}),
			{Key: agg4, MeasuredAt: t0, Metrics: map[string]calibration.Pair{
				"throughputPerGpu": {Predicted: 1000, Observed: 800}, "itlMs": {Predicted: 10, Observed: 15}, "ttftMs": {Predicted: 50, Observed: 100}}},
		}, []calibration.Correction{
			{Key: agg4, Metric: "ttftMs", Ratio: 2, Count: 1},
			{Key: agg4, Metric: "itlMs", Ratio: 1.5, Count: 1},
			{Key: agg4, Metric: "throughputPerGpu", Ratio: 0.8, Count: 1},
			{Key: tp8, Metric: "ttftMs", Ratio: 0.5, Count: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := calibration.Profile{Observations: tc.obs}.Corrections()
			if diff := cmp.Diff(tc.want, got, approx()); diff != "" {
				t.Errorf("corrections (-want +got):\n%s", diff)
			}
		})
	}
}

func approx() cmp.Option {
	return cmp.Comparer(func(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 })
}

func TestForMinimumCount(t *testing.T) {
	var p calibration.Profile
	for i := range 3 {
		p = p.Add(obs(agg4, i, calibration.Pair{Predicted: 100, Observed: 150}), calibration.MaxObservations)
	}
	other := agg4
	other.Model = "other/model"
	p = p.Add(obs(other, 9, calibration.Pair{Predicted: 1, Observed: 2}), calibration.MaxObservations)
	want := &v1beta2.RunCalibration{MinObservations: 3, Corrections: []v1beta2.CalibrationCorrection{{
		Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp4", Metric: "ttftMs", Ratio: ptr.To(1.5), Spread: ptr.To(0.0), Observations: 3,
		Profile: v1beta2.CalibrationProfileNamespace}}}
	for _, tc := range []struct {
		name          string
		system, model string
		min           int32
		want          *v1beta2.RunCalibration
	}{
		{"enough observations", "h200_sxm", "Qwen/Qwen3-8B", 3, want},
		{"below the minimum count", "h200_sxm", "Qwen/Qwen3-8B", 4, nil},
		{"another system", "h100_sxm", "Qwen/Qwen3-8B", 1, nil},
		{"another model's single observation is below the minimum", "h200_sxm", "other/model", 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, calibration.Profiles{Namespace: p}.For(tc.system, tc.model, tc.min)); diff != "" {
				t.Errorf("run calibration (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForPrefersTheNamespace: per key and metric, a Run uses its namespace's correction when the
// namespace has enough observations, else the cluster profile's; the namespace's observations
// never mix with the cluster's, and too few of them do not hide the cluster's correction.
func TestForPrefersTheNamespace(t *testing.T) {
	tp8 := agg4
	tp8.Parallelism = "agg:tp8"
	profile := func(key calibration.Key, n int, ttft, itl float64) calibration.Profile {
		var p calibration.Profile
		for i := range n {
			o := obs(key, i, calibration.Pair{Predicted: 100, Observed: ttft})
			o.Metrics[calibration.MetricITLMs] = calibration.Pair{Predicted: 10, Observed: itl}
			p = p.Add(o, calibration.MaxObservations)
		}
		return p
	}
	own := profile(agg4, 3, 150, 20)
	// tp8: one observation of the namespace's own, below the minimum.
	own.Observations = append(own.Observations, profile(tp8, 1, 900, 90).Observations...)
	cluster := profile(agg4, 5, 110, 11)
	cluster.Observations = append(cluster.Observations, profile(tp8, 4, 120, 12).Observations...)
	corr := func(par, metric string, ratio float64, n int32, from v1beta2.CalibrationProfile) v1beta2.CalibrationCorrection {
		return v1beta2.CalibrationCorrection{Backend: "vllm", Mode: "aggregated", Parallelism: par, Metric: v1beta2.CalibrationMetric(metric),
			Ratio: ptr.To(ratio), Spread: ptr.To(0.0), Observations: n, Profile: from}
	}
	want := &v1beta2.RunCalibration{MinObservations: 3, Corrections: []v1beta2.CalibrationCorrection{
		corr("agg:tp4", "ttftMs", 1.5, 3, v1beta2.CalibrationProfileNamespace),
		corr("agg:tp4", "itlMs", 2, 3, v1beta2.CalibrationProfileNamespace),
		corr("agg:tp8", "ttftMs", 1.2, 4, v1beta2.CalibrationProfileCluster),
		corr("agg:tp8", "itlMs", 1.2, 4, v1beta2.CalibrationProfileCluster),
	}}
	got := calibration.Profiles{Namespace: own, Cluster: cluster}.For(agg4.System, agg4.Model, 3)
	if diff := cmp.Diff(want, got, approx()); diff != "" {
		t.Errorf("run calibration (-want +got):\n%s", diff)
	}
	if got := (calibration.Profiles{Cluster: cluster}).For(agg4.System, agg4.Model, 6); got != nil {
		t.Errorf("below the minimum in both profiles: %+v", got)
	}
}

// TestProfileOf: a namespace's profile keeps only valid observations whose source is in it: a
// metric no Run's status.calibration can hold, or a negative value, drops the observation.
func TestProfileOf(t *testing.T) {
	p := calibration.Profile{}
	for i, src := range []string{"a/r@gen1", "b/r@gen1", "a/s@gen2", "no-namespace", "a/unknown-metric@gen3", "a/negative@gen4"} {
		o := obs(agg4, i, calibration.Pair{Predicted: 1, Observed: 2})
		o.Source = src
		switch src {
		case "a/unknown-metric@gen3":
			o.Metrics["ttftP90Ms"] = calibration.Pair{Predicted: 1, Observed: 2}
		case "a/negative@gen4":
			o.Metrics[calibration.MetricTTFTMs] = calibration.Pair{Predicted: 1, Observed: -2}
		}
		p.Observations = append(p.Observations, o)
	}
	var got []string
	for _, o := range p.Of("a").Observations {
		got = append(got, o.Source)
	}
	if diff := cmp.Diff([]string{"a/r@gen1", "a/s@gen2"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestApply(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	rc := &v1beta2.RunCalibration{MinObservations: 3, Corrections: []v1beta2.CalibrationCorrection{
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp4", Metric: "throughputPerGpu", Ratio: ptr.To(0.5), Spread: ptr.To(0.1), Observations: 4},
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp4", Metric: "ttftMs", Ratio: ptr.To(2.0), Observations: 3},
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp8", Metric: "itlMs", Ratio: ptr.To(3.0), Observations: 9},
	}}
	predicted := &v1beta2.CandidateMetrics{TTFTMs: f(40), ITLMs: f(5), ThroughputPerGPU: f(1000)}
	for _, tc := range []struct {
		name        string
		parallelism string
		metrics     *v1beta2.CandidateMetrics
		want        *v1beta2.CandidateCalibration
	}{
		{"matching key, metrics in order", "agg:tp4", predicted, &v1beta2.CandidateCalibration{Metrics: []v1beta2.CalibratedMetric{
			{Metric: "ttftMs", Predicted: ptr.To(40.0), Calibrated: ptr.To(80.0), Ratio: ptr.To(2.0), Observations: 3},
			{Metric: "throughputPerGpu", Predicted: ptr.To(1000.0), Calibrated: ptr.To(500.0), Ratio: ptr.To(0.5), Spread: ptr.To(0.1), Observations: 4},
		}}},
		{"another parallelism", "agg:tp2", predicted, nil},
		{"a calibrated value beyond the API's bound is left out", "agg:tp4", &v1beta2.CandidateMetrics{TTFTMs: f(6e8)}, nil},
		{"no predicted value for the corrected metric", "agg:tp8", &v1beta2.CandidateMetrics{TTFTMs: f(1)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := calibration.Apply(rc, "vllm", "aggregated", tc.parallelism, tc.metrics)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("candidate calibration (-want +got):\n%s", diff)
			}
		})
	}
	if got := calibration.Apply(nil, "vllm", "aggregated", "agg:tp4", predicted); got != nil {
		t.Errorf("without a Run calibration: %+v, want nil", got)
	}
}

func TestParallelism(t *testing.T) {
	w := func(tp, pp, dp, ep int) *output.Worker {
		return &output.Worker{Parallelism: output.Parallelism{Tensor: tp, Pipeline: pp, AttentionData: dp, MoEExpert: ep}}
	}
	for _, tc := range []struct {
		name    string
		workers output.Workers
		want    string
	}{
		{"aggregated", output.Workers{Aggregated: w(4, 1, 0, 0)}, "agg:tp4"},
		{"disaggregated, prefill first", output.Workers{Decode: w(4, 0, 0, 0), Prefill: w(2, 0, 0, 0)}, "prefill:tp2,decode:tp4"},
		{"more dimensions above 1", output.Workers{Aggregated: w(2, 2, 4, 8)}, "agg:tp2pp2dp4ep8"},
		{"tensor unset is 1", output.Workers{Aggregated: w(0, 0, 0, 0)}, "agg:tp1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := calibration.Parallelism(&output.PredictionConfig{Engine: output.Engine{Workers: tc.workers}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parallelism (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := calibration.Parallelism(&output.PredictionConfig{}); err == nil {
		t.Error("a prediction without workers has a parallelism")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		obs  calibration.Observation
		want []string
	}{
		{"valid", obs(agg4, 1, calibration.Pair{Predicted: 1, Observed: 2}), nil},
		{"empty", calibration.Observation{}, []string{"key.backend", "key.mode", "key.model", "key.parallelism", "key.system", "measuredAt", "metrics"}},
		{"bad metric and values", calibration.Observation{Key: agg4, MeasuredAt: t0, Metrics: map[string]calibration.Pair{
			"e2eMs": {Predicted: 1, Observed: 1}, "itlMs": {Predicted: 0, Observed: 1}}},
			[]string{"metrics[e2eMs]", "metrics[itlMs].predicted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range tc.obs.Validate() {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("error fields (-want +got):\n%s", diff)
			}
		})
	}
}
