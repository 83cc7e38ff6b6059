package verification

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
)

// dynamoCapture is a request trace written by the real Dynamo frontend (36 request_end records,
// 16-token blocks, three shared prefixes), gzipped by its rotating sink.
const dynamoCapture = "../../tools/aisim/trace/testdata/dynamo/frontend-capture.000000.jsonl.gz"

// aiperfRun is what the launcher ran AIPerf with (testdata/fakeaiperf records it).
type aiperfRun struct {
	// Argv are AIPerf's arguments after those of every run (the frontend, the artifacts, the
	// duration and timeouts).
	Argv  []string
	Input string
	// Result is the launcher's termination message.
	Result map[string]any
}

// runLauncher runs the launcher (python3 -c Launcher) with plan p's arguments against a
// frontend that lists the model, with AIPerf replaced by testdata/fakeaiperf.
func runLauncher(t *testing.T, p *Plan) aiperfRun {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3, which the verification launcher runs on, is not on PATH: %v", err)
	}
	frontend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"org/llama"}]}`)
	}))
	defer frontend.Close()
	fake, err := filepath.Abs("testdata/fakeaiperf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := append([]string{"-c", Launcher}, LauncherArgs(p, Target{URL: frontend.URL, Model: "org/llama"})...)
	cmd := exec.Command(python, args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+fake, "TMPDIR="+dir, "TERMINATION_LOG="+filepath.Join(dir, "termination-log"),
		"FAKE_AIPERF_RECORD="+filepath.Join(dir, "aiperf.json"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("launcher output:\n%s", out)
	}
	var run aiperfRun
	if data, err := os.ReadFile(filepath.Join(dir, "termination-log")); err != nil || json.Unmarshal(data, &run.Result) != nil {
		t.Fatalf("the launcher wrote no result: %v %s", err, data)
	}
	data, err := os.ReadFile(filepath.Join(dir, "aiperf.json"))
	if err != nil {
		return run // AIPerf did not run
	}
	var rec struct {
		Argv  []string `json:"argv"`
		Input string   `json:"input"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	i := slices.Index(rec.Argv, "--request-timeout-seconds")
	if i < 0 || len(rec.Argv) < i+2 {
		t.Fatalf("AIPerf's arguments %q lack the common ones", rec.Argv)
	}
	run.Argv, run.Input = rec.Argv[i+2:], rec.Input
	return run
}

