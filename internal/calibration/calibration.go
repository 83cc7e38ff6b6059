// Package calibration keeps the calibration profiles: observations of deployed candidates (the
// predicted and the observed value of each metric), and the corrections derived from them that
// new searches apply to their predictions.
//
// A namespace is a tenant, and a tenant decides what its own verifications measure (its
// deployment's frontend, its edits of its deployment), so a profile is a namespace's: the
// verifications of a namespace's requests are observations of that namespace's profile only, and
// its Runs use it. The cluster profile is the union of the profiles of the namespaces the
// operator's configuration trusts (calibration.trustedNamespaces); a Run uses it for a key and
// metric its own namespace has too few observations of. No namespace can add to, or evict from,
// another's profile.
//
// The core (Profile, Add, Corrections, Profiles.For, Apply) is pure; store.go is the thin shell
// that keeps each profile in a ConfigMap of its namespace.
package calibration

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// The metrics an observation may carry, named as in the Candidate's status.metrics.
const (
	MetricTTFTMs           = string(v1beta2.CalibrationMetricTTFTMs)
	MetricITLMs            = string(v1beta2.CalibrationMetricITLMs)
	MetricThroughputPerGPU = string(v1beta2.CalibrationMetricThroughputPerGPU)
)

// Metrics are the metric names an observation may carry, in display order.
var Metrics = []string{MetricTTFTMs, MetricITLMs, MetricThroughputPerGPU}

// MaxObservations caps the profile: adding one more drops the oldest (by MeasuredAt), so the
// ConfigMap stays far below the API server's 1 MiB object limit (an observation is at most
// about 1 KiB of JSON) and the profile follows the cluster as it changes.
const MaxObservations = 500

// Key says which deployments an observation is about. Corrections are per key and metric.
type Key struct {
	Backend string `json:"backend"`
	// System is the AISimulate GPU system id (the request's hardware.gpu.sku).
	System string `json:"system"`
	Model  string `json:"model"`
	Mode   string `json:"mode"`
	// Parallelism is the canonical per-role parallelism (Parallelism), e.g.
	// "prefill:tp2,decode:tp4" or "agg:tp4".
	Parallelism string `json:"parallelism"`
}

// String is the key as one line, for display.
func (k Key) String() string {
	return strings.Join([]string{k.Backend, k.System, k.Model, k.Mode, k.Parallelism}, " ")
}

func (k Key) compare(o Key) int {
	return cmp.Or(cmp.Compare(k.System, o.System), cmp.Compare(k.Model, o.Model), cmp.Compare(k.Backend, o.Backend),
		cmp.Compare(k.Mode, o.Mode), cmp.Compare(k.Parallelism, o.Parallelism))
}

// Pair is one metric of a deployment as predicted and as observed.
type Pair struct {
	Predicted float64 `json:"predicted"`
	Observed  float64 `json:"observed"`
}

// Observation is one successful verification of a deployed candidate.
type Observation struct {
	Key Key `json:"key"`
	// Metrics maps a metric name (Metrics) to its predicted and observed value.
	Metrics    map[string]Pair `json:"metrics"`
	MeasuredAt time.Time       `json:"measuredAt"`
	// Source names the verification, "<namespace>/<request>@gen<N>".
	Source string `json:"source"`
}

// Validate checks an observation before it enters the profile; errors name field paths.
func (o *Observation) Validate() field.ErrorList {
	var errs field.ErrorList
	kp := field.NewPath("key")
	for name, v := range map[string]string{"backend": o.Key.Backend, "system": o.Key.System, "model": o.Key.Model,
		"mode": o.Key.Mode, "parallelism": o.Key.Parallelism} {
		if v == "" {
			errs = append(errs, field.Required(kp.Child(name), ""))
		}
	}
	mp := field.NewPath("metrics")
	if len(o.Metrics) == 0 {
		errs = append(errs, field.Required(mp, "at least one of "+strings.Join(Metrics, ", ")))
	}
	for _, name := range slices.Sorted(maps.Keys(o.Metrics)) {
		p := o.Metrics[name]
		if !slices.Contains(Metrics, name) {
			errs = append(errs, field.NotSupported(mp.Key(name), name, Metrics))
			continue
		}
		for sub, v := range map[string]float64{"predicted": p.Predicted, "observed": p.Observed} {
			if !(v > 0) || math.IsInf(v, 1) {
				errs = append(errs, field.Invalid(mp.Key(name).Child(sub), v, "must be a positive finite number"))
			}
		}
	}
	if o.MeasuredAt.IsZero() {
		errs = append(errs, field.Required(field.NewPath("measuredAt"), ""))
	}
	return errs
}

// SourceNamespace is the namespace of the verification an observation comes from (its Source,
// "<namespace>/<request>@gen<N>").
func (o *Observation) SourceNamespace() string {
	ns, _, ok := strings.Cut(o.Source, "/")
	if !ok {
		return ""
	}
	return ns
}

// Profile is a calibration profile: its observations, oldest first.
type Profile struct {
	Observations []Observation `json:"observations"`
}

