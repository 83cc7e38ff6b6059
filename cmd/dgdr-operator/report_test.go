package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// The report command's tests share one real API server, started by the first of them.
var reportServer struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

func reportEnv(t *testing.T) *testenv.Env {
	t.Helper()
	reportServer.once.Do(func() { reportServer.env, reportServer.err = testenv.Start(testenv.Options{}) })
	if reportServer.err != nil {
		t.Fatalf("starting the control plane: %v", reportServer.err)
	}
	return reportServer.env
}

func TestMain(m *testing.M) {
	code := m.Run()
	if reportServer.env != nil {
		reportServer.env.Stop()
	}
	os.Exit(code)
}

func newNamespace(t *testing.T) string {
	t.Helper()
	return testenv.Namespace(t, reportEnv(t).Client, "report")
}

// newRun creates a Run the way the operator would (at most two candidates), with an
// operator-owned status.
func newRun(t *testing.T, ns, name string) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	ctx, c := context.Background(), reportEnv(t).Client
	run := builders.Run(ns, name).Label(v1beta2.LabelRequestName, "llm").
		WithSpec(builders.Request("", "").Revision("main").MaxCandidates(2).Spec).Obj()
	if err := c.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	run.Status.Phase = v1beta2.RunPhaseRunning
	meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{
		Type: v1beta2.ConditionCompleted, Status: metav1.ConditionFalse, Reason: v1beta2.ReasonEvaluatingCandidates, Message: "running",
	})
	if err := c.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	return run
}

func getRun(t *testing.T, ns, name string) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	var run v1beta2.DynamoGraphDeploymentRun
	if err := reportEnv(t).Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &run); err != nil {
		t.Fatal(err)
	}
	return &run
}

func listCandidates(t *testing.T, ns string) []v1beta2.DynamoGraphDeploymentCandidate {
	t.Helper()
	var list v1beta2.DynamoGraphDeploymentCandidateList
	if err := reportEnv(t).Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestReportCommand runs the `report` command with --search-exit-file against the real API
// server: success prints a summary and writes the termination message; a failure exits non-zero
// with the reason on stderr and in the termination message.
func TestReportCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := outputtest.Recommend(outputtest.SearchInput, dir); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-8")
	exitFile := filepath.Join(t.TempDir(), "search-exit")
	if err := os.WriteFile(exitFile, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	term := filepath.Join(t.TempDir(), "termination-log")

	execute := func(images string) (string, string, error) {
		cmd := newReportCommand(&reportOptions{RESTConfig: reportEnv(t).Config})
		var stdout, stderr bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs([]string{"--run-name", run.Name, "--namespace", ns, "--output-dir", dir, "--runtime-images", images,
			"--search-exit-file", exitFile, "--termination-log", term, "--poll-interval", "10ms", "--progress-interval", "10ms"})
		err := cmd.ExecuteContext(context.Background())
		return stdout.String(), stderr.String(), err
	}

	// No image for the chosen backends: publication fails visibly.
	_, stderr, err := execute("trtllm=img:1")
	if err == nil || !strings.Contains(stderr, "no runtime image") {
		t.Fatalf("err = %v, stderr = %q", err, stderr)
	}
	msg, _ := os.ReadFile(term)
	if !strings.Contains(string(msg), "no runtime image") {
		t.Errorf("termination message %q", msg)
	}

	stdout, stderr, err := execute("vllm=v:1.3.1,sglang=s:1.3.1")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "published 2 candidate(s)") {
		t.Errorf("stdout %q", stdout)
	}
	if n := len(listCandidates(t, ns)); n != 2 {
		t.Errorf("%d Candidates, want 2", n)
	}
	msg, _ = os.ReadFile(term)
	if !strings.Contains(string(msg), "published 2") {
		t.Errorf("termination message %q", msg)
	}
}

// runWriteInput runs `report --write-input` against the real API server.
func runWriteInput(t *testing.T, ns, run, dir, expected string, extra ...string) (string, error) {
	t.Helper()
	cmd := newReportCommand(&reportOptions{RESTConfig: reportEnv(t).Config})
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(append([]string{"--write-input", "--run-name", run, "--namespace", ns, "--input-dir", dir,
		"--input-hash", expected,
		"--poll-interval", "20ms", "--termination-log", filepath.Join(t.TempDir(), "term")}, extra...))
	err := cmd.ExecuteContext(context.Background())
	return stdout.String() + stderr.String(), err
}

