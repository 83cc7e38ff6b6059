//go:build e2e

// The e2e tests drive real scenarios on the sandbox (dgdr-sandbox): a real kube-apiserver,
// kube-controller-manager (Job controller, garbage collector) and kube-scheduler, the
// process-based node agent and the operator. Run with `make test-e2e` (DGDR_E2E=1, -tags e2e).
// A running sandbox is reused (and left running); otherwise TestMain starts one and stops it
// at the end unless DGDR_E2E_KEEP=1.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

var (
	env        *sandboxtest.Env
	root       string
	kubeconfig string
	k8s        client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run runs the suite on the sandbox, which serves the Dynamo platform's DynamoGraphDeployment
// CRD (promoted deployments are validated by the upstream schema) and realizes deployments.
func run(m *testing.M) int {
	return sandboxtest.Main(m, "DGDR_E2E", "DGDR_E2E_KEEP", sandboxtest.Options{
		Suite: "e2e", QPS: 50, Burst: 100,
	}, func(e *sandboxtest.Env) { env, root, kubeconfig, k8s = e, e.Root, e.Kubeconfig, e.Client })
}

// Timeouts of the scenarios.
const (
	searchTimeout = 3 * time.Minute
	poll          = 250 * time.Millisecond
)

// newNamespace creates a namespace for one test, named after it, that the sandbox's realizer
// leaves alone: a deployment a test creates there holds no GPUs, and a test that plays the Dynamo
// operator (writing the deployments' status) is not raced. realizedNamespace is served.
func newNamespace(t *testing.T) string {
	t.Helper()
	return sandboxtest.UnrealizedNamespace(t, k8s, "")
}

// waitFor polls cond until it returns true, failing the test after timeout with the last
// description cond gave.
func waitFor(t *testing.T, timeout time.Duration, what string, cond sandboxtest.Condition) {
	t.Helper()
	sandboxtest.WaitFor(t, timeout, poll, what, cond)
}

func getDGDR(ctx context.Context, ns, name string) (*v1beta2.DynamoGraphDeploymentRequest, error) {
	var d v1beta2.DynamoGraphDeploymentRequest
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)
	return &d, err
}

func getRun(ctx context.Context, ns, name string) (*v1beta2.DynamoGraphDeploymentRun, error) {
	var r v1beta2.DynamoGraphDeploymentRun
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &r)
	return &r, err
}

func runsOf(ctx context.Context, ns, request string) ([]v1beta2.DynamoGraphDeploymentRun, error) {
	var l v1beta2.DynamoGraphDeploymentRunList
	err := k8s.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRequestName: request})
	return l.Items, err
}

func candidatesOfRun(ctx context.Context, ns, run string) ([]v1beta2.DynamoGraphDeploymentCandidate, error) {
	var l v1beta2.DynamoGraphDeploymentCandidateList
	err := k8s.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: run})
	return l.Items, err
}

func jobsOf(ctx context.Context, ns, request string) ([]batchv1.Job, error) {
	var l batchv1.JobList
	err := k8s.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRequestName: request})
	return l.Items, err
}

// waitActiveRun waits until the request has accepted generation gen and returns its active
// (or, if it already finished, latest) Run name.
func waitRunForGeneration(t *testing.T, ns, request string, gen int64) string {
	t.Helper()
	name := ""
	waitFor(t, 30*time.Second, fmt.Sprintf("a Run of %s generation %d", request, gen), func(ctx context.Context) (bool, string, error) {
		runs, err := runsOf(ctx, ns, request)
		if err != nil {
			return false, "", err
		}
		for _, r := range runs {
			if r.Labels[v1beta2.LabelRequestGeneration] == fmt.Sprint(gen) {
				name = r.Name
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d runs", len(runs)), nil
	})
	return name
}

// waitSearchRunning waits until the Run's search container runs (its pod is Running on the
// sandbox node), i.e. the search is really in progress.
func waitSearchRunning(t *testing.T, ns, run string) { t.Helper(); env.WaitSearchRunning(t, ns, run) }
