package reporter_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
)

// writeInput runs `report --write-input` against the real API server.
func writeInput(t *testing.T, ns, run, dir, expected string) (string, error) {
	t.Helper()
	cmd := reporter.NewCommandWithOptions(&reporter.Options{RESTConfig: env.Config})
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--write-input", "--run-name", run, "--namespace", ns, "--input-dir", dir,
		"--input-hash", expected,
		"--poll-interval", "20ms", "--termination-log", filepath.Join(t.TempDir(), "term")})
	err := cmd.ExecuteContext(context.Background())
	return stdout.String() + stderr.String(), err
}

func recordInput(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun, raw []byte, hash string) {
	t.Helper()
	run = getRun(t, run.Namespace, run.Name)
	run.Status.AISimulate = &v1beta2.AISimulateStatus{Input: &runtime.RawExtension{Raw: raw}, InputHash: hash}
	if err := k8s.Status().Update(context.Background(), run); err != nil {
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
	run := newRun(t, ns, "llm-run-in", 2)
	in := recordedInput(t)
	go func() {
		time.Sleep(300 * time.Millisecond)
		recordInput(t, run, in.JSON, in.Hash)
	}()
	dir := t.TempDir()
	out, err := writeInput(t, ns, run.Name, dir, in.Hash)
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
	run := newRun(t, ns, "llm-run-bad", 2)
	in := recordedInput(t)
	altered := bytes.Replace(in.JSON, []byte("Llama-3.1-8B"), []byte("Llama-3.1-70B"), 1)
	recordInput(t, run, altered, in.Hash)
	dir := t.TempDir()
	out, err := writeInput(t, ns, run.Name, dir, in.Hash)
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
	run := newRun(t, ns, "llm-run-forged", 2)
	in := recordedInput(t)
	forged, err := aisimulate.Canonicalize(bytes.Replace(in.JSON, []byte(`"max_trials":40`), []byte(`"max_trials":100000`), 1))
	if err != nil {
		t.Fatal(err)
	}
	recordInput(t, run, forged.JSON, forged.Hash)
	dir := t.TempDir()
	out, err := writeInput(t, ns, run.Name, dir, in.Hash)
	if err == nil || !strings.Contains(out, "the operator recorded") || !strings.Contains(out, in.Hash) {
		t.Fatalf("err = %v, output %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, jobcontract.InputFile)); !os.IsNotExist(err) {
		t.Errorf("input file written for a forged input: %v", err)
	}
	if _, err := writeInput(t, ns, run.Name, dir, ""); err == nil {
		t.Error("--write-input without the operator's hash succeeded")
	}
}
