// Package reportertest gives the tests of the reporter's readers (dgdrctl, the web view) real
// search results: the real aisim recommender's output, published by the real reporter into a
// real API server.
package reportertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
)

// RuntimeImages are the backends' runtime images the published Candidates render with (the
// fixtures' inputs select vLLM and SGLang candidates).
var RuntimeImages = map[string]v1alpha1.RuntimeImage{
	output.BackendVLLM:   {Image: "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1", EngineVersion: "0.24.0"},
	output.BackendSGLang: {Image: "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1", EngineVersion: "0.5.21"},
}

// Publish runs `aisim recommend` on the input document (YAML) in workDir and lets the reporter
// publish its result for the Run ns/runName, as the search pod would after a successful search.
// It returns the reporter's outcome and aisim's output directory.
func Publish(ctx context.Context, cfg *rest.Config, aisimBin, workDir, ns, runName, input string) (*reporter.Publication, string, error) {
	dir, in := filepath.Join(workDir, "out"), filepath.Join(workDir, "input.yaml")
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		return nil, "", err
	}
	if out, err := exec.Command(aisimBin, "recommend", "-c", in, "--output-dir", dir, "--format", "json").CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("aisim: %w\n%s", err, out)
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, "", err
	}
	exited := make(chan int, 1)
	exited <- 0
	rep := &reporter.Reporter{Client: wc, Namespace: ns, RunName: runName, OutputDir: dir, Watcher: reporter.ChanWatcher(exited),
		RuntimeImages: RuntimeImages, PollInterval: 10 * time.Millisecond, ProgressInterval: 10 * time.Millisecond}
	out, err := rep.Run(ctx)
	return out, dir, err
}

// Start builds aisim into dir (or takes $AISIM_BIN) and starts a real API server with the Dynamo
// platform's DynamoGraphDeployment CRD (upstreamcrd.DGD, so a promotion is really created and
// validated by the upstream schema): the shared start of the readers' TestMains.
func Start(dir string) (*testenv.Env, string, error) {
	aisimBin, err := outputtest.BuildAISim(dir)
	if err != nil {
		return nil, "", err
	}
	dgd, err := upstreamcrd.DGD()
	if err != nil {
		return nil, "", err
	}
	env, err := testenv.Start(testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{dgd}})
	if err != nil {
		return nil, "", fmt.Errorf("starting the control plane: %w", err)
	}
	return env, aisimBin, nil
}

// SetRunState sets the Run's phase and Completed condition, as the Run controller would.
func SetRunState(t testing.TB, c client.Client, run *v1beta2.DynamoGraphDeploymentRun, phase v1beta2.RunPhase, status metav1.ConditionStatus, reason string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
		t.Fatal(err)
	}
	run.Status.Phase = phase
	meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionCompleted, Status: status, Reason: reason, Message: "test"})
	if err := c.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}
}
