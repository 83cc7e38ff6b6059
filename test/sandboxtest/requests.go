package sandboxtest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// Request documents of the suites, formats with the request's name: a Llama-3.1-8B search whose
// length on the sandbox is set by the optimizer's trials and the simulated requests.
var (
	// TinyRequest is a search of a few seconds.
	TinyRequest = searchRequest(4, 50)
	// SlowRequest is a search of about 15 s: long enough to act on it mid-search.
	SlowRequest = searchRequest(1000, 2000)
)

func searchRequest(trials, requests int) string {
	return `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: ` + strconv.Itoa(trials) + `
      traffic:
        stop:
          requests: ` + strconv.Itoa(requests) + "\n"
}

// ParseRequest decodes a request document strictly.
func ParseRequest(doc string) (*v1beta2.DynamoGraphDeploymentRequest, error) {
	var d v1beta2.DynamoGraphDeploymentRequest
	if err := yaml.UnmarshalStrict([]byte(doc), &d); err != nil {
		return nil, fmt.Errorf("parsing request: %w", err)
	}
	return &d, nil
}

// CreateRequest creates the request document in ns and returns what it sent.
func (e *Env) CreateRequest(t testing.TB, ns, doc string) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	d, err := ParseRequest(doc)
	if err != nil {
		t.Fatal(err)
	}
	d.Namespace = ns
	if err := e.Client.Create(context.Background(), d); err != nil {
		t.Fatalf("creating %s/%s: %v", ns, d.Name, err)
	}
	return d
}

// OperatorAdmits tells whether admission reaches the operator's webhooks (a dry-run create of
// TinyRequest in namespace default).
func (e *Env) OperatorAdmits(ctx context.Context) (bool, string, error) {
	d, err := ParseRequest(fmt.Sprintf(TinyRequest, "admission-probe"))
	if err != nil {
		return false, "", err
	}
	d.Namespace = "default"
	err = e.Client.Create(ctx, d, client.DryRunAll)
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	return err == nil, fmt.Sprint(err), nil
}

// Completed returns the reason and message of the Run's Completed condition when it is True.
func Completed(r *v1beta2.DynamoGraphDeploymentRun) (reason, message string, done bool) {
	for _, c := range r.Status.Conditions {
		if c.Type == v1beta2.ConditionCompleted && c.Status == "True" {
			return c.Reason, c.Message, true
		}
	}
	return "", "", false
}

// WaitRunDone waits until the Run is terminal (Completed=True) and returns it.
func (e *Env) WaitRunDone(t testing.TB, ns, name string, timeout time.Duration) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	var run v1beta2.DynamoGraphDeploymentRun
	WaitFor(t, timeout, 250*time.Millisecond, "Run "+name+" to complete", func(ctx context.Context) (bool, string, error) {
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &run); err != nil {
			return false, "", err
		}
		_, _, done := Completed(&run)
		return done, fmt.Sprintf("phase %s: %s", run.Status.Phase, run.Status.Message), nil
	})
	return &run
}

// SearchLogTail returns the search pod of a finished Run and its search container's termination
// message: with FallbackToLogsOnError, the tail of the search's log, which the kubelet keeps on
// the pod and the Run's message only points to.
func SearchLogTail(t testing.TB, c client.Client, run *v1beta2.DynamoGraphDeploymentRun) (pod, tail string) {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(run.Namespace), client.MatchingLabels{v1beta2.LabelRunName: run.Name}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == jobcontract.SearchContainer && cs.State.Terminated != nil {
				return p.Name, cs.State.Terminated.Message
			}
		}
	}
	t.Fatalf("Run %s has no pod whose search container ended", run.Name)
	return "", ""
}
