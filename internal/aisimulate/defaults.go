package aisimulate

import "github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"

// AISimulate's own defaults (contract §6, §7), used when the effective input leaves a field out.
// They are facts about the bundled AISimulate release, spelled once here: the lowering, the cap
// check, the effective-input rules and the local recommender all read them from this file.
const (
	// DefaultMaxTrials is optimizer.max_trials when absent.
	DefaultMaxTrials = 320
	// DefaultParallelism is optimizer.parallelism when absent.
	DefaultParallelism = 16
	// DefaultCandidateTimeoutSeconds is optimizer.candidate_timeout_seconds when absent.
	DefaultCandidateTimeoutSeconds = 600
	// DefaultSeed is optimizer.seed when absent.
	DefaultSeed = 42
	// DefaultAlgorithm is optimizer.algorithm when absent.
	DefaultAlgorithm = "bayesian"
	// DefaultMaxCandidateGPUs is optimization.constraints.max_candidate_gpus when absent.
	DefaultMaxCandidateGPUs = 32
	// DefaultTarget is optimization.target when absent.
	DefaultTarget = output.TargetThroughput
)

// DefaultModes is recommend's engine.mode domain when absent: one search branch per mode.
var DefaultModes = []string{"aggregated", "disaggregated"}

// DefaultBackends is recommend's engine.backend domain when absent (trtllm only when chosen).
var DefaultBackends = []string{output.BackendVLLM, output.BackendSGLang}

// AISimulate's traffic defaults (contract §3): an omitted traffic section is replaced wholesale
// by synthetic DefaultInputTokens/DefaultOutputTokens at concurrency DefaultConcurrency, stopped
// after DefaultTrafficRequests requests; a poisson load without a seed uses DefaultLoadSeed; a
// synthetic-session source without session.turns has DefaultSessionTurns.
const (
	DefaultInputTokens     = 1024
	DefaultOutputTokens    = 128
	DefaultConcurrency     = 10
	DefaultTrafficRequests = 100
	DefaultLoadSeed        = 42
	DefaultSessionTurns    = 4
)
