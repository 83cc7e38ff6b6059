package run_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// withTrace replaces the static workload by a mooncake trace from src.
func withTrace(src *v1beta2.TraceSource) func(*v1beta2.DynamoGraphDeploymentRun) {
	return withTraceOf(v1beta2.TraceFormatMooncake, src)
}

// withTraceOf replaces the static workload by a trace of format from src.
func withTraceOf(format v1beta2.TraceFormat, src *v1beta2.TraceSource) func(*v1beta2.DynamoGraphDeploymentRun) {
	return func(r *v1beta2.DynamoGraphDeploymentRun) {
		speed := 1.0
		r.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{Format: format,
			Source: src, Replay: &v1beta2.TraceReplay{ArrivalSpeedupRatio: &speed}}}
	}
}

// TestDynamoTraceIsSearchedInItsFormat: the API server accepts a Run replaying Dynamo's request
// trace (a record captured from the real frontend), and its effective input reads the mounted
// file in the dynamo format.
func TestDynamoTraceIsSearchedInItsFormat(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	captured, err := os.ReadFile("../../../tools/aisim/trace/testdata/dynamo/frontend-capture.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(captured), "\n")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "captured"}, Data: map[string]string{"requests.jsonl": first + "\n"}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	r := createRun(t, ns, "dynamo-run-1", withTraceOf(v1beta2.TraceFormatDynamo,
		&v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "captured", Key: "requests.jsonl"}}))
	waitForJob(t, r)
	got := getRun(t, r)
	var input struct {
		Traffic struct {
			Source struct {
				Type   string   `json:"type"`
				Format string   `json:"format"`
				Paths  []string `json:"paths"`
			} `json:"source"`
		} `json:"traffic"`
	}
	if err := json.Unmarshal(got.Status.AISimulate.Input.Raw, &input); err != nil {
		t.Fatal(err)
	}
	src := input.Traffic.Source
	if src.Type != "trace" || src.Format != string(v1beta2.TraceFormatDynamo) || len(src.Paths) != 1 || src.Paths[0] != aisimulate.TraceMountDir+"/"+aisimulate.TraceConfigMapFile {
		t.Errorf("traffic.source = %+v, want the mounted file in the dynamo format", src)
	}
}

// TestTraceFromAConfigMapIsMountedAndRecorded: the search container gets the ConfigMap's key
// read-only at the path the effective input names, and the Run records the ConfigMap's
// resourceVersion and content hash.
func TestTraceFromAConfigMapIsMountedAndRecorded(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	content := `{"timestamp":0,"input_length":512,"output_length":16,"hash_ids":[1]}` + "\n"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traffic"}, Data: map[string]string{"t.jsonl": content}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	r := createRun(t, ns, "trace-run-1", withTrace(&v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "traffic", Key: "t.jsonl"}}))
	job := waitForJob(t, r)

	spec := job.Spec.Template.Spec
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].ConfigMap != nil && spec.Volumes[i].ConfigMap.Name == "traffic" {
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil {
		t.Fatalf("no volume of ConfigMap traffic in %+v", spec.Volumes)
	}
	if diff := cmp.Diff([]corev1.KeyToPath{{Key: "t.jsonl", Path: aisimulate.TraceConfigMapFile}}, vol.ConfigMap.Items); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	var mounted bool
	for _, m := range spec.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == vol.Name && m.MountPath == aisimulate.TraceMountDir && m.ReadOnly)
	}
	if !mounted {
		t.Errorf("the search container does not mount the trace read-only at %s: %+v", aisimulate.TraceMountDir, spec.Containers[0].VolumeMounts)
	}

	got := getRun(t, r)
	if !strings.Contains(string(got.Status.AISimulate.Input.Raw), `"paths":["`+aisimulate.TraceMountDir+"/"+aisimulate.TraceConfigMapFile+`"]`) {
		t.Errorf("the effective input does not name the mounted file: %s", got.Status.AISimulate.Input.Raw)
	}
	var live corev1.ConfigMap
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), &live); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	want := &v1beta2.TraceSourceStatus{ConfigMap: &v1beta2.TraceConfigMapStatus{Name: "traffic", Key: "t.jsonl",
		ResourceVersion: live.ResourceVersion, SHA256: "sha256:" + hex.EncodeToString(sum[:])}}
	if diff := cmp.Diff(want, got.Status.AISimulate.Trace); diff != "" {
		t.Errorf("status.aisimulate.trace (-want +got):\n%s", diff)
	}
}

// TestMissingTraceSourceEndsTheRun: a missing ConfigMap, key or claim ends the Run with
// TraceSourceMissing naming it, and no Job is created.
func TestMissingTraceSourceEndsTheRun(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	if err := k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "present"}, Data: map[string]string{"other": "x"}}); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		src  *v1beta2.TraceSource
		want string
	}{
		"no-configmap": {&v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "absent", Key: "t"}}, "ConfigMap " + ns + "/absent"},
		"no-key":       {&v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "present", Key: "t.jsonl"}}, `no key "t.jsonl"`},
		"no-claim":     {&v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "archive", Path: "t.jsonl"}}, "PersistentVolumeClaim " + ns + "/archive"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := createRun(t, ns, name+"-run-1", withTrace(tc.src))
			got := waitForReason(t, r, v1beta2.ReasonTraceSourceMissing)
			if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionCompleted); !strings.Contains(c.Message, tc.want) {
				t.Errorf("message %q does not name %s", c.Message, tc.want)
			}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(r.Name)}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
				t.Errorf("want no Job, got err %v", err)
			}
		})
	}
}
