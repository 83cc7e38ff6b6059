package perf

import (
	"math"
	"testing"
)

func TestFastLog(t *testing.T) {
	for _, v := range []float64{1e-6, 0.0123, 0.5, 1, 1.0009765625, 2, 3.14159, 7.99, 1234.5, 9.87e6, 1e300} {
		if d := math.Abs(FastLog(v) - math.Log(v)); d > 2e-7 {
			t.Errorf("FastLog(%g) = %.12g, ln = %.12g", v, FastLog(v), math.Log(v))
		}
	}
	for v := 0.001; v < 1e4; v *= 1.0137 {
		if d := math.Abs(FastLog(v) - math.Log(v)); d > 2e-7 {
			t.Fatalf("FastLog(%g) off by %g", v, d)
		}
	}
}