// Of is the profile with only the valid observations whose source is in namespace: what the
// profile of namespace may hold. Its ConfigMap is writable by the namespace's tenant, who could
// write anything into it: an observation of another namespace, or one whose metric no Run's
// status can hold (which would keep every Run calibrated by it from recording its input).
func (p Profile) Of(namespace string) Profile {
	return Profile{Observations: slices.DeleteFunc(slices.Clone(p.Observations), func(o Observation) bool {
		return o.SourceNamespace() != namespace || len(o.Validate()) > 0
	})}
}

// Profiles are what a Run's corrections come from: its namespace's profile, and the cluster
// profile (the observations of the trusted namespaces' profiles).
type Profiles struct {
	Namespace, Cluster Profile
}

// Add returns the profile with obs added, keeping at most limit observations: the oldest are
// dropped first. An observation of the same Source is replaced. Observations stay ordered by MeasuredAt (ties in the order they were added).
func (p Profile) Add(obs Observation, limit int) Profile {
	all := slices.DeleteFunc(slices.Clone(p.Observations), func(o Observation) bool { return o.Source == obs.Source })
	all = append(all, obs)
	slices.SortStableFunc(all, func(a, b Observation) int { return a.MeasuredAt.Compare(b.MeasuredAt) })
	if len(all) > limit {
		all = all[len(all)-limit:]
	}
	return Profile{Observations: all}
}

// Correction is what the profile says about one metric of one key: observed values are expected
// to be the predicted ones times Ratio.
type Correction struct {
	Key    Key
	Metric string
	// Ratio is the median of observed / predicted.
	Ratio float64
	// Spread is the median absolute deviation of the ratios from Ratio.
	Spread float64
	// Count is the number of observations behind Ratio.
	Count int
}

// Corrections derives the correction of every key and metric the profile has observations of,
// used or not, ordered by key and then metric (in the order of Metrics).
func (p Profile) Corrections() []Correction {
	type km struct {
		key    Key
		metric string
	}
	ratios := map[km][]float64{}
	for _, o := range p.Observations {
		for m, pair := range o.Metrics {
			if pair.Predicted > 0 && pair.Observed > 0 {
				ratios[km{o.Key, m}] = append(ratios[km{o.Key, m}], pair.Observed/pair.Predicted)
			}
		}
	}
	out := make([]Correction, 0, len(ratios))
	for k, rs := range ratios {
		med := median(rs)
		dev := make([]float64, len(rs))
		for i, r := range rs {
			dev[i] = math.Abs(r - med)
		}
		out = append(out, Correction{Key: k.key, Metric: k.metric, Ratio: med, Spread: median(dev), Count: len(rs)})
	}
	slices.SortFunc(out, func(a, b Correction) int {
		return cmp.Or(a.Key.compare(b.Key), cmp.Compare(slices.Index(Metrics, a.Metric), slices.Index(Metrics, b.Metric)))
	})
	return out
}

// median of a non-empty slice (the mean of the middle two for an even length).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// The bounds of the API's calibration figures: a value or ratio outside them is not recorded.
const (
	MinValue = 1e-6
	MaxValue = 1e9
	MaxRatio = 1e6
)

func inRange(v, limit float64) bool { return v >= MinValue && v <= limit }

// MaxRunCorrections is the number of corrections a Run records (its status.calibration is
// bounded); when a system and model have more, those with the most observations are kept.
const MaxRunCorrections = 64

