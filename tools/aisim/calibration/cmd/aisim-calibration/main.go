// Command aisim-calibration runs aisim over the silicon calibration rows and prints the error
// summary (in sample = fit rows, out of sample = validation rows, per backend); with -svg it
// also writes the predicted-vs-measured plot used in docs/aisim.md (make aisim-calibration-plot).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/calibration"
)

func main() {
	data := flag.String("data", "tools/aisim/calibration/testdata/silicon-calibration.csv", "calibration CSV")
	svg := flag.String("svg", "", "write the predicted-vs-measured plot here")
	bench := flag.Bool("bench", false, "print only the P7 benchmark line")
	flag.Parse()
	rows, err := calibration.Load(*data)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	res := calibration.Run(context.Background(), rows)
	val := calibration.Summarize(res, func(r calibration.Result) bool { return r.Validation })
	if *bench {
		fmt.Printf("P7 aisim_vs_silicon ttft_mape=%.1f tpot_mape=%.1f ttft_median=%.1f tpot_median=%.1f coverage=%.2f (out of sample, %d rows)\n",
			val.TTFTMAPE, val.TPOTMAPE, val.TTFTMedian, val.TPOTMedian, val.Coverage, val.Rows)
		return
	}
	fmt.Printf("%-8s %-10s %5s %8s %10s %10s %10s %10s %9s\n", "backend", "part", "rows", "coverage", "ttft_med%", "ttft_p80%", "tpot_med%", "tpot_p80%", "ttft_bias%")
	for _, be := range append([]string{""}, output.BackendNames()...) {
		for _, v := range []bool{false, true} {
			s := calibration.Summarize(res, func(r calibration.Result) bool { return (be == "" || r.Backend == be) && r.Validation == v })
			part := "fit"
			if v {
				part = "validation"
			}
			name := be
			if name == "" {
				name = "all"
			}
			fmt.Printf("%-8s %-10s %5d %8.2f %10.1f %10.1f %10.1f %10.1f %9.1f\n", name, part, s.Rows, s.Coverage,
				s.TTFTMedian, s.TTFTP80, s.TPOTMedian, s.TPOTP80, s.TTFTBiasPct)
		}
	}
	if *svg != "" {
		f, err := os.Create(*svg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		caption := fmt.Sprintf("aisim vs measured H100 SXM serving runs (%d rows; validation median |error|: TTFT %.0f%%, TPOT %.0f%%)",
			len(res), val.TTFTMedian, val.TPOTMedian)
		if err := calibration.WriteSVG(f, res, caption); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
