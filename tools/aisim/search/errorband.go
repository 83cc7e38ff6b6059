package search

import (
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
)

// BandBasis describes where the error bands come from.
const BandBasis = "validation residuals vs measured h100_sxm runs (docs/aisim.md)"

// CalibratedGPU is the only system the bands were measured on.
const CalibratedGPU = "h100_sxm"

// ErrorBands are the absolute percentage errors of mean TTFT and mean TPOT on the calibration's
// validation rows, per backend (median and 80th percentile). TestErrorBandsMatchCalibration in
// tools/aisim/calibration recomputes them and fails when this table drifts from the model.
var ErrorBands = map[string]struct{ TTFT, TPOT output.ErrorRange }{
	input.BackendVLLM:   {TTFT: output.ErrorRange{MedianAbsPct: 23.2, P80AbsPct: 42.9}, TPOT: output.ErrorRange{MedianAbsPct: 8.2, P80AbsPct: 16.4}},
	input.BackendSGLang: {TTFT: output.ErrorRange{MedianAbsPct: 23.4, P80AbsPct: 50.8}, TPOT: output.ErrorRange{MedianAbsPct: 4.2, P80AbsPct: 10.8}},
	input.BackendTRTLLM: {TTFT: output.ErrorRange{MedianAbsPct: 20.4, P80AbsPct: 49.0}, TPOT: output.ErrorRange{MedianAbsPct: 6.9, P80AbsPct: 15.2}},
}

// ErrorBand is the expected error of a point's latency metrics (TPOT's band stands for ITL too:
// aisim's ITL is the mean gap between tokens, the same quantity). Deployments on another GPU or
// with a MoE model are marked extrapolated: the bands were not measured there.
func (e *Env) ErrorBand(p Point) *output.ErrorBand {
	b, ok := ErrorBands[p.Backend]
	if !ok {
		return nil
	}
	band := &output.ErrorBand{
		Basis: BandBasis,
		Metrics: map[string]output.ErrorRange{
			"ttft_ms": b.TTFT,
			"tpot_ms": b.TPOT,
		},
	}
	switch {
	case e.GPU.ID != CalibratedGPU:
		band.Extrapolated = true
		band.Basis += "; extrapolated to " + e.GPU.ID
	case e.Model.IsMoE():
		band.Extrapolated = true
		band.Basis += "; extrapolated to a MoE model"
	}
	return band
}
