package perf

import (
	"math"
	"sync"
)

// HistBase is the width of the latency histograms' log buckets: ln(1.002), 0.2% relative.
const HistBase = 0.002

// LogHist is a weighted histogram of values in log buckets of width HistBase, so percentiles
// cost O(buckets) instead of sorting every token gap. Buckets live in a window that grows
// around the first value seen; values <= 0 are counted apart. The zero value is ready to use.
type LogHist struct {
	// FastLog takes a value's logarithm with FastLog rather than math.Log: the trace replay
	// adds a value per decode step and each one lands anywhere, so the last-bucket shortcut
	// below rarely applies there. Both simulators keep the logarithm they were calibrated with.
	FastLog bool

	off   int // bucket index of b[0]
	b     []float64
	zero  float64 // weight of values <= 0
	total float64
	// lastK is the bucket of the last positive value; values in [lastLo, lastHi) are certainly
	// in it (the bounds sit a relative 1e-12 inside the bucket's edges, far more than the
	// logarithm's rounding), so the logarithm is taken only when a value leaves the bucket.
	lastK          int
	lastLo, lastHi float64
}

// Add adds weight w at value v.
func (h *LogHist) Add(v, w float64) {
	h.total += w
	if v <= 0 {
		h.zero += w
		return
	}
	var k int
	if h.FastLog {
		k = int(math.Floor(FastLog(v) / HistBase))
	} else {
		// A value in the last value's bucket (cohorts finishing together, decode steps of
		// nearly equal length) reuses its index: the logarithm was a tenth of a search.
		k = h.lastK
		if v < h.lastLo || v >= h.lastHi {
			k = int(math.Floor(math.Log(v) / HistBase))
			h.lastK = k
			h.lastLo = math.Exp(float64(k)*HistBase) * (1 + 1e-12)
			h.lastHi = math.Exp(float64(k+1)*HistBase) * (1 - 1e-12)
		}
	}
	// The window grows by at least its own size (a factor of about 2 in value per 350
	// buckets), so a distribution that drifts costs few reallocations; where the window sits
	// does not change any bucket's weight.
	switch {
	case h.b == nil:
		h.b = buckets.Get().([]float64)
		h.b = h.b[:cap(h.b)]
		clear(h.b)
		h.off = k - len(h.b)/2
	case k < h.off:
		grow := h.off - k + max(64, len(h.b))
		h.b = append(make([]float64, grow, grow+len(h.b)), h.b...)
		h.off -= grow
	case k-h.off >= len(h.b):
		h.b = append(h.b, make([]float64, k-h.off-len(h.b)+max(64, len(h.b)))...)
	}
	h.b[k-h.off] += w
}

// buckets recycles histogram windows between simulations: a search runs hundreds, each with
// four histograms whose windows span thousands of buckets, and allocating them afresh was the
// largest source of garbage of a search. A window's size and position do not change any
// bucket's weight, so reuse cannot change a result.
var buckets = sync.Pool{New: func() any { return make([]float64, 512) }}

// Total is the weight added so far.
func (h *LogHist) Total() float64 { return h.total }

// Release hands the window back to the pool; the histogram must not be used afterwards.
func (h *LogHist) Release() {
	if h.b != nil {
		buckets.Put(h.b[:0]) //nolint:staticcheck // SA6002: a slice header is small; boxing it is one tiny allocation per histogram
		h.b = nil
	}
}

// Stats reads the percentiles, the extremes and the standard deviation with the given mean. A
// value is its bucket's midpoint in log space (within HistBase/2 relative), so min and max may
// sit a fraction of a bucket on the far side of the mean when every value is the same.
func (h *LogHist) Stats(mean float64) Stats {
	if h.total == 0 {
		return Stats{}
	}
	mid := func(i int) float64 { return math.Exp((float64(i+h.off) + 0.5) * HistBase) }
	q := func(p float64) float64 {
		target, acc := p*h.total, h.zero
		if acc >= target-1e-9 {
			return 0
		}
		last := 0
		for i, w := range h.b {
			if w == 0 {
				continue
			}
			last = i
			acc += w
			if acc >= target-1e-9 {
				break
			}
		}
		return mid(last)
	}
	first, last := -1, -1
	sq := h.zero * mean * mean
	for i, w := range h.b {
		if w == 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		d := mid(i) - mean
		sq += w * d * d
	}
	st := Stats{Mean: mean, P50: q(0.5), P75: q(0.75), P90: q(0.9), P95: q(0.95), P99: q(0.99), Std: math.Sqrt(sq / h.total)}
	if last >= 0 {
		st.Max = mid(last)
		if h.zero == 0 {
			st.Min = mid(first)
		}
	}
	return st
}

// lnTable[i] = ln(1 + i/1024): FastLog interpolates the mantissa's logarithm in it.
var lnTable = func() (t [1025]float64) {
	for i := range t {
		t[i] = math.Log1p(float64(i) / 1024)
	}
	return t
}()

// FastLog is ln(v) for a positive normal v within 2e-7 (a thousandth of a histogram bucket), at
// a fraction of math.Log's cost.
func FastLog(v float64) float64 {
	bits := math.Float64bits(v)
	exp := int((bits>>52)&0x7ff) - 1023
	if exp == -1023 || exp == 1024 {
		return math.Log(v) // zero, subnormal, Inf or NaN
	}
	i := (bits >> 42) & 0x3ff
	frac := float64(bits&(1<<42-1)) / (1 << 42)
	return float64(exp)*math.Ln2 + lnTable[i] + frac*(lnTable[i+1]-lnTable[i])
}
