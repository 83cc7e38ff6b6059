// Package calibration compares aisim's predictions with measured serving runs: it turns each
// row of a silicon calibration table (testdata/silicon-calibration.csv, see its README for
// the source and licence) into an `aisim predict` document, runs the same code path as the
// CLI, and reports the absolute percentage errors of mean TTFT and mean TPOT.
//
// The rows are split deterministically into a fit part and a validation part (Split); the
// model's few fitted constants (perf/calibrated.go) were chosen on the fit rows only, and the
// error band aisim prints is the validation rows' error (ErrorBands).
package calibration

import (
	"context"
	"encoding/csv"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/search"
)

// The documented out-of-sample accuracy (docs/design/aisim.md, "Accuracy against measured runs"): the
// median absolute error of mean TTFT and mean TPOT over the validation rows, and the share of
// rows of supported models aisim predicts. A model change that makes any of them worse fails.
// The model reaches 18.2% and 7.9% (issue #20 asks for 20% and 10%): the bounds are the
// achieved figures plus about one point, not the goals, so that the gate still bites.
const (
	DocumentedTTFTMedianPct = 19.0
	DocumentedTPOTMedianPct = 9.0
	DocumentedCoverage      = 0.90
)

// The goals of issue #20 (out of sample): what make bench's P7 line is judged against.
const (
	GoalTTFTMedianPct = 20.0
	GoalTPOTMedianPct = 10.0
	GoalCoverage      = 0.90
)

// Row is one measured run.
type Row struct {
	ID             string
	Backend        string
	BackendVersion string
	Model          string
	System         string
	Precision      string // "" (BF16) or fp8
	GEMMQuant      string // "", fp8, fp8_block, nvfp4, ...
	MoEQuant       string
	Disaggregated  bool
	ISL, OSL       int
	Concurrency    int
	// Aggregated worker (TP, attention DP) or the prefill / decode pools.
	TP, DP                       int
	PrefillWorkers, PrefillTP    int
	DecodeWorkers, DecodeTP      int
	MeasuredTTFT, MeasuredTPOTms float64
}

