package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

const nullRequest = `apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: NAME
  namespace: default
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  aisimulate:
    inputOverrides:
      traffic:
        stop:
          requests: null
          requests_per_load_unit: 10
`

// kubectl runs the real kubectl (built into bin/) against the test API server.
func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := tryKubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// tryKubectl runs kubectl and returns its combined output and error.
func tryKubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	user, err := env.Env.ControlPlane.AddUser(envtestAdmin(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(testenv.Root(), "bin", "kubectl"), append([]string{"--kubeconfig", path}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// storedStop reads traffic.stop of the stored inputOverrides as raw JSON.
func storedStop(t *testing.T, name string) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRequest"))
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u); err != nil {
		t.Fatal(err)
	}
	stop, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "aisimulate", "inputOverrides", "traffic", "stop")
	out, _ := json.Marshal(stop)
	return string(out)
}

// TestNullSurvival records which ways of submitting keep a null inside inputOverrides (RFC 7386
// deletion) through the real API server and the real kubectl. docs/guide/input-overrides.md documents
// the result for users; a change in any row fails here. Where the null is dropped, the stop policy
// ends up with two counts and admission rejects the request, naming the override path, so nothing
// is stored that AISimulate would reject later.
func TestNullSurvival(t *testing.T) {
	ctx := context.Background()
	// before is a valid earlier version of the same request: stop {requests: 5}.
	before := func(s string) string {
		return strings.Replace(s, "          requests: null\n          requests_per_load_unit: 10\n", "          requests: 5\n", 1)
	}
	const kept = `{"requests":null,"requests_per_load_unit":10}`
	const rejected = "rejected"
	cases := []struct {
		path   string
		submit func(manifest string) error
		want   string
	}{
		{"typed client create", func(m string) error {
			obj := &v1beta2.DynamoGraphDeploymentRequest{}
			if err := yaml.Unmarshal([]byte(m), obj); err != nil {
				t.Fatal(err)
			}
			return k8s.Create(ctx, obj)
		}, kept},
		{"kubectl create", func(m string) error { _, err := tryKubectl(t, m, "create", "-f", "-"); return err }, kept},
		{"kubectl replace", func(m string) error {
			kubectl(t, before(m), "create", "-f", "-")
			_, err := tryKubectl(t, m, "replace", "-f", "-")
			return err
		}, kept},
		{"kubectl apply --server-side (create)", func(m string) error {
			_, err := tryKubectl(t, m, "apply", "--server-side", "-f", "-")
			return err
		}, kept},
		{"kubectl apply --server-side (update)", func(m string) error {
			kubectl(t, before(m), "apply", "--server-side", "-f", "-")
			_, err := tryKubectl(t, m, "apply", "--server-side", "-f", "-")
			return err
		}, kept},
		// Client-side apply computes a merge patch in which null means "delete my field", so
		// the null never reaches the stored object.
		{"kubectl apply (client-side, create)", func(m string) error {
			out, err := tryKubectl(t, m, "apply", "-f", "-")
			if err != nil && !strings.Contains(out, "spec.aisimulate.inputOverrides.traffic.stop") {
				t.Errorf("the rejection must name the override path: %s", out)
			}
			return err
		}, rejected},
		{"kubectl apply (client-side, update)", func(m string) error {
			kubectl(t, before(m), "apply", "-f", "-")
			out, err := tryKubectl(t, m, "apply", "-f", "-")
			if err != nil && !strings.Contains(out, "spec.aisimulate.inputOverrides.traffic.stop") {
				t.Errorf("the rejection must name the override path: %s", out)
			}
			return err
		}, rejected},
	}
	for i, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			name := fmt.Sprintf("nulls-%d", i)
			err := tc.submit(strings.Replace(nullRequest, "NAME", name, 1))
			got := rejected
			if err == nil {
				got = storedStop(t, name)
			}
			if got != tc.want {
				t.Errorf("outcome %s (err %v), want %s", got, err, tc.want)
			}
		})
	}
}
