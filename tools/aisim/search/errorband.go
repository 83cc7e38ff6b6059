package search

import (
	"slices"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// BandBasis describes where the error bands come from.
const BandBasis = "validation residuals vs measured h100_sxm runs (docs/design/aisim.md)"

// CalibratedGPU is the only system the bands were measured on.
const CalibratedGPU = "h100_sxm"

// ErrorBands are the absolute percentage errors of mean TTFT and mean TPOT on the calibration's
// validation rows, per backend (median and 80th percentile). TestErrorBandsMatchCalibration in
// tools/aisim/calibration recomputes them and fails when this table drifts from the model.
var ErrorBands = map[string]struct{ TTFT, TPOT output.ErrorRange }{
	output.BackendVLLM:   {TTFT: output.ErrorRange{MedianAbsPct: 24.0, P80AbsPct: 45.5}, TPOT: output.ErrorRange{MedianAbsPct: 9.5, P80AbsPct: 14.6}},
	output.BackendSGLang: {TTFT: output.ErrorRange{MedianAbsPct: 12.6, P80AbsPct: 31.4}, TPOT: output.ErrorRange{MedianAbsPct: 7.0, P80AbsPct: 14.0}},
	output.BackendTRTLLM: {TTFT: output.ErrorRange{MedianAbsPct: 18.4, P80AbsPct: 46.8}, TPOT: output.ErrorRange{MedianAbsPct: 7.6, P80AbsPct: 14.2}},
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
	var gpus []string
	for _, r := range p.Roles {
		if id := e.GPUFor(r.Role).ID; id != CalibratedGPU && !slices.Contains(gpus, id) {
			gpus = append(gpus, id)
		}
	}
	if len(p.Roles) == 0 && e.GPU.ID != CalibratedGPU {
		gpus = append(gpus, e.GPU.ID)
	}
	switch {
	case len(gpus) > 0:
		band.Extrapolated = true
		band.Basis += "; extrapolated to " + strings.Join(gpus, ", ")
	case e.Model.IsMoE():
		band.Extrapolated = true
		band.Basis += "; extrapolated to a MoE model"
	}
	return band
}