// For returns what a Run of system and model records in status.calibration: per key and metric,
// the correction of the namespace's profile when it has at least minCount observations, else the
// cluster profile's when that has; nil when there are none. A namespace's own observations come
// first: they measure its own deployments.
func (ps Profiles) For(system, model string, minCount int32) *v1beta2.RunCalibration {
	type km struct {
		key    Key
		metric string
	}
	type used struct {
		Correction
		profile v1beta2.CalibrationProfile
	}
	var all []used
	own := map[km]bool{}
	for _, src := range []struct {
		p       Profile
		profile v1beta2.CalibrationProfile
	}{{ps.Namespace, v1beta2.CalibrationProfileNamespace}, {ps.Cluster, v1beta2.CalibrationProfileCluster}} {
		for _, c := range src.p.Corrections() {
			if c.Key.System != system || c.Key.Model != model || c.Count < int(minCount) || !inRange(c.Ratio, MaxRatio) || own[km{c.Key, c.Metric}] {
				continue
			}
			own[km{c.Key, c.Metric}] = true
			all = append(all, used{c, src.profile})
		}
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortStableFunc(all, func(a, b used) int {
		return cmp.Or(a.Key.compare(b.Key), cmp.Compare(slices.Index(Metrics, a.Metric), slices.Index(Metrics, b.Metric)))
	})
	if len(all) > MaxRunCorrections {
		slices.SortStableFunc(all, func(a, b used) int { return cmp.Compare(b.Count, a.Count) })
		all = all[:MaxRunCorrections]
	}
	rc := &v1beta2.RunCalibration{MinObservations: minCount}
	for _, c := range all {
		rc.Corrections = append(rc.Corrections, v1beta2.CalibrationCorrection{
			Backend: c.Key.Backend, Mode: c.Key.Mode, Parallelism: c.Key.Parallelism,
			Metric: v1beta2.CalibrationMetric(c.Metric), Ratio: ptr.To(c.Ratio), Spread: ptr.To(c.Spread), Observations: int32(c.Count),
			Profile: c.profile,
		})
	}
	return rc
}

// Apply returns a candidate's calibrated prediction: each metric of predicted that rc has a
// correction for (same backend, mode and parallelism), or nil when none applies.
func Apply(rc *v1beta2.RunCalibration, backend, mode, parallelism string, predicted *v1beta2.CandidateMetrics) *v1beta2.CandidateCalibration {
	if rc == nil || predicted == nil {
		return nil
	}
	values := map[v1beta2.CalibrationMetric]*float64{
		v1beta2.CalibrationMetricTTFTMs:           predicted.TTFTMs,
		v1beta2.CalibrationMetricITLMs:            predicted.ITLMs,
		v1beta2.CalibrationMetricThroughputPerGPU: predicted.ThroughputPerGPU,
	}
	var out []v1beta2.CalibratedMetric
	for _, c := range rc.Corrections {
		if c.Backend != backend || c.Mode != mode || c.Parallelism != parallelism {
			continue
		}
		v := values[c.Metric]
		if v == nil || c.Ratio == nil || slices.ContainsFunc(out, func(m v1beta2.CalibratedMetric) bool { return m.Metric == c.Metric }) {
			continue
		}
		calibrated := *v * *c.Ratio
		if !inRange(*v, MaxValue) || !inRange(calibrated, MaxValue) {
			continue
		}
		out = append(out, v1beta2.CalibratedMetric{Metric: c.Metric, Predicted: ptr.To(*v), Calibrated: ptr.To(calibrated),
			Ratio: c.Ratio, Spread: c.Spread, Observations: c.Observations})
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, func(a, b v1beta2.CalibratedMetric) int {
		return cmp.Compare(slices.Index(Metrics, string(a.Metric)), slices.Index(Metrics, string(b.Metric)))
	})
	return &v1beta2.CandidateCalibration{Metrics: out}
}

// Parallelism is the canonical per-role parallelism of a prediction: "<role>:tp<N>" per worker
// role (agg, or prefill then decode), joined by ",", with pp, dp (attention data), moetp and ep
// appended when above 1, e.g. "prefill:tp2,decode:tp4" or "agg:tp4pp2". Replicas are left out:
// they scale the deployment, not what one worker does.
func Parallelism(p *output.PredictionConfig) (string, error) {
	w := p.Engine.Workers
	var parts []string
	for _, r := range []struct {
		name string
		w    *output.Worker
	}{{"agg", w.Aggregated}, {"prefill", w.Prefill}, {"decode", w.Decode}} {
		if r.w == nil {
			continue
		}
		par := r.w.Parallelism
		var b strings.Builder
		fmt.Fprintf(&b, "%s:tp%d", r.name, max(par.Tensor, 1))
		for _, d := range []struct {
			tag string
			n   int
		}{{"pp", par.Pipeline}, {"dp", par.AttentionData}, {"moetp", par.MoETensor}, {"ep", par.MoEExpert}} {
			if d.n > 1 {
				fmt.Fprintf(&b, "%s%d", d.tag, d.n)
			}
		}
		parts = append(parts, b.String())
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("engine.workers has no aggregated, prefill or decode worker")
	}
	return strings.Join(parts, ","), nil
}

// CandidateKey is the key of a Candidate of a request with spec: the one its verification records
// observations under and the reporter looks corrections up by (PredictionKey of its parameters).
func CandidateKey(spec *v1beta2.DynamoGraphDeploymentRequestSpec, c *v1beta2.DynamoGraphDeploymentCandidate) (Key, error) {
	var p output.PredictionConfig
	if err := json.Unmarshal(c.Spec.Parameters.Raw, &p); err != nil {
		return Key{}, fmt.Errorf("spec.parameters of Candidate %s: %w", c.Name, err)
	}
	k, err := PredictionKey(spec, c.Spec.Backend, c.Spec.Mode, &p)
	if err != nil {
		return Key{}, fmt.Errorf("spec.parameters of Candidate %s: %w", c.Name, err)
	}
	return k, nil
}

// PredictionKey is the key of a deployment of backend and mode whose prediction configuration is
// p, of a request with spec.
func PredictionKey(spec *v1beta2.DynamoGraphDeploymentRequestSpec, backend v1beta2.Backend, mode v1beta2.DeploymentMode, p *output.PredictionConfig) (Key, error) {
	par, err := Parallelism(p)
	if err != nil {
		return Key{}, err
	}
	k := Key{Backend: string(backend), Model: spec.Model.Name, Mode: string(mode), Parallelism: par}
	if h := spec.Hardware; h != nil && h.GPU != nil {
		k.System = h.GPU.SKU
	}
	return k, nil
}
