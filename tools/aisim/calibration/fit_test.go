package calibration

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/perf"
)

// runParallel predicts rows on two goroutines (the fitter evaluates the fit rows many times).
func runParallel(rows []Row) []Result {
	out := make([]Result, len(rows))
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < len(rows); i += 2 {
				out[i] = Run(context.Background(), rows[i:i+1])[0]
			}
		}(g)
	}
	wg.Wait()
	return out
}

// loss is the mean absolute log error of TTFT and TPOT over the rows, each capped at ln fitCap so
// that a few rows the model cannot describe (KV-cache thrashing at one GPU) do not steer the
// constants; a failed row costs the cap twice.
func loss(res []Result) float64 {
	capErr := math.Log(fitCap)
	t := 0.0
	for _, r := range res {
		if r.Err != nil {
			t += (ttftWeight + 1) * capErr
			continue
		}
		t += ttftWeight*min(capErr, math.Abs(math.Log(r.PredTTFTms/r.MeasuredTTFT))) + min(capErr, math.Abs(math.Log(r.PredTPOTms/r.MeasuredTPOTms)))
	}
	return t / float64(len(res))
}

var fitRounds = 3

// ttftWeight weighs TTFT errors against TPOT errors in the loss: TTFT is the metric furthest
// from its target.
const ttftWeight = 2

// fitCap caps a row's error ratio in the loss.
var fitCap = 1.5

// fitRows returns the calibration rows the fitters may see (never the validation rows), and
// skips the test unless AISIM_CALIB_FIT is set: the fitters are tools run by hand, their output
// written into perf.Calibrated.
func fitRows(t *testing.T) []Row {
	t.Helper()
	if os.Getenv("AISIM_CALIB_FIT") == "" {
		t.Skip("set AISIM_CALIB_FIT=1")
	}
	all, err := Load("testdata/silicon-calibration.csv")
	if err != nil {
		t.Fatal(err)
	}
	var fit []Row
	for _, r := range all {
		if !Validation(r.ID) {
			fit = append(fit, r)
		}
	}
	return fit
}

