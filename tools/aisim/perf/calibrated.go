package perf

import (
	"math"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
)

// Calibration holds every fitted constant of the latency model. They are few on purpose and
// each one is named after what it means physically; see docs/aisim.md ("Calibration") for
// the data they were fitted on (the fit part of tools/aisim/calibration's measured H100 rows)
// and the out-of-sample error that results.
type Calibration struct {
	// MemEfficiency is the fraction of HBM bandwidth streaming kernels reach
	// (AISimulate's mem_bw_empirical_scaling_factor).
	MemEfficiency float64
	// AttnEfficiency is the fraction of the tensor-core peak prefill attention reaches.
	AttnEfficiency float64
	// CommEfficiency is the fraction of the per-direction link bandwidth a ring all-reduce
	// reaches (NCCL bus bandwidth / link bandwidth).
	CommEfficiency float64
	// AllReduceLatency is the fixed cost of one tensor-parallel all-reduce (launch and
	// synchronization across the ranks), seconds; two run per layer and step.
	AllReduceLatency float64
	// FP8GEMMScale multiplies the backends' GEMMEfficiency for FP8 linear layers (FP8 kernels reach a
	// smaller fraction of their doubled peak than BF16 kernels of theirs).
	FP8GEMMScale float64
	// FP8StreamBytes is the effective HBM traffic per FP8 weight in memory-bound (decode)
	// steps, in bytes: 1 would be the ideal; scales and the per-layer activation
	// quantization kernels make FP8 decode slower than half of BF16's.
	FP8StreamBytes float64
	// Backends are the per-backend runtime constants.
	Backends map[string]BackendCalibration
}

// BackendCalibration is what differs between serving runtimes.
type BackendCalibration struct {
	// StepOverhead is the host time per forward step (scheduler, sampling, launch), seconds.
	StepOverhead float64
	// GEMMEfficiency is the fraction of the tensor-core peak the backend's linear layers reach
	// in compute-bound (prefill) steps.
	GEMMEfficiency float64
	// PrefillFirstUpTo: while a worker holds at most this many requests, prompt chunks run in
	// steps of their own and decodes pause while a prompt can progress; above it, prompts and
	// decodes share steps. SGLang's default scheduler (no --enable-mixed-chunk) always works
	// this way (math.MaxInt, not fitted). For TRT-LLM it is fitted: at low concurrency its
	// measured TTFTs are those of requests re-synchronized into waves whose prompts all run
	// before the decodes resume (a wave of 8 × 4096-token prompts: 2.5 context steps on
	// average, within 10% of the measured TTFT), at higher concurrency those of mixed steps.
	// vLLM (chunked prefill, decodes first) never pauses decodes (0).
	PrefillFirstUpTo int
}

// PrefillFirstUpTo is the backend's BackendCalibration.PrefillFirstUpTo.
func PrefillFirstUpTo(backend string) int { return Calibrated.Backends[backend].PrefillFirstUpTo }

// Calibrated is the model's calibration: the values TestFit found on the fit rows (see
// docs/aisim.md, "Accuracy against measured runs"). Tests may swap it to fit; nothing else
// writes it.
var Calibrated = Calibration{
	MemEfficiency:    0.82,
	AttnEfficiency:   0.15,
	CommEfficiency:   0.35,
	AllReduceLatency: 17e-6,
	FP8GEMMScale:     1.18,
	FP8StreamBytes:   1.28,
	Backends: map[string]BackendCalibration{
		input.BackendVLLM:   {StepOverhead: 0.59e-3, GEMMEfficiency: 0.60},
		input.BackendSGLang: {StepOverhead: 0.045e-3, GEMMEfficiency: 0.71, PrefillFirstUpTo: math.MaxInt},
		input.BackendTRTLLM: {StepOverhead: 0.55e-3, GEMMEfficiency: 0.63, PrefillFirstUpTo: 8},
	},
}
