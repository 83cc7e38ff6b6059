//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// traceRequest is examples/demo/trace/llama-trace.yaml: the sample trace from the ConfigMap
// llama-traffic, key trace.jsonl.
func traceRequest(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "examples", "demo", "trace", "llama-trace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTraceFromConfigMap (issue #14): a trace in a ConfigMap is mounted into the search pod,
// replayed by aisim, and the Run succeeds with ranked Candidates; the Run records the
// ConfigMap's version and content hash.
func TestTraceFromConfigMap(t *testing.T) {
	ns := newNamespace(t)
	content, err := os.ReadFile(filepath.Join(root, "examples", "traces", "mooncake-sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{Data: map[string]string{"trace.jsonl": string(content)}}
	cm.Namespace, cm.Name = ns, "llama-traffic"
	if err := k8s.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	req := env.CreateRequest(t, ns, string(traceRequest(t)))
	run := waitRequestDone(t, ns, req.Name)
	requireSucceededWithCandidates(t, run)
	sum := sha256.Sum256(content)
	tr := run.Status.AISimulate.Trace
	if tr == nil || tr.ConfigMap == nil || tr.ConfigMap.Name != "llama-traffic" || tr.ConfigMap.ResourceVersion != cm.ResourceVersion ||
		tr.ConfigMap.SHA256 != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("status.aisimulate.trace = %+v, want the ConfigMap llama-traffic at resourceVersion %s", tr, cm.ResourceVersion)
	}
	if in := string(run.Status.AISimulate.Input.Raw); !strings.Contains(in, `"type":"trace"`) || !strings.Contains(in, "/var/run/dgdr/trace/") {
		t.Errorf("the effective input does not replay the mounted trace: %s", in)
	}
	cands, err := candidatesOfRun(context.Background(), ns, run.Name)
	if err != nil {
		t.Fatal(err)
	}
	var ranks []int32
	for _, c := range cands {
		ranks = append(ranks, c.Status.Rank)
	}
	slices.Sort(ranks)
	for i, r := range ranks {
		if r != int32(i+1) {
			t.Fatalf("candidate ranks %v are not 1..%d", ranks, len(ranks))
		}
	}
	t.Logf("%s: %s with %d ranked candidates", req.Name, run.Name, len(cands))
}

// TestTraceConfigMapMissing (issue #14): a request whose trace ConfigMap does not exist ends
// its Run with the terminal reason TraceSourceMissing naming the ConfigMap, without a Job.
func TestTraceConfigMapMissing(t *testing.T) {
	ns := newNamespace(t)
	req := env.CreateRequest(t, ns, string(traceRequest(t)))
	run := waitRequestDone(t, ns, req.Name)
	reason, msg, _ := sandboxtest.Completed(run)
	if reason != v1beta2.ReasonTraceSourceMissing || !strings.Contains(msg, ns+"/llama-traffic") {
		t.Fatalf("Run %s ended %s (%q), want %s naming %s/llama-traffic", run.Name, reason, msg, v1beta2.ReasonTraceSourceMissing, ns)
	}
	if run.Status.JobRef != nil {
		t.Errorf("Run %s created Job %s for a missing trace", run.Name, run.Status.JobRef.Name)
	}
	t.Logf("message: %s", msg)
}
