package main

import (
	"context"
	"fmt"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/calibration"
)

// benchSilicon (P7): aisim against measured serving runs — the out-of-sample (validation rows)
// mean absolute percentage errors of mean TTFT and TPOT, their medians, and the share of rows
// predicted (issue #20; docs/design/aisim.md "Accuracy against measured runs"). The value is the TTFT
// median; the verdict is against the goals (TTFT ≤ 20%, TPOT ≤ 10%, coverage ≥ 90%), not
// against the documented figures the tests hold the model to.
func benchSilicon() (figure, error) {
	rows, err := calibration.Load("tools/aisim/calibration/testdata/silicon-calibration.csv")
	if err != nil {
		return figure{}, err
	}
	res := calibration.Run(context.Background(), rows)
	s := calibration.Summarize(res, func(r calibration.Result) bool { return r.Validation })
	return figure{
		id: "P7", name: "aisim_vs_silicon", value: s.TTFTMedian, goal: calibration.GoalTTFTMedianPct,
		ok: s.TTFTMedian <= calibration.GoalTTFTMedianPct && s.TPOTMedian <= calibration.GoalTPOTMedianPct &&
			s.Coverage >= calibration.GoalCoverage,
		extra: fmt.Sprintf("ttft_mape=%.1f tpot_mape=%.1f ttft_median=%.1f tpot_median=%.1f coverage=%.2f",
			s.TTFTMAPE, s.TPOTMAPE, s.TTFTMedian, s.TPOTMedian, s.Coverage),
		note: fmt.Sprintf("aisim predict over the %d validation rows of the H100 calibration data (percent errors, out of sample)", s.Rows),
	}, nil
}
