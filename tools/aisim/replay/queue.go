package replay

import (
	"math"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/perf"
)

// logHist is a weighted histogram of positive values in log buckets of 0.2% relative width,
// for the token gaps (millions per replay) whose percentiles would otherwise need a sort.
type logHist struct {
	off   int
	b     []float64
	zero  float64
	total float64
}

func (h *logHist) add(v, w float64) {
	h.total += w
	if v <= 0 {
		h.zero += w
		return
	}
	k := int(math.Floor(fastLog(v) / perf.HistBase))
	switch {
	case h.b == nil:
		h.b = make([]float64, 1024)
		h.off = k - 512
	case k < h.off:
		grow := h.off - k + len(h.b)
		h.b = append(make([]float64, grow, grow+len(h.b)), h.b...)
		h.off -= grow
	case k-h.off >= len(h.b):
		h.b = append(h.b, make([]float64, k-h.off-len(h.b)+len(h.b))...)
	}
	h.b[k-h.off] += w
}

func (h *logHist) stats(mean float64) perf.Stats {
	return perf.LogHistStats(h.b, h.off, h.zero, h.total, mean)
}

// lnTable[i] = ln(1 + i/1024): fastLog interpolates the mantissa's logarithm in it.
var lnTable = func() (t [1025]float64) {
	for i := range t {
		t[i] = math.Log1p(float64(i) / 1024)
	}
	return t
}()

// fastLog is ln(v) for a positive normal v within 2e-7 (a thousandth of a histogram bucket), at
// a fraction of math.Log's cost: one replay takes a logarithm per decode step.
func fastLog(v float64) float64 {
	bits := math.Float64bits(v)
	exp := int((bits>>52)&0x7ff) - 1023
	if exp == -1023 || exp == 1024 {
		return math.Log(v) // zero, subnormal, Inf or NaN
	}
	i := (bits >> 42) & 0x3ff
	frac := float64(bits&(1<<42-1)) / (1 << 42)
	return float64(exp)*math.Ln2 + lnTable[i] + frac*(lnTable[i+1]-lnTable[i])
}
