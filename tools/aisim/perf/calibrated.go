package perf

import "github.com/dgdr-operator/dgdr-operator/tools/aisim/input"

// Calibration holds every fitted constant of the latency model. They are few on purpose and
// each one is named after what it means physically; see docs/aisim.md ("Calibration") for
// the data they were fitted on (the fit part of tools/aisim/calibration's measured H100 rows)
// and the out-of-sample error that results.
type Calibration struct {
	// MemEfficiency is the fraction of HBM bandwidth streaming kernels reach
	// (AISimulate's mem_bw_empirical_scaling_factor).
	MemEfficiency float64
	// GEMMEfficiency is the fraction of the tensor-core peak large linear layers reach.
	GEMMEfficiency float64
	// AttnEfficiency is the fraction of the tensor-core peak prefill attention reaches.
	AttnEfficiency float64
	// CommEfficiency is the fraction of the per-direction link bandwidth a ring all-reduce
	// reaches (NCCL bus bandwidth / link bandwidth).
	CommEfficiency float64
	// Backends are the per-backend runtime constants.
	Backends map[string]BackendCalibration
}

// BackendCalibration is what differs between serving runtimes.
type BackendCalibration struct {
	// StepOverhead is the host time per forward step (scheduler, sampling, launch), seconds.
	StepOverhead float64
	// GEMMScale multiplies GEMMEfficiency (kernel selection, fusion).
	GEMMScale float64
	// PrefillFirst is the scheduler's documented default, not a fitted value: SGLang runs
	// prompt chunks in steps of their own and pauses decodes while a prompt can progress.
	PrefillFirst bool
}

// PrefillFirst reports whether the backend's scheduler runs prefill-only steps.
func PrefillFirst(backend string) bool { return Calibrated.Backends[backend].PrefillFirst }

// Calibrated is the model's calibration. Tests may swap it to fit; nothing else writes it.
var Calibrated = Calibration{
	MemEfficiency:  0.8,
	GEMMEfficiency: 0.7,
	AttnEfficiency: 0.5,
	CommEfficiency: 1.0,
	Backends: map[string]BackendCalibration{
		input.BackendVLLM:   {StepOverhead: 0.8e-3, GEMMScale: 1.0},
		input.BackendSGLang: {StepOverhead: 0.6e-3, GEMMScale: 1.0, PrefillFirst: true},
		input.BackendTRTLLM: {StepOverhead: 0.5e-3, GEMMScale: 1.05},
	},
}