// Load reads a calibration CSV with the columns of AIConfigurator's silicon_sample.csv.
func Load(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads calibration rows from CSV.
func Parse(r io.Reader) ([]Row, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) < 1 {
		return nil, fmt.Errorf("empty calibration table")
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, need := range []string{"id", "backend", "model_path", "system", "mode", "isl", "osl", "silicon_ttft_ms", "silicon_tpot_ms"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("calibration table: missing column %s", need)
		}
	}
	var rows []Row
	for n, rec := range recs[1:] {
		get := func(k string) string {
			if i, ok := col[k]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		num := func(k string, def int) int {
			v, err := strconv.Atoi(get(k))
			if err != nil {
				return def
			}
			return v
		}
		flt := func(k string) float64 {
			v, _ := strconv.ParseFloat(get(k), 64)
			return v
		}
		row := Row{
			ID: get("id"), Backend: get("backend"), BackendVersion: get("backend_version"), Model: get("model_path"),
			System: get("system"), Precision: get("precision"), GEMMQuant: get("gemm_quant_mode"), MoEQuant: get("moe_quant_mode"),
			Disaggregated: get("mode") == "disagg", ISL: num("isl", 0), OSL: num("osl", 0),
			TP: num("tp_size", 1), DP: num("attention_dp_size", 1),
			PrefillWorkers: num("prefill_num_workers", 1), PrefillTP: num("prefill_tp_size", 1),
			DecodeWorkers: num("decode_num_workers", 1), DecodeTP: num("decode_tp_size", 1),
			MeasuredTTFT: flt("silicon_ttft_ms"), MeasuredTPOTms: flt("silicon_tpot_ms"),
		}
		row.Concurrency = num("batch_size", 0)
		if c, ok := strings.CutPrefix(get("silicon_data_source"), "silicon_concurrency="); ok {
			if v, err := strconv.Atoi(c); err == nil {
				row.Concurrency = v
			}
		}
		if row.Disaggregated && row.Concurrency == 0 {
			row.Concurrency = num("decode_batch_size", 0) * row.DecodeWorkers
		}
		if row.ISL <= 0 || row.OSL <= 0 || row.Concurrency <= 0 || row.MeasuredTTFT <= 0 || row.MeasuredTPOTms <= 0 {
			return nil, fmt.Errorf("calibration table row %d (%s): missing lengths, concurrency or measurements", n+2, row.ID)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// RequestsPerConcurrency is the request count of a simulated run per unit of concurrency.
// The measured runs are closed-loop benchmarks whose means include the start-up wave in which
// every client sends at once; ten waves weigh it as a benchmark of that length does.
const RequestsPerConcurrency = 10

// EngineMaxBatchedTokens is the per-step token budget the measured engines ran with, where it
// differs from aisim's (AISimulate's) default of 8192: a vLLM engine started by Dynamo rather
// than by `vllm serve` gets vLLM's generic chunked-prefill default of 2048 tokens per step
// (vLLM raises it to 8192 only for its own OpenAI server on large GPUs). The measured vLLM
// TTFTs confirm it: 4096-token prompts at concurrency 8 take about as many steps as
// 2048-token chunks imply. SGLang (chunked_prefill_size 8192 on 80 GB GPUs) and TRT-LLM
// (max_num_tokens 8192) match the default.
var EngineMaxBatchedTokens = map[string]int{output.BackendVLLM: 2048}

// Document renders the row as an `aisim predict` input document.
func (r Row) Document() string {
	var b strings.Builder
	fmt.Fprintf(&b, "traffic:\n  source: {type: synthetic, input_tokens: %d, output_tokens: %d}\n", r.ISL, r.OSL)
	fmt.Fprintf(&b, "  load: {type: concurrency, concurrency: %d}\n  stop: {requests: %d}\n", r.Concurrency, r.Concurrency*RequestsPerConcurrency)
	mode := input.ModeAggregated
	if r.Disaggregated {
		mode = input.ModeDisaggregated
	}
	fmt.Fprintf(&b, "engine:\n  mode: %s\n  model: %s\n  hardware: %s\n  backend: %s\n", mode, r.Model, r.System, r.Backend)
	if r.BackendVersion != "" {
		fmt.Fprintf(&b, "  backend_version: %q\n", r.BackendVersion)
	}
	if r.GEMMQuant != "" {
		fmt.Fprintf(&b, "  gemm_quant_mode: %s\n", r.GEMMQuant)
	}
	if r.Precision == "fp8" {
		// The FP8 deployments keep the KV cache in FP8 too (AIConfigurator's fp8 profile).
		// Attention is left at the 16-bit rate: FP8 attention fitted worse.
		b.WriteString("  kvcache_quant_mode: fp8\n")
	}
	sched := ""
	if mbt := EngineMaxBatchedTokens[r.Backend]; mbt > 0 {
		sched = fmt.Sprintf(", scheduler: {max_batched_tokens: %d}", mbt)
	}
	b.WriteString("  workers:\n")
	if r.Disaggregated {
		fmt.Fprintf(&b, "    prefill: {parallelism: {replicas: %d, tensor: %d}%s}\n", r.PrefillWorkers, r.PrefillTP, sched)
		fmt.Fprintf(&b, "    decode: {parallelism: {replicas: %d, tensor: %d}}\n", r.DecodeWorkers, r.DecodeTP)
	} else {
		fmt.Fprintf(&b, "    aggregated: {parallelism: {tensor: %d, attention_data: %d}%s}\n", r.TP, max(1, r.DP), sched)
	}
	return b.String()
}

// Result is one row's prediction next to its measurement.
type Result struct {
	Row
	Validation bool // in the held-back validation part of the split
	// Err is set when aisim refuses or fails the row (it then counts against coverage).
	Err                       error
	PredTTFTms, PredTPOTms    float64
	TTFTErrPct, TPOTErrPct    float64 // |pred − measured| / measured × 100
	TTFTSignedPct, TPOTSigned float64 // (pred − measured) / measured × 100
}

// Validation reports whether a row belongs to the validation part of the split: a third of the
// rows, chosen by a hash of the row id so that the split is stable and independent of order.
func Validation(id string) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return h.Sum32()%3 == 0
}

// Predict runs the row through the predict code path (decode, catalog, precision, prepare,
// simulate) and returns mean TTFT and TPOT in ms.
func Predict(ctx context.Context, r Row) (ttft, tpot float64, err error) {
	doc, err := input.Decode(input.Predict, []byte(r.Document()), nil)
	if err != nil {
		return 0, 0, err
	}
	env, err := search.NewEnv(doc)
	if err != nil {
		return 0, 0, err
	}
	space, err := env.Enumerate()
	if err != nil {
		return 0, 0, err
	}
	points, _ := env.Select(space)
	if len(points) != 1 {
		return 0, 0, fmt.Errorf("expected one deployment, got %d", len(points))
	}
	pr := env.Prepare(points[0])
	if pr.Status != "" {
		return 0, 0, fmt.Errorf("%s: %s", pr.ReasonCategory, pr.Reason)
	}
	rep, err := env.Simulate(ctx, pr, time.Time{})
	if err != nil {
		return 0, 0, err
	}
	return rep.TTFT.Mean, rep.TPOT.Mean, nil
}

// Run predicts every row.
func Run(ctx context.Context, rows []Row) []Result {
	out := make([]Result, len(rows))
	for i, r := range rows {
		out[i] = Compare(r)(Predict(ctx, r))
	}
	return out
}

// Compare returns a function that scores a prediction of the row (mean TTFT and TPOT in ms, or
// the error that refused the row) against its measurement; any predictor's output (aisim's, the
// real AISimulate's) is scored the same way.
func Compare(r Row) func(ttft, tpot float64, err error) Result {
	return func(ttft, tpot float64, err error) Result {
		res := Result{Row: r, Validation: Validation(r.ID), PredTTFTms: ttft, PredTPOTms: tpot, Err: err}
		if err == nil {
			res.TTFTSignedPct = (ttft - r.MeasuredTTFT) / r.MeasuredTTFT * 100
			res.TPOTSigned = (tpot - r.MeasuredTPOTms) / r.MeasuredTPOTms * 100
			res.TTFTErrPct, res.TPOTErrPct = math.Abs(res.TTFTSignedPct), math.Abs(res.TPOTSigned)
		}
		return res
	}
}

// Stats summarizes a set of results.
type Stats struct {
	Rows, Predicted          int
	Coverage                 float64 // predicted / rows
	TTFTMedian, TPOTMedian   float64 // median absolute % error
	TTFTP80, TPOTP80         float64 // 80th percentile of the absolute % error
	TTFTMAPE, TPOTMAPE       float64 // mean absolute % error
	TTFTBiasPct, TPOTBiasPct float64 // median signed % error
}

// Summarize computes Stats over the results that keep returns true for.
func Summarize(results []Result, keep func(Result) bool) Stats {
	var s Stats
	var tt, tp, ts, ps []float64
	for _, r := range results {
		if !keep(r) {
			continue
		}
		s.Rows++
		if r.Err != nil {
			continue
		}
		s.Predicted++
		tt, tp = append(tt, r.TTFTErrPct), append(tp, r.TPOTErrPct)
		ts, ps = append(ts, r.TTFTSignedPct), append(ps, r.TPOTSigned)
	}
	if s.Rows > 0 {
		s.Coverage = float64(s.Predicted) / float64(s.Rows)
	}
	s.TTFTMedian, s.TPOTMedian = Quantile(tt, 0.5), Quantile(tp, 0.5)
	s.TTFTP80, s.TPOTP80 = Quantile(tt, 0.8), Quantile(tp, 0.8)
	s.TTFTMAPE, s.TPOTMAPE = mean(tt), mean(tp)
	s.TTFTBiasPct, s.TPOTBiasPct = Quantile(ts, 0.5), Quantile(ps, 0.5)
	return s
}

// Quantile is the q-quantile with linear interpolation (0 for no values).
func Quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

// Supported reports whether a row's model is one aisim models (its catalog or a base/instruct
// sibling of a catalogued checkpoint); coverage is measured over these rows.
func Supported(r Row) bool {
	_, err := catalog.LoadModel(r.Model)
	return err == nil
}
