package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/calibration"
)

// benchSiliconUpstream (P7b): the real AISimulate's `predict` against the same measured serving
// runs as P7, scored the same way (calibration.Compare and Summarize over the validation rows),
// for the line next to aisim's P7. AISimulate 0.13 carries timing data only for the backend
// versions it ships (for example sglang 0.5.14 and 0.5.17), none of the measured ones (sglang
// 0.5.1.post1, vLLM 0.10, TRT-LLM 1.0), so every row is predicted with the version AISimulate
// resolves when none is given; the note says so. The predictions run in one process of the
// upstream venv (hack/upstream/predict_rows.py). It is a measurement with no goal.
// bundledModel maps the measured rows' models that AISimulate 0.13 does not bundle to the bundled
// config of the same architecture (Hugging Face's config.json of the instruct and base models
// differs only in generation settings); the benchmark is offline.
var bundledModel = map[string]string{
	"meta-llama/Llama-3.1-8B-Instruct":  "meta-llama/Meta-Llama-3.1-8B",
	"meta-llama/Llama-3.1-70B":          "meta-llama/Meta-Llama-3.1-70B",
	"meta-llama/Llama-3.1-70B-Instruct": "meta-llama/Meta-Llama-3.1-70B",
}

func benchSiliconUpstream(root string) (figure, error) {
	python := filepath.Join(root, "bin", "upstream", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		return figure{}, fmt.Errorf("P7b runs the real AISimulate of the upstream venv, and %s is missing: run make upstream", python)
	}
	rows, err := calibration.Load(filepath.Join(root, "tools/aisim/calibration/testdata/silicon-calibration.csv"))
	if err != nil {
		return figure{}, err
	}
	type item struct {
		ID   string `json:"id"`
		YAML string `json:"yaml"`
	}
	var batch []item
	var validation []calibration.Row
	for _, r := range rows {
		if !calibration.Validation(r.ID) {
			continue
		}
		validation = append(validation, r)
		r.BackendVersion = ""
		if bundled, ok := bundledModel[r.Model]; ok {
			r.Model = bundled
		}
		batch = append(batch, item{ID: r.ID, YAML: r.Document()})
	}
	in, err := json.Marshal(batch)
	if err != nil {
		return figure{}, err
	}
	cmd := exec.Command(python, filepath.Join(root, "hack", "upstream", "predict_rows.py"))
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return figure{}, fmt.Errorf("predict_rows.py: %v\n%s", err, stderr.String())
	}
	var preds []struct {
		ID     string  `json:"id"`
		OK     bool    `json:"ok"`
		TTFTms float64 `json:"ttft_ms"`
		TPOTms float64 `json:"tpot_ms"`
		Error  string  `json:"error"`
	}
	if err := json.Unmarshal(out, &preds); err != nil {
		return figure{}, err
	}
	if len(preds) != len(validation) {
		return figure{}, fmt.Errorf("predict_rows.py answered %d of %d rows", len(preds), len(validation))
	}
	results := make([]calibration.Result, len(preds))
	refusals := map[string]int{}
	for i, p := range preds {
		var perr error
		if !p.OK {
			perr = errors.New(p.Error)
			refusals[p.Error]++
		}
		results[i] = calibration.Compare(validation[i])(p.TTFTms, p.TPOTms, perr)
	}
	s := calibration.Summarize(results, func(calibration.Result) bool { return true })
	// aisim on the rows the real tool predicted, for a like-for-like comparison.
	predicted := map[string]bool{}
	for _, r := range results {
		if r.Err == nil {
			predicted[r.ID] = true
		}
	}
	mine := calibration.Summarize(calibration.Run(context.Background(), validation), func(r calibration.Result) bool { return predicted[r.ID] })
	note := fmt.Sprintf("the real aisimulate predict over the %d validation rows of P7 (percent errors), each with the backend version AISimulate resolves (it has no data for the measured versions) and a bundled model config of the same architecture where the row's model is not bundled (the benchmark is offline); aisim on the same %d rows: TTFT median %.1f%%, TPOT median %.1f%%",
		s.Rows, mine.Rows, mine.TTFTMedian, mine.TPOTMedian)
	for msg, n := range refusals {
		note += fmt.Sprintf("; %d refused: %s", n, msg)
	}
	return figure{
		id: "P7b", name: "aisimulate_vs_silicon", value: s.TTFTMedian, measurement: true,
		extra: fmt.Sprintf("ttft_mape=%.1f tpot_mape=%.1f ttft_median=%.1f tpot_median=%.1f ttft_bias=%.1f tpot_bias=%.1f coverage=%.2f",
			s.TTFTMAPE, s.TPOTMAPE, s.TTFTMedian, s.TPOTMedian, s.TTFTBiasPct, s.TPOTBiasPct, s.Coverage),
		note: note,
	}, nil
}
