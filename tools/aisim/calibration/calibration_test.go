package calibration

import (
	"context"
	"fmt"
	"os"
	"testing"
)

func loadResults(t *testing.T) []Result {
	t.Helper()
	rows, err := Load("testdata/silicon-calibration.csv")
	if err != nil {
		t.Fatal(err)
	}
	return Run(context.Background(), rows)
}

func TestReport(t *testing.T) {
	if os.Getenv("AISIM_CALIB_REPORT") == "" {
		t.Skip("set AISIM_CALIB_REPORT=1")
	}
	res := loadResults(t)
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
