package input

import (
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// The evaluation, optimization and optimizer sections: what a candidate is scored by and how many
// are tried.

func decodeEvaluation(root *object) (Evaluation, error) {
	var e Evaluation
	if !root.has("evaluation") {
		return e, nil
	}
	eo, err := newObject("evaluation", root.get("evaluation"), []string{"sla"}, nil)
	if err != nil || !eo.has("sla") {
		return e, err
	}
	so, err := newObject("evaluation.sla", eo.get("sla"), []string{"ttft_ms", "itl_ms", "e2e_ms"}, nil)
	if err != nil {
		return e, err
	}
	if e.SLA.TTFTms, err = so.positive("ttft_ms", 0); err != nil {
		return e, err
	}
	if e.SLA.ITLms, err = so.positive("itl_ms", 0); err != nil {
		return e, err
	}
	if e.SLA.E2Ems, err = so.positive("e2e_ms", 0); err != nil {
		return e, err
	}
	if e.SLA.E2Ems > 0 && (e.SLA.TTFTms > 0 || e.SLA.ITLms > 0) {
		return e, errf("evaluation.sla", "e2e_ms is mutually exclusive with ttft_ms and itl_ms")
	}
	return e, nil
}

func decodeOptimization(root *object, sla SLA) (Optimization, error) {
	o := Optimization{Target: aisimulate.DefaultTarget, MaxGPUs: aisimulate.DefaultMaxCandidateGPUs}
	x := root.get("optimization")
	if x == nil {
		// `optimization:` with a null value is the same as {}.
		return o, nil
	}
	oo, err := newObject("optimization", x, []string{"target", "hardware", "strict_sla", "constraints"}, nil)
	if err != nil {
		return o, err
	}
	if o.Target, err = oo.enum("target", aisimulate.DefaultTarget, output.TargetNames()...); err != nil {
		return o, err
	}
	if o.Hardware, err = oo.str("hardware", ""); err != nil {
		return o, err
	}
	if o.Hardware == "auto" {
		return o, errf(oo.p("hardware"), "must be a concrete hardware id, not auto")
	}
	if o.StrictSLA, err = oo.boolean("strict_sla", false); err != nil {
		return o, err
	}
	if oo.has("constraints") {
		co, err := newObject("optimization.constraints", oo.get("constraints"),
			[]string{"min_candidate_gpus", "max_candidate_gpus", "min_goodput_rps"}, nil)
		if err != nil {
			return o, err
		}
		if o.MinGPUs, err = co.integer("min_candidate_gpus", 0, 1); err != nil {
			return o, err
		}
		if o.MaxGPUs, err = co.integer("max_candidate_gpus", aisimulate.DefaultMaxCandidateGPUs, 1); err != nil {
			return o, err
		}
		if o.MinGoodputRPS, err = co.positive("min_goodput_rps", 0); err != nil {
			return o, err
		}
		if o.MinGoodputRPS > 0 && o.Target != output.TargetMinGPUs {
			return o, errf(co.p("min_goodput_rps"), "applies only to target min_gpus")
		}
		if o.MinGPUs > o.MaxGPUs {
			return o, errf(co.p("min_candidate_gpus"), "must be <= max_candidate_gpus (%d)", o.MaxGPUs)
		}
	}
	if o.StrictSLA && !sla.Any() {
		return o, errf(oo.p("strict_sla"), "requires at least one evaluation.sla bound")
	}
	switch o.Target {
	case output.TargetGoodput, output.TargetGoodputPerGPU, output.TargetMinGPUs:
		if !sla.Any() {
			return o, errf(oo.p("target"), "%s requires at least one evaluation.sla bound", o.Target)
		}
	}
	return o, nil
}

func decodeOptimizer(root *object) (Optimizer, error) {
	o := Optimizer{Algorithm: aisimulate.DefaultAlgorithm, MaxTrials: aisimulate.DefaultMaxTrials, Parallelism: aisimulate.DefaultParallelism,
		CandidateTimeoutSeconds: aisimulate.DefaultCandidateTimeoutSeconds, Seed: aisimulate.DefaultSeed}
	if !root.has("optimizer") {
		return o, nil
	}
	oo, err := newObject("optimizer", root.get("optimizer"),
		[]string{"algorithm", "max_trials", "parallelism", "candidate_timeout_seconds", "seed"}, nil)
	if err != nil {
		return o, err
	}
	if o.Algorithm, err = oo.enum("algorithm", aisimulate.DefaultAlgorithm, "bayesian", "random"); err != nil {
		return o, err
	}
	if o.MaxTrials, err = oo.integer("max_trials", aisimulate.DefaultMaxTrials, 1); err != nil {
		return o, err
	}
	if o.Parallelism, err = oo.integer("parallelism", aisimulate.DefaultParallelism, 1); err != nil {
		return o, err
	}
	if o.CandidateTimeoutSeconds, err = oo.positive("candidate_timeout_seconds", aisimulate.DefaultCandidateTimeoutSeconds); err != nil {
		return o, err
	}
	seed, err := oo.integer("seed", aisimulate.DefaultSeed, 0)
	o.Seed = int64(seed)
	return o, err
}
