package perf

import (
	"math"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Calibration holds every fitted constant of the latency model. They are few on purpose and
// each one is named after what it means physically; see docs/design/aisim.md ("Calibration") for
// the data they were fitted on (the fit part of tools/aisim/calibration's measured H100 rows)
// and the out-of-sample error that results.
type Calibration struct {
	// MemEfficiency is the fraction of HBM bandwidth streaming kernels reach
	// (AISimulate's mem_bw_empirical_scaling_factor).
	MemEfficiency float64
	// AttnEfficiency is the fraction of the tensor-core peak prefill attention reaches.
	AttnEfficiency float64
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
	// CommEfficiency is the fraction of the per-direction link bandwidth the backend's
	// tensor-parallel all-reduce reaches (bus bandwidth / link bandwidth). It is per backend
	// because each runtime brings its own all-reduce (custom kernels, NCCL, TRT-LLM's fused
	// AllReduce): SGLang's measured prefill time shrinks almost linearly from TP 2 to TP 8, so
	// one shared efficiency (0.35) over-predicted its TP 4 / TP 8 TTFTs by +16% / +22% on the
	// fit rows, while TRT-LLM's and vLLM's Qwen3 rows wanted TP that expensive. The values are
	// effective ones: they absorb the other costs that grow with TP.
	CommEfficiency float64
	// PrefillFirstUpTo: while at most this many requests are running on a worker (admitted:
	// prefilling or decoding; queued requests do not count), prompt chunks run in steps of
	// their own and decodes pause while a prompt can progress; above it, prompts and decodes
	// share steps. SGLang's default scheduler (no --enable-mixed-chunk) always works this way
	// (math.MaxInt, not fitted). For TRT-LLM it is fitted: a wave of prompts reaching an idle
	// or lightly loaded worker is prefilled back to back (at concurrency 8 the measured TTFTs
	// are those of such waves), and once that many requests run, the rest of the wave shares
	// steps with their decodes. Counting the queue too (as before) made concurrency 16 fully
	// mixed, while its measured TTFTs lie about a quarter of the way from the mixed to the
	// wave prediction (median over the fit rows; 0.75 at concurrency 8, ~0 from 32 up).
	// vLLM (chunked prefill, decodes first) never pauses decodes (0).
	PrefillFirstUpTo int
}

// PrefillFirstUpTo is the backend's BackendCalibration.PrefillFirstUpTo.
func PrefillFirstUpTo(backend string) int { return Calibrated.Backends[backend].PrefillFirstUpTo }

// Calibrated is the model's calibration: the values TestFit found on the fit rows (see
// docs/design/aisim.md, "Accuracy against measured runs"). Tests may swap it to fit; nothing else
// writes it.
var Calibrated = Calibration{
	MemEfficiency:    0.82,
	AttnEfficiency:   0.150,
	AllReduceLatency: 16.6e-6,
	FP8GEMMScale:     1.22,
	FP8StreamBytes:   1.37,
	Backends: map[string]BackendCalibration{
		output.BackendVLLM:   {StepOverhead: 0.477e-3, GEMMEfficiency: 0.620, CommEfficiency: 0.285},
		output.BackendSGLang: {StepOverhead: 0.278e-3, GEMMEfficiency: 0.631, CommEfficiency: 0.597, PrefillFirstUpTo: math.MaxInt},
		output.BackendTRTLLM: {StepOverhead: 0.711e-3, GEMMEfficiency: 0.716, CommEfficiency: 0.332, PrefillFirstUpTo: 6},
	},
}
