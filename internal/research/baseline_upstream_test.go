package research_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// A request that schedules re-searches, small enough for seconds: Qwen3-8B (a model config
// AISimulate bundles, so it runs offline), vLLM, at most 2 GPUs, 3 trials.
const keptOptimal = `apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata: {name: qwen-kept-optimal, namespace: default}
spec:
  model: {name: Qwen/Qwen3-8B}
  backends: [vllm]
  hardware: {gpu: {sku: h200_sxm, budget: 2}}
  sla: {ttftMs: 300, itlMs: 25}
  deployment:
    capture: {enabled: true, claimName: request-traces}
  research: {intervalMinutes: 60}
  aisimulate:
    inputOverrides:
      optimizer: {max_trials: 3}
`

// simulatorSpeed are the report keys that measure the simulator's own speed, not the serving.
var simulatorSpeed = []string{"wall_time_ms", "processed_tokens_per_s", "processed_output_tokens_per_s"}

// TestRealAISimulatePredictsTheBaseline: the real AISimulate is the judge of research.BaselineInput.
// A re-search of keptOptimal searched the real Dynamo capture (trace A) and its best candidate
// became a Candidate (candidates.FromResult) — the deployed one. The next re-search's effective
// input, lowered as the operator lowers it, searches a window cut from the other capture (trace
// B). The baseline input built from both is accepted by `aisimulate predict` (exit 0: a valid
// CorePredictionConfig), replays trace B's requests, and predicts exactly the metrics a real
// recommend on trace B pinned to the deployed point gives that point; the pinned search resolves
// the same engine as the deployed candidate's, so it is the same point.
func TestRealAISimulatePredictsTheBaseline(t *testing.T) {
	dir := t.TempDir()
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := yaml.UnmarshalStrict([]byte(keptOptimal), dgdr); err != nil {
		t.Fatal(err)
	}
	if errs := admission.Default(dgdr, admission.DefaultingOptions{}); len(errs) > 0 {
		t.Fatalf("defaulting: %v", errs)
	}

	traceA := filepath.Join(captureDir(), "frontend-capture.jsonl")
	searchA := searchInput(t, &dgdr.Spec, traceA)
	writeInput(t, filepath.Join(dir, "search-a.yaml"), searchA)
	upstreamtest.RunAISimulate(t, dir, "recommend", "-c", "search-a.yaml", "--output-dir", "a", "--format", "json")
	deployed, deployedYAML := deployedCandidate(t, dgdr, filepath.Join(dir, "a"))

	traceB, requestsB := cutLaterWindow(t, dir)
	if a := countRequests(t, traceA); a == requestsB {
		t.Fatalf("traces A and B both hold %d requests: the request count would not tell them apart", a)
	}
	searchB := searchInput(t, &dgdr.Spec, traceB)
	baseline, err := research.BaselineInput(deployed.Spec.Parameters.Raw, searchB.Document)
	if err != nil {
		t.Fatal(err)
	}
	// The input container writes the recorded baseline as YAML (internal/searchinput).
	writeInput(t, filepath.Join(dir, "baseline.yaml"), baseline)
	stdout := upstreamtest.RunAISimulate(t, dir, "predict", "-c", "baseline.yaml", "--format", "json", "--output-dir", "baseline")
	pred, err := output.ReadPrediction(filepath.Join(dir, "baseline"))
	if err != nil {
		t.Fatal(err)
	}
	var printed map[string]any
	if err := json.Unmarshal(stdout, &printed); err != nil {
		t.Fatalf("predict --format json: %v: %.300s", err, stdout)
	}
	report := pred.Report()
	if printed["prediction_status"] == "invalid" || report["num_requests"] != float64(requestsB) || report["completed_requests"] != float64(requestsB) {
		t.Errorf("the baseline replayed %v requests, completed %v (status %v); trace B holds %d",
			report["num_requests"], report["completed_requests"], printed["prediction_status"], requestsB)
	}
	for _, k := range []string{"traffic", "evaluation"} {
		if diff := cmp.Diff(asJSON(t, searchB.Document[k]), asJSON(t, baseline.Document[k])); diff != "" {
			t.Errorf("the baseline's %s is not the re-search's (-re-search +baseline):\n%s", k, diff)
		}
	}
	if diff := cmp.Diff(asJSON(t, deployedYAML["engine"]), asJSON(t, baseline.Document["engine"])); diff != "" {
		t.Errorf("the baseline's engine is not the deployed candidate's (-deployed +baseline):\n%s", diff)
	}

	// The same point searched on trace B: the re-search's input with every domain a scalar.
	pinned := pin(t, searchB, deployedYAML["engine"])
	writeInput(t, filepath.Join(dir, "pinned.yaml"), pinned)
	upstreamtest.RunAISimulate(t, dir, "recommend", "-c", "pinned.yaml", "--output-dir", "pinned", "--format", "json")
	sweep, err := output.ReadSweepResult(filepath.Join(dir, "pinned"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sweep.Candidates) != 1 || sweep.Candidates[0].Score == nil {
		t.Fatalf("the pinned search evaluated %d candidates: %+v", len(sweep.Candidates), sweep.Candidates)
	}
	pinnedYAML := readYAML(t, output.RecommendationPath(filepath.Join(dir, "pinned"), 0))
	if diff := cmp.Diff(asJSON(t, deployedYAML["engine"]), asJSON(t, pinnedYAML["engine"])); diff != "" {
		t.Fatalf("the pinned search resolved another point than the deployed one (-deployed +pinned):\n%s", diff)
	}
	// Compared as AISimulate wrote them: a null metric (power_w without a power model) is null in
	// both, which the readers' float maps cannot tell from 0.
	var rec struct {
		Candidates []struct {
			Metrics map[string]any `json:"metrics"`
		} `json:"candidates"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "pinned", "recommendation.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rec); err != nil || len(rec.Candidates) != 1 {
		t.Fatalf("pinned/recommendation.json: %v", err)
	}
	want, got := rec.Candidates[0].Metrics, map[string]any{}
	for k := range want {
		got[k] = printed[k] // recommend keeps sweeper/score.py's _METRIC_KEYS of the report
	}
	for _, k := range simulatorSpeed {
		delete(want, k)
		delete(got, k)
	}
	if len(want) < 40 {
		t.Fatalf("the pinned candidate has only %d metrics: %v", len(want), want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the pinned recommend's metrics (-) and the baseline prediction's (+):\n%s", diff)
	}
}

func captureDir() string {
	return filepath.Join(testenv.Root(), "tools", "aisim", "trace", "testdata", "dynamo")
}

// searchInput is the effective input of a re-search of spec as the operator lowers it, with the
// window file at path instead of the search container's mount.
func searchInput(t *testing.T, spec *v1beta2.DynamoGraphDeploymentRequestSpec, path string) *aisimulate.Input {
	t.Helper()
	in, errs := aisimulate.Lower(research.SearchSpec(spec), aisimulate.Options{})
	if len(errs) > 0 {
		t.Fatalf("lowering: %v", errs)
	}
	source := in.Document["traffic"].(map[string]any)["source"].(map[string]any)
	if got := source["paths"]; !cmp.Equal(got, []any{"/var/run/dgdr/trace/" + research.WindowFile}) {
		t.Fatalf("the re-search reads %v", got)
	}
	source["paths"] = []any{path}
	return canonical(t, in.Document)
}

// deployedCandidate is the Candidate the reporter publishes for the best candidate of the search
// in dir, and that candidate's recommendations file as AISimulate wrote it.
func deployedCandidate(t *testing.T, dgdr *v1beta2.DynamoGraphDeploymentRequest, dir string) (*v1beta2.DynamoGraphDeploymentCandidate, map[string]any) {
	t.Helper()
	sweep, err := output.ReadSweepResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	run := &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{Name: dgdr.Name + "-run-1", Namespace: dgdr.Namespace,
		Labels: map[string]string{v1beta2.LabelRequestUID: "request-uid"}}, Spec: dgdr.Spec}
	cands, err := candidates.FromResult(run, dir, sweep, candidates.Options{RuntimeImages: map[string]v1alpha1.RuntimeImage{"vllm": {Image: "vllm-runtime:test"}},
		GPUsPerNode: 8, Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil || len(cands) == 0 {
		t.Fatalf("the search's Candidates: %d, %v", len(cands), err)
	}
	doc := readYAML(t, output.RecommendationPath(dir, 0))
	if diff := cmp.Diff(asJSON(t, doc), asJSON(t, json.RawMessage(cands[0].Spec.Parameters.Raw))); diff != "" {
		t.Fatalf("the best Candidate's parameters are not recommendations/0001.yaml (-file +parameters):\n%s", diff)
	}
	return &cands[0], doc
}

// cutLaterWindow cuts, as the input container does, the window of the later two thirds of the
// gzip capture (one Frontend pod), and returns its path and request count.
func cutLaterWindow(t *testing.T, dir string) (string, int) {
	t.Helper()
	src := filepath.Join(captureDir(), "frontend-capture.000000.jsonl.gz")
	tr, err := requesttrace.Read(src, requesttrace.FormatDynamo, 0)
	if err != nil {
		t.Fatal(err)
	}
	var arrivals []float64
	for _, r := range tr.Requests {
		arrivals = append(arrivals, r.TimestampMs)
	}
	slices.Sort(arrivals)
	capture := filepath.Join(dir, "capture")
	if err := os.MkdirAll(filepath.Join(capture, "frontend-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(capture, "frontend-0", "request-trace.000000.jsonl.gz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	window := requesttrace.Window{Start: time.UnixMilli(int64(arrivals[len(arrivals)/3])), End: time.UnixMilli(int64(arrivals[len(arrivals)-1]) + 1)}
	path := filepath.Join(dir, research.WindowFile)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(capture)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	sum, err := requesttrace.CutWindow(root, window, requesttrace.Limits{}, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if n := countRequests(t, path); n != sum.Requests || n == 0 || n == len(arrivals) {
		t.Fatalf("the window holds %d requests, its summary says %d, the capture %d", n, sum.Requests, len(arrivals))
	}
	return path, sum.Requests
}

// countRequests is the number of requests the project's reader finds in a Dynamo trace.
func countRequests(t *testing.T, path string) int {
	t.Helper()
	tr, err := requesttrace.Read(path, requesttrace.FormatDynamo, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(tr.Requests)
}

// pin is search with its engine fixed to one point of engine (a resolved recommendations
// engine): scalar domains, parallelism without a preset (a preset cannot be combined with knobs),
// one trial.
func pin(t *testing.T, search *aisimulate.Input, engine any) *aisimulate.Input {
	t.Helper()
	e := engine.(map[string]any)
	workers := map[string]any{}
	for role, w := range e["workers"].(map[string]any) {
		w := w.(map[string]any)
		par := map[string]any{"preset": false}
		for k, v := range w["parallelism"].(map[string]any) {
			par[k] = v
		}
		sched := w["scheduler"].(map[string]any)
		kv := w["kv_cache"].(map[string]any)
		workers[role] = map[string]any{
			"parallelism": par,
			"scheduler":   map[string]any{"max_sequences": sched["max_sequences"], "max_batched_tokens": sched["max_batched_tokens"]},
			"kv_cache": map[string]any{"block_size": kv["block_size"],
				"capacity": map[string]any{"memory_fraction": kv["capacity"].(map[string]any)["memory_fraction"]}},
		}
	}
	doc := asJSON(t, search.Document).(map[string]any)
	doc["engine"] = map[string]any{"backend": e["backend"], "mode": e["mode"], "model": e["model"], "hardware": e["hardware"], "workers": workers}
	doc["optimizer"] = map[string]any{"max_trials": 1}
	return canonical(t, doc)
}

func canonical(t *testing.T, doc map[string]any) *aisimulate.Input {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	in, err := aisimulate.Canonicalize(data)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func writeInput(t *testing.T, path string, in *aisimulate.Input) {
	t.Helper()
	y, err := in.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, y, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// asJSON is v through a JSON round trip, so that documents decoded differently compare.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
