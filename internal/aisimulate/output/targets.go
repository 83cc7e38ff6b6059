package output

import (
	"fmt"
	"math"
)

// AISimulate's optimization targets (optimization.target).
const (
	TargetThroughput        = "throughput"
	TargetThroughputPerGPU  = "throughput_per_gpu"
	TargetThroughputPerUser = "throughput_per_user"
	TargetGoodput           = "goodput"
	TargetGoodputPerGPU     = "goodput_per_gpu"
	TargetTTFT              = "ttft"
	TargetE2ELatency        = "e2e_latency"
	TargetMinGPUs           = "min_gpus"
	TargetPareto            = "pareto"
)

// Target is one optimization target as AISimulate scores it (sweeper/score.py).
type Target struct {
	// Name is the target's optimization.target.
	Name string
	// Maximized says whether a larger objective is better: false for the latencies and
	// min_gpus, whose score is the negated objective.
	Maximized bool
	// Unit follows an objective in messages ("1,840 tok/s/GPU").
	Unit string
	// Objective is AISimulate's objective_value of the report r of a deployment on gpus: the
	// raw objective, not signed. nil for pareto, which has two (ParetoObjectives).
	Objective func(r Report, gpus GPUs) float64
}

// Targets are the optimization targets in the order AISimulate's schema lists them.
var Targets = []Target{
	{Name: TargetThroughput, Maximized: true, Unit: "tok/s", Objective: reportValue(KeyOutputThroughput)},
	{Name: TargetThroughputPerGPU, Maximized: true, Unit: "tok/s/GPU", Objective: perGPU(KeyOutputThroughput)},
	{Name: TargetThroughputPerUser, Maximized: true, Unit: "tok/s/user", Objective: reportValue(KeyThroughputPerUser)},
	{Name: TargetGoodput, Maximized: true, Unit: "tok/s goodput", Objective: reportValue(KeyGoodputOutputThroughput)},
	{Name: TargetGoodputPerGPU, Maximized: true, Unit: "tok/s/GPU goodput", Objective: perGPU(KeyGoodputOutputThroughput)},
	{Name: TargetTTFT, Unit: "ms TTFT", Objective: qualifiedLatency(KeyMeanTTFT, KeyTTFTSamples)},
	{Name: TargetE2ELatency, Unit: "ms E2E", Objective: qualifiedLatency(KeyMeanE2ELatency, KeyE2ELatencySamples)},
	{Name: TargetMinGPUs, Unit: "GPUs", Objective: func(_ Report, gpus GPUs) float64 { return float64(gpus.Provisioned) }},
	{Name: TargetPareto, Maximized: true},
}

// ParetoObjectives are AISimulate's default Pareto objectives: throughput per GPU against
// throughput per user, the first the headline (a pareto search's score).
var ParetoObjectives = []string{TargetThroughputPerGPU, TargetThroughputPerUser}

// LookupTarget returns the target called name.
func LookupTarget(name string) (Target, bool) {
	for _, t := range Targets {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// TargetNames are the names of Targets, in order.
func TargetNames() []string {
	names := make([]string, len(Targets))
	for i, t := range Targets {
		names[i] = t.Name
	}
	return names
}

// GPUBasis is what the per-GPU targets divide by: the one place the two recommenders score
// differently.
type GPUBasis int

const (
	// TimeAveragedGPUs divides by the report's gpu_hours over its duration (Report.AvgGPUs),
	// as AISimulate does: its Planner may scale a deployment during the replay, and the time
	// average is what the deployment held. A report without gpu_hours or duration scores 0.
	TimeAveragedGPUs GPUBasis = iota
	// ProvisionedGPUs divides by the deployment's GPU count, as the local recommender does: its
	// pools never scale, and it derives gpu_hours from that count (GPUHours), so the count is
	// the exact divisor where gpu_hours over the duration may round.
	ProvisionedGPUs
)

// GPUs is the GPU count of a scored deployment.
type GPUs struct {
	// Provisioned is the deployment's GPU count (a record's used_gpus): min_gpus's objective,
	// and the per-GPU divisor under ProvisionedGPUs.
	Provisioned int
	// Basis is what the per-GPU targets divide by.
	Basis GPUBasis
}

// divisor is what a per-GPU objective of r divides by.
func (g GPUs) divisor(r Report) float64 {
	if g.Basis == ProvisionedGPUs {
		return float64(g.Provisioned)
	}
	return r.AvgGPUs()
}

// Objective is AISimulate's objective_value: the raw objective of the report r of a deployment
// on gpus for the scalar target, not signed. A latency without qualifying samples is +Inf; a
// missing throughput is 0.
func Objective(target string, r Report, gpus GPUs) (float64, error) {
	t, ok := LookupTarget(target)
	switch {
	case !ok:
		return 0, fmt.Errorf("unknown optimization target %q", target)
	case t.Objective == nil:
		return 0, fmt.Errorf("%s is multi-objective and has no scalar objective", target)
	case target == TargetMinGPUs && gpus.Provisioned <= 0:
		return 0, fmt.Errorf("min_gpus needs a positive provisioned GPU count, got %d", gpus.Provisioned)
	}
	return t.Objective(r, gpus), nil
}

// Score is AISimulate's score_report: the objective signed so that higher is better, a
// candidate's score.
func Score(target string, r Report, gpus GPUs) (float64, error) {
	v, err := Objective(target, r, gpus)
	if t, _ := LookupTarget(target); err != nil || t.Maximized {
		return v, err
	}
	return -v, nil
}

func reportValue(key string) func(Report, GPUs) float64 {
	return func(r Report, _ GPUs) float64 { return r[key] }
}

func perGPU(key string) func(Report, GPUs) float64 {
	return func(r Report, gpus GPUs) float64 {
		n := gpus.divisor(r)
		if n <= 0 {
			return 0
		}
		return r[key] / n
	}
}

// qualifiedLatency is a latency only when at least one sample qualified it, else +Inf.
func qualifiedLatency(metric, samples string) func(Report, GPUs) float64 {
	return func(r Report, _ GPUs) float64 {
		n, okN := r[samples]
		v, okV := r[metric]
		if !okN || !okV || !Finite(n) || n <= 0 || !Finite(v) {
			return math.Inf(1)
		}
		return v
	}
}

// Finite says whether v is neither NaN nor infinite.
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