func recordInput(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun, raw []byte, hash string) {
	t.Helper()
	run = getRun(t, run.Namespace, run.Name)
	run.Status.AISimulate = &v1beta2.AISimulateStatus{Input: &runtime.RawExtension{Raw: raw}, InputHash: hash}
	if err := reportEnv(t).Client.Status().Update(context.Background(), run); err != nil {
		t.Error(err)
	}
}

// recordedInput is an effective input as the Run controller records it.
func recordedInput(t *testing.T) *aisimulate.Input {
	t.Helper()
	in, err := aisimulate.Canonicalize([]byte(`{"engine":{"model":"meta-llama/Llama-3.1-8B-Instruct","hardware":"h200_sxm"},
		"traffic":{"load":{"type":"concurrency","concurrency":10}},"optimizer":{"max_trials":40}}`))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestWriteInput: the input init container waits for the Run to record its input (the Job is
// created before that status write lands), then writes exactly the recorded input as YAML.
func TestWriteInput(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-in")
	in := recordedInput(t)
	go func() {
		time.Sleep(300 * time.Millisecond)
		recordInput(t, run, in.JSON, in.Hash)
	}()
	dir := t.TempDir()
	out, err := runWriteInput(t, ns, run.Name, dir, in.Hash)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, jobcontract.InputFile))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := in.YAML()
	if string(got) != string(want) {
		t.Errorf("input file:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(out, in.Hash) {
		t.Errorf("output %q does not name the hash", out)
	}
}

// TestWriteInputRejectsAlteredInput: a recorded input that does not hash to inputHash is never
// handed to the search.
func TestWriteInputRejectsAlteredInput(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-bad")
	in := recordedInput(t)
	altered := bytes.Replace(in.JSON, []byte("Llama-3.1-8B"), []byte("Llama-3.1-70B"), 1)
	recordInput(t, run, altered, in.Hash)
	dir := t.TempDir()
	out, err := runWriteInput(t, ns, run.Name, dir, in.Hash)
	if err == nil || !strings.Contains(out, "hashes to") {
		t.Fatalf("err = %v, output %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, jobcontract.InputFile)); !os.IsNotExist(err) {
		t.Errorf("input file written for an altered input: %v", err)
	}
}

// TestWriteInputRejectsForgedInputAndHash: whoever could write the Run's status (a search
// identity before the search-identity policy kept it off status.aisimulate) records another input
// together with its matching inputHash. The input init container checks the input against the
// hash the operator wrote on the search Job (--input-hash, from the pod's annotation), not
// against the status, so the forged input never reaches the search. Reverted (checking only
// status.aisimulate.inputHash), the forged input is written.
func TestWriteInputRejectsForgedInputAndHash(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-forged")
	in := recordedInput(t)
	forged, err := aisimulate.Canonicalize(bytes.Replace(in.JSON, []byte(`"max_trials":40`), []byte(`"max_trials":100000`), 1))
	if err != nil {
		t.Fatal(err)
	}
	recordInput(t, run, forged.JSON, forged.Hash)
	dir := t.TempDir()
	out, err := runWriteInput(t, ns, run.Name, dir, in.Hash)
	if err == nil || !strings.Contains(out, "the operator recorded") || !strings.Contains(out, in.Hash) {
		t.Fatalf("err = %v, output %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, jobcontract.InputFile)); !os.IsNotExist(err) {
		t.Errorf("input file written for a forged input: %v", err)
	}
	if _, err := runWriteInput(t, ns, run.Name, dir, ""); err == nil {
		t.Error("--write-input without the operator's hash succeeded")
	}
}

// baselineInput is a baseline prediction input as the Run controller records it.
func baselineInput(t *testing.T) *aisimulate.Input {
	t.Helper()
	in, err := aisimulate.Canonicalize([]byte(`{"engine":{"model":"meta-llama/Llama-3.1-8B-Instruct","hardware":"h200_sxm",
		"backend":"vllm","workers":{"aggregated":{"tp":1,"replicas":1}}},"traffic":{"load":{"type":"concurrency","concurrency":10}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func recordBaseline(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun, in *aisimulate.Input, raw []byte, hash string) {
	t.Helper()
	run = getRun(t, run.Namespace, run.Name)
	run.Status.AISimulate = &v1beta2.AISimulateStatus{Input: &runtime.RawExtension{Raw: in.JSON}, InputHash: in.Hash,
		Baseline: &v1beta2.BaselineInputStatus{Candidate: "llm-run-1-0001", Input: &runtime.RawExtension{Raw: raw}, InputHash: hash}}
	if err := reportEnv(t).Client.Status().Update(context.Background(), run); err != nil {
		t.Error(err)
	}
}

// TestWriteInputBaseline: in the baseline Job (its baseline hash instead of the search's), the
// input init container writes the recorded baseline input, and refuses one that does not hash
// to the Job's (a forged input with its matching hash, or an altered one); a pod naming both
// hashes is refused.
func TestWriteInputBaseline(t *testing.T) {
	in, base := recordedInput(t), baselineInput(t)
	forged, err := aisimulate.Canonicalize(bytes.Replace(base.JSON, []byte(`"tp":1`), []byte(`"tp":8`), 1))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		raw      []byte
		hash     string
		search   string
		expected string
		wantErr  string
	}{
		"recorded":              {raw: base.JSON, hash: base.Hash, expected: base.Hash},
		"forged input and hash": {raw: forged.JSON, hash: forged.Hash, expected: base.Hash, wantErr: "the operator recorded"},
		"altered input":         {raw: forged.JSON, hash: base.Hash, expected: base.Hash, wantErr: "the operator recorded"},
		"status hash disagrees": {raw: base.JSON, hash: forged.Hash, expected: base.Hash, wantErr: "status.aisimulate.baseline.inputHash"},
		"both hashes":           {raw: base.JSON, hash: base.Hash, search: in.Hash, expected: base.Hash, wantErr: "not both"},
	} {
		t.Run(name, func(t *testing.T) {
			ns := newNamespace(t)
			run := newRun(t, ns, "llm-run-base")
			recordBaseline(t, run, in, tc.raw, tc.hash)
			dir := t.TempDir()
			out, err := runWriteInput(t, ns, run.Name, dir, tc.search, "--baseline-input-hash", tc.expected)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(out, tc.wantErr) {
					t.Fatalf("err = %v, output %q, want %q", err, out, tc.wantErr)
				}
				for _, f := range []string{jobcontract.InputFile, jobcontract.BaselineInputFile} {
					if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
						t.Errorf("%s written for a refused baseline: %v", f, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			got, err := os.ReadFile(filepath.Join(dir, jobcontract.BaselineInputFile))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := base.YAML()
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("baseline file (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(dir, jobcontract.InputFile)); !os.IsNotExist(err) {
				t.Errorf("the baseline pod got the search's input: %v", err)
			}
		})
	}
}

// TestWriteInputWaitsForTheBaseline: the baseline Job's input container waits until the Run
// records its baseline.
func TestWriteInputWaitsForTheBaseline(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-wait")
	in, base := recordedInput(t), baselineInput(t)
	go func() {
		time.Sleep(300 * time.Millisecond)
		recordBaseline(t, run, in, base.JSON, base.Hash)
	}()
	dir := t.TempDir()
	if out, err := runWriteInput(t, ns, run.Name, dir, "", "--baseline-input-hash", base.Hash); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, jobcontract.BaselineInputFile)); err != nil {
		t.Error(err)
	}
}

// reportArgs are the `report` flags of a local run against ns/run whose watched container
// ended with the code in exitFile.
func reportArgs(t *testing.T, ns, run, dir, exitFile string) []string {
	return []string{"--run-name", run, "--namespace", ns, "--output-dir", dir, "--runtime-images", "vllm=v:1.3.1,sglang=s:1.3.1",
		"--search-exit-file", exitFile, "--termination-log", filepath.Join(t.TempDir(), "term"), "--poll-interval", "10ms",
		"--progress-interval", "10ms", "--publish-interval", "0"}
}

// runSidecar runs `report --outcome-file` as the kubelet runs the reporter sidecar: until the
// outcome is written, then SIGTERM (the context ends).
func runSidecar(t *testing.T, args []string, outcome string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		cmd := newReportCommand(&reportOptions{RESTConfig: reportEnv(t).Config})
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append(args, "--outcome-file", outcome))
		done <- cmd.ExecuteContext(ctx)
	}()
	deadline := time.After(time.Minute)
	for {
		if _, err := os.Stat(outcome); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the sidecar exited before writing its outcome: %v", err)
		case <-deadline:
			t.Fatal("no outcome within a minute")
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the sidecar exited after writing its outcome, before SIGTERM (the kubelet would start it again): %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	return <-done
}

// awaitOutcomeCommand runs the publication container, `report --await-outcome`.
func awaitOutcomeCommand(t *testing.T, outcome string) (string, error) {
	t.Helper()
	cmd := newReportCommand(&reportOptions{})
	term := filepath.Join(t.TempDir(), "term")
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--await-outcome", outcome, "--termination-log", term, "--poll-interval", "10ms"})
	err := cmd.ExecuteContext(context.Background())
	msg, _ := os.ReadFile(term)
	return string(msg), err
}

// TestReporterSidecar: as the pod's sidecar the reporter publishes, writes its outcome and
// waits for SIGTERM; started again after that (the kubelet restarts a sidecar that exits), it
// publishes nothing again. The publication container ends with the outcome: 0 once published,
// the reporter's own exit code and message when publication failed.
func TestReporterSidecar(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := outputtest.Recommend(outputtest.SearchInput, dir); err != nil {
		t.Fatal(err)
	}
	exitFile := filepath.Join(t.TempDir(), "search-exit")
	if err := os.WriteFile(exitFile, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-side")
	outcome := filepath.Join(t.TempDir(), "outcome.json")
	if err := runSidecar(t, reportArgs(t, ns, run.Name, dir, exitFile), outcome); err != nil {
		t.Fatalf("the sidecar stopped by SIGTERM: %v", err)
	}
	if n := len(listCandidates(t, ns)); n != 2 {
		t.Fatalf("%d Candidates, want 2", n)
	}
	msg, err := awaitOutcomeCommand(t, outcome)
	if err != nil || !strings.Contains(msg, "published 2 candidate(s)") {
		t.Errorf("the publication container: %v, termination message %q", err, msg)
	}

	// Started again once it has published: it publishes nothing again.
	for _, c := range listCandidates(t, ns) {
		if err := reportEnv(t).Client.Delete(context.Background(), &c); err != nil {
			t.Fatal(err)
		}
	}
	if err := runSidecar(t, reportArgs(t, ns, run.Name, dir, exitFile), outcome); err != nil {
		t.Fatal(err)
	}
	if n := len(listCandidates(t, ns)); n != 0 {
		t.Errorf("a restarted sidecar published %d Candidates again", n)
	}

	// A publication that fails: the publication container exits with the reporter's code.
	failed := newRun(t, ns, "llm-run-side-fail")
	failedOutcome := filepath.Join(t.TempDir(), "outcome.json")
	args := reportArgs(t, ns, failed.Name, dir, exitFile)
	args[7] = "trtllm=img:1" // no image for the chosen backends
	_ = runSidecar(t, args, failedOutcome)
	msg, err = awaitOutcomeCommand(t, failedOutcome)
	if err == nil || exitCode(err) != 1 || !strings.Contains(msg, "no runtime image") {
		t.Errorf("the publication container after a failed publication: exit %d (%v), termination message %q", exitCode(err), err, msg)
	}
}

// TestBaselineReportCommand: `report --baseline` publishes the baseline's prediction as
// status.baseline once the watched (baseline) container ended.
func TestBaselineReportCommand(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-predict")
	in, base := recordedInput(t), baselineInput(t)
	recordBaseline(t, run, in, base.JSON, base.Hash)
	dir := t.TempDir()
	prediction := `{"completed_requests": 36, "duration_ms": 8580.0, "gpu_hours": 0.0023833333333333333, "mean_ttft_ms": 40.25,
		"mean_tpot_ms": 9.75, "output_throughput_tok_s": 537.0}`
	if err := os.WriteFile(filepath.Join(dir, "prediction.json"), []byte(prediction), 0o644); err != nil {
		t.Fatal(err)
	}
	exitFile := filepath.Join(t.TempDir(), "baseline-exit")
	if err := os.WriteFile(exitFile, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newReportCommand(&reportOptions{RESTConfig: reportEnv(t).Config})
	var stdout bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(append(reportArgs(t, ns, run.Name, dir, exitFile), "--baseline"))
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := getRun(t, ns, run.Name).Status.Baseline
	if b == nil || b.Candidate != "llm-run-1-0001" || b.CompletedRequests != 36 || b.Metrics == nil || b.Error != "" {
		t.Errorf("status.baseline = %+v", b)
	}
	if !strings.Contains(stdout.String(), "published the baseline of llm-run-1-0001") {
		t.Errorf("stdout %q", stdout.String())
	}
}
