package calibration

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/search"
)

var (
	resultsOnce sync.Once
	results     []Result
	resultsErr  error
)

// calibrationResults predicts every calibration row once per test binary.
func calibrationResults(t *testing.T) []Result {
	t.Helper()
	resultsOnce.Do(func() {
		var rows []Row
		if rows, resultsErr = Load("testdata/silicon-calibration.csv"); resultsErr == nil {
			results = runParallel(rows)
		}
	})
	if resultsErr != nil {
		t.Fatal(resultsErr)
	}
	return results
}

func isValidation(r Result) bool { return r.Validation }
func isFit(r Result) bool        { return !r.Validation }

// TestAccuracyAgainstSilicon is the regression gate of issue #20: out of sample (the validation
// third of the rows, which no constant was fitted on), the median absolute errors of mean TTFT
// and TPOT stay within the documented figures, and aisim covers the supported models' rows.
func TestAccuracyAgainstSilicon(t *testing.T) {
	res := calibrationResults(t)
	fit, val := Summarize(res, isFit), Summarize(res, isValidation)
	t.Logf("in sample (fit, %d rows):          TTFT median %.1f%% p80 %.1f%%, TPOT median %.1f%% p80 %.1f%%",
		fit.Rows, fit.TTFTMedian, fit.TTFTP80, fit.TPOTMedian, fit.TPOTP80)
	t.Logf("out of sample (validation, %d rows): TTFT median %.1f%% p80 %.1f%%, TPOT median %.1f%% p80 %.1f%%",
		val.Rows, val.TTFTMedian, val.TTFTP80, val.TPOTMedian, val.TPOTP80)
	if val.TTFTMedian > DocumentedTTFTMedianPct {
		t.Errorf("out-of-sample median TTFT error %.1f%% > documented %.0f%%", val.TTFTMedian, DocumentedTTFTMedianPct)
	}
	if val.TPOTMedian > DocumentedTPOTMedianPct {
		t.Errorf("out-of-sample median TPOT error %.1f%% > documented %.0f%%", val.TPOTMedian, DocumentedTPOTMedianPct)
	}
	supported, predicted := 0, 0
	for _, r := range res {
		if !Supported(r.Row) {
			continue
		}
		supported++
		if r.Err == nil {
			predicted++
		} else {
			t.Logf("not predicted: %s: %v", r.ID, r.Err)
		}
	}
	if cov := float64(predicted) / float64(max(1, supported)); cov < DocumentedCoverage {
		t.Errorf("coverage %.2f (%d of %d supported rows) < %.2f", cov, predicted, supported, DocumentedCoverage)
	}
}

// TestErrorBandsMatchCalibration keeps the error band aisim prints honest: search.ErrorBands must
// be the validation rows' errors of the current model (within half a percentage point).
func TestErrorBandsMatchCalibration(t *testing.T) {
	res := calibrationResults(t)
	for backend, band := range search.ErrorBands {
		s := Summarize(res, func(r Result) bool { return r.Validation && r.Backend == backend })
		if s.Predicted == 0 {
			t.Errorf("%s: no validation rows", backend)
			continue
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"TTFT median", band.TTFT.MedianAbsPct, s.TTFTMedian}, {"TTFT p80", band.TTFT.P80AbsPct, s.TTFTP80},
			{"TPOT median", band.TPOT.MedianAbsPct, s.TPOTMedian}, {"TPOT p80", band.TPOT.P80AbsPct, s.TPOTP80},
		} {
			if math.Abs(c.got-c.want) > 0.5 {
				t.Errorf("search.ErrorBands[%s] %s = %.1f, the calibration gives %.1f", backend, c.name, c.got, c.want)
			}
		}
	}
}

// TestValidationSplit: the split is stable, keyed by row id, and holds back about a third.
func TestValidationSplit(t *testing.T) {
	res := calibrationResults(t)
	val := Summarize(res, isValidation).Rows
	if frac := float64(val) / float64(len(res)); frac < 0.25 || frac > 0.42 {
		t.Errorf("validation share %.2f, want about a third", frac)
	}
	for _, r := range res {
		if r.Validation != Validation(r.ID) {
			t.Fatalf("%s: split is not a function of the row id", r.ID)
		}
	}
}

func TestDocumentIsAValidPredictInput(t *testing.T) {
	rows, err := Load("testdata/silicon-calibration.csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Predict(context.Background(), rows[0]); err != nil {
		t.Fatalf("%s\n%s", err, rows[0].Document())
	}
}

// TestReport prints every row's prediction next to its measurement (AISIM_CALIB_REPORT=1).
func TestReport(t *testing.T) {
	if os.Getenv("AISIM_CALIB_REPORT") == "" {
		t.Skip("set AISIM_CALIB_REPORT=1")
	}
	res := calibrationResults(t)
	for _, r := range res {
		if r.Err != nil {
			fmt.Printf("ERR %s: %v\n", r.ID, r.Err)
			continue
		}
		fmt.Printf("%-7s %-26s c=%-4d %5dx%-5d tp=%d  ttft %8.1f/%8.1f (%+6.0f%%)  tpot %6.2f/%6.2f (%+5.0f%%)\n",
			r.Backend, r.Model[len(r.Model)-10:], r.Concurrency, r.ISL, r.OSL, r.TP, r.PredTTFTms, r.MeasuredTTFT, r.TTFTSignedPct, r.PredTPOTms, r.MeasuredTPOTms, r.TPOTSigned)
	}
	for _, b := range []string{"", "vllm", "sglang", "trtllm"} {
		for _, v := range []bool{false, true} {
			s := Summarize(res, func(r Result) bool { return (b == "" || r.Backend == b) && r.Validation == v })
			fmt.Printf("backend=%-7s validation=%v %+v\n", b, v, s)
		}
	}
}