// TestFit is the fitter behind perf.Calibrated: coordinate descent on the fit rows only.
// Run with AISIM_CALIB_FIT=1; it prints the constants, which are then written by hand.
func TestFit(t *testing.T) {
	fit := fitRows(t)
	saved := perf.Calibrated
	defer func() { perf.Calibrated = saved }()
	type param struct {
		name string
		get  func(c *perf.Calibration) *float64
	}
	params := []param{
		{"MemEfficiency", func(c *perf.Calibration) *float64 { return &c.MemEfficiency }},
		{"AttnEfficiency", func(c *perf.Calibration) *float64 { return &c.AttnEfficiency }},
		{"AllReduceLatency", func(c *perf.Calibration) *float64 { return &c.AllReduceLatency }},
		{"FP8GEMMScale", func(c *perf.Calibration) *float64 { return &c.FP8GEMMScale }},
		{"FP8StreamBytes", func(c *perf.Calibration) *float64 { return &c.FP8StreamBytes }},
	}
	backendParams := []struct {
		backend, name string
		get           func(x *perf.BackendCalibration) *float64
	}{
		{output.BackendVLLM, "StepOverhead", func(x *perf.BackendCalibration) *float64 { return &x.StepOverhead }},
		{output.BackendSGLang, "StepOverhead", func(x *perf.BackendCalibration) *float64 { return &x.StepOverhead }},
		{output.BackendTRTLLM, "StepOverhead", func(x *perf.BackendCalibration) *float64 { return &x.StepOverhead }},
		{output.BackendVLLM, "GEMMEfficiency", func(x *perf.BackendCalibration) *float64 { return &x.GEMMEfficiency }},
		{output.BackendSGLang, "GEMMEfficiency", func(x *perf.BackendCalibration) *float64 { return &x.GEMMEfficiency }},
		{output.BackendTRTLLM, "GEMMEfficiency", func(x *perf.BackendCalibration) *float64 { return &x.GEMMEfficiency }},
		{output.BackendVLLM, "CommEfficiency", func(x *perf.BackendCalibration) *float64 { return &x.CommEfficiency }},
		{output.BackendSGLang, "CommEfficiency", func(x *perf.BackendCalibration) *float64 { return &x.CommEfficiency }},
		{output.BackendTRTLLM, "CommEfficiency", func(x *perf.BackendCalibration) *float64 { return &x.CommEfficiency }},
	}
	if v, err := strconv.Atoi(os.Getenv("AISIM_CALIB_FIT_ROUNDS")); err == nil {
		fitRounds = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("AISIM_CALIB_FIT_CAP"), 64); err == nil {
		fitCap = v
	}
	// AISIM_CALIB_FIT_FIX lists constants to hold at their current value (e.g. to compare
	// a fit with a physically pinned constant against a free one).
	fixed := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("AISIM_CALIB_FIT_FIX"), ",") {
		fixed[n] = true
	}
	eval := func() float64 { return loss(runParallel(fit)) }
	best := eval()
	fmt.Printf("start loss %.4f\n", best)
	factors := []float64{0.7, 0.85, 0.93, 0.97, 1.03, 1.07, 1.18, 1.4}
	for round := 0; round < fitRounds; round++ {
		for _, p := range params {
			if fixed[p.name] {
				continue
			}
			base := *p.get(&perf.Calibrated)
			bestV := base
			for _, f := range factors {
				*p.get(&perf.Calibrated) = base * f
				if l := eval(); l < best {
					best, bestV = l, base*f
				}
			}
			*p.get(&perf.Calibrated) = bestV
			fmt.Printf("round %d %s = %.4g loss %.4f\n", round, p.name, bestV, best)
		}
		for _, bp := range backendParams {
			if fixed[bp.backend+"."+bp.name] {
				continue
			}
			m := maps.Clone(perf.Calibrated.Backends)
			x := m[bp.backend]
			base := *bp.get(&x)
			bestV := base
			for _, f := range factors {
				y := x
				*bp.get(&y) = base * f
				m2 := maps.Clone(m)
				m2[bp.backend] = y
				perf.Calibrated.Backends = m2
				if l := eval(); l < best {
					best, bestV = l, base*f
				}
			}
			*bp.get(&x) = bestV
			m[bp.backend] = x
			perf.Calibrated.Backends = m
			fmt.Printf("round %d %s.%s = %.4g loss %.4f\n", round, bp.backend, bp.name, bestV, best)
		}
		// TRT-LLM's prefill-first regime bound is an integer: try its neighbours.
		m := maps.Clone(perf.Calibrated.Backends)
		x := m[output.BackendTRTLLM]
		bestN := x.PrefillFirstUpTo
		for _, n := range []int{bestN / 2, bestN - 1, bestN + 1, bestN * 3 / 2, bestN * 2} {
			y := x
			y.PrefillFirstUpTo = n
			m2 := maps.Clone(m)
			m2[output.BackendTRTLLM] = y
			perf.Calibrated.Backends = m2
			if l := eval(); l < best {
				best, bestN = l, n
			}
		}
		x.PrefillFirstUpTo = bestN
		m[output.BackendTRTLLM] = x
		perf.Calibrated.Backends = m
		fmt.Printf("round %d trtllm.PrefillFirstUpTo = %d loss %.4f\n", round, bestN, best)
	}
	fmt.Printf("%#v\n", perf.Calibrated)
}

// TestFitFP8 searches the FP8 GEMM scale jointly with a common scale of the backends' GEMM
// efficiencies (the two are coupled; coordinate descent moves them one at a time).
func TestFitFP8(t *testing.T) {
	fit := fitRows(t)
	saved := perf.Calibrated
	defer func() { perf.Calibrated = saved }()
	best, bestF, bestG := math.Inf(1), 0.0, 0.0
	for _, f := range []float64{1.0, 1.15, 1.3, 1.5} {
		for _, g := range []float64{0.8, 0.9, 1.0} {
			c := saved
			c.FP8GEMMScale = f
			c.Backends = maps.Clone(saved.Backends)
			for k, b := range c.Backends {
				b.GEMMEfficiency *= g
				c.Backends[k] = b
			}
			perf.Calibrated = c
			l := loss(runParallel(fit))
			fmt.Printf("fp8 %.2f gemm×%.2f loss %.4f\n", f, g, l)
			if l < best {
				best, bestF, bestG = l, f, g
			}
		}
	}
	fmt.Printf("best fp8 %.2f gemm×%.2f loss %.4f\n", bestF, bestG, best)
}