// TestLauncherRunsAIPerfAtThePlannedLoad: the launcher turns a plan into AIPerf's flags:
// synthetic requests at a concurrency or a rate; a mooncake trace at its timestamps (from the
// first, divided by the speedup) with its block size, or closed-loop; each trace request once
// unless the plan says how many.
func TestLauncherRunsAIPerfAtThePlannedLoad(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	rows := `{"timestamp": 1000, "input_length": 300, "output_length": 40, "hash_ids": [0, 1, 2]}` + "\n\n" +
		`{"timestamp": 1500, "input_length": 200, "output_length": 20, "hash_ids": [0, 3]}` + "\n" +
		`{"timestamp": 2200, "input_length": 100, "output_length": 10, "hash_ids": [4]}` + "\n"
	if err := os.WriteFile(trace, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	synth := v1beta2.VerificationLoad{InputTokens: ptr.To[int32](4096), OutputTokens: ptr.To[int32](512)}
	concurrency := synth
	concurrency.Concurrency = ptr.To[int32](37)
	rate := synth
	rate.RequestsPerSecond = ptr.To(2.5)
	mooncake := func(speedup *float64, block *int32) *TraceReplay {
		return &TraceReplay{Path: trace, Format: v1beta2.TraceFormatMooncake, Speedup: speedup, BlockSize: block}
	}
	cases := []struct {
		name string
		plan *Plan
		want []string
	}{
		{name: "synthetic at a concurrency", plan: &Plan{Load: concurrency, Requests: 100, MaxDurationSeconds: 60},
			want: []string{"--isl", "4096", "--osl", "512", "--concurrency", "37", "--request-count", "100"}},
		{name: "synthetic at a rate", plan: &Plan{Load: rate, Requests: 100, MaxDurationSeconds: 60},
			want: []string{"--isl", "4096", "--osl", "512", "--request-rate", "2.5", "--request-count", "100"}},
		{name: "a trace at its timestamps sped up", plan: &Plan{Trace: mooncake(ptr.To(2.0), ptr.To[int32](64)), MaxDurationSeconds: 60},
			want: []string{"--custom-dataset-type", "mooncake_trace", "--input-file", trace, "--isl-block-size", "64",
				"--fixed-schedule", "--fixed-schedule-auto-offset", "--synthesis-speedup-ratio", "2", "--request-count", "3"}},
		{name: "a trace at its own timestamps", plan: &Plan{Trace: mooncake(ptr.To(1.0), nil), MaxDurationSeconds: 60},
			want: []string{"--custom-dataset-type", "mooncake_trace", "--input-file", trace,
				"--fixed-schedule", "--fixed-schedule-auto-offset", "--request-count", "3"}},
		{name: "a trace closed-loop, some requests", plan: &Plan{Trace: mooncake(nil, nil), Load: v1beta2.VerificationLoad{Concurrency: ptr.To[int32](8)},
			Requests: 2, MaxDurationSeconds: 60},
			want: []string{"--custom-dataset-type", "mooncake_trace", "--input-file", trace,
				"--no-fixed-schedule", "--concurrency", "8", "--request-count", "2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := runLauncher(t, tc.plan)
			if diff := cmp.Diff(tc.want, run.Argv); diff != "" {
				t.Errorf("AIPerf's arguments (-want +got):\n%s", diff)
			}
			if run.Result["aiperfVersion"] != "fake" {
				t.Errorf("result %v, want the fake AIPerf's summary", run.Result)
			}
		})
	}
}

// TestLauncherReplaysADynamoTrace: a Dynamo request trace written by the real frontend is
// replayed as mooncake records, each request as the search reads it (requesttrace, the reader
// of the search's input): arrival relative to the first, input and output lengths, the same
// prefix blocks in the same order (ids equal where the sequence hashes are), with the records'
// block size, every request once.
func TestLauncherReplaysADynamoTrace(t *testing.T) {
	want, err := requesttrace.Read(dynamoCapture, requesttrace.FormatDynamo, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := runLauncher(t, &Plan{Trace: &TraceReplay{Path: dynamoCapture, Format: v1beta2.TraceFormatDynamo},
		Load: v1beta2.VerificationLoad{Concurrency: ptr.To[int32](4)}, MaxDurationSeconds: 60})
	converted := run.Argv[slices.Index(run.Argv, "--input-file")+1]
	wantArgv := []string{"--custom-dataset-type", "mooncake_trace", "--input-file", converted, "--isl-block-size", "16",
		"--no-fixed-schedule", "--concurrency", "4", "--request-count", fmt.Sprint(len(want.Requests))}
	if diff := cmp.Diff(wantArgv, run.Argv); diff != "" {
		t.Errorf("AIPerf's arguments (-want +got):\n%s", diff)
	}
	type row struct {
		Timestamp    int64   `json:"timestamp"`
		InputLength  int     `json:"input_length"`
		OutputLength int     `json:"output_length"`
		HashIDs      []int64 `json:"hash_ids"`
	}
	var got []row
	for _, line := range strings.Split(strings.TrimSpace(run.Input), "\n") {
		var r row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("converted row %q: %v", line, err)
		}
		got = append(got, r)
	}
	wantRows := make([]row, len(want.Requests))
	for i, r := range want.Requests {
		wantRows[i] = row{Timestamp: int64(math.Round(r.TimestampMs - want.Requests[0].TimestampMs)), InputLength: r.Input, OutputLength: r.Output, HashIDs: r.HashIDs}
	}
	if len(wantRows) != 36 {
		t.Fatalf("the capture has %d requests, want 36", len(wantRows))
	}
	if diff := cmp.Diff(wantRows, got); diff != "" {
		t.Errorf("converted trace (-want +got):\n%s", diff)
	}
}

// TestLauncherRefusesABrokenDynamoTrace: a record the launcher cannot read ends the run before
// AIPerf starts, with the line in the result.
func TestLauncherRefusesABrokenDynamoTrace(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "broken.jsonl")
	rec := `{"schema":"dynamo.request.trace.v1","event_type":"request_end","request":{"output_tokens":3}}`
	if err := os.WriteFile(trace, []byte(rec+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := runLauncher(t, &Plan{Trace: &TraceReplay{Path: trace, Format: v1beta2.TraceFormatDynamo, Speedup: ptr.To(1.0)}, MaxDurationSeconds: 60})
	if run.Argv != nil {
		t.Errorf("AIPerf ran with %q", run.Argv)
	}
	if msg, _ := run.Result["error"].(string); !strings.Contains(msg, "line 1 of the Dynamo trace") {
		t.Errorf("result %v, want the trace's line named", run.Result)
	}
	if got := ParseResult(mustJSON(t, run.Result), 1); got.FailReason != ReasonJobFailed || !strings.Contains(got.Message, "line 1 of the Dynamo trace") {
		t.Errorf("ParseResult = %+v", got)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
