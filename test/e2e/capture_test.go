//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/dgdrealizer"
)

// hostPathClaim creates a PersistentVolume on a directory of this host (the sandbox's pods are
// host processes) and a claim bound to it, and returns the directory.
func hostPathClaim(t *testing.T, ns, claim string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
		},
	}
	if err := k8s.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pv) })
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: new(string), // no dynamic provisioning: bind to pv only
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := k8s.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the claim to be bound", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return false, "", err
		}
		return pvc.Status.Phase == corev1.ClaimBound, string(pvc.Status.Phase), nil
	})
	return dir
}

// Every string value a request_end record may hold: its schema, its type and the request id
// the frontend generates. Numbers are lengths, times, worker ids and prefix hashes.
var traceStringValues = []*regexp.Regexp{
	regexp.MustCompile(`^dynamo\.request\.trace\.v1$`),
	regexp.MustCompile(`^request_end$`),
	regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`),
}

// Keys that carry a request's or response's body in the OpenAI API and Dynamo's audit records.
var bodyKeys = []string{"messages", "content", "prompt", "text", "choices", "delta", "request_payload", "response"}

// requireNoPromptText fails on a record that could hold text: a key of a request or response
// body anywhere in it, or a string value other than the schema, the event type and a request
// id. AIPerf's synthetic prompts are words of a corpus; any of them would have to sit in a
// string value, so this holds whatever words AIPerf picked, unlike a search for the words.
func requireNoPromptText(t *testing.T, where string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if slices.Contains(bodyKeys, k) {
				t.Errorf("%s: key %q", where, k)
			}
			requireNoPromptText(t, where+"."+k, e)
		}
	case []any:
		for i, e := range x {
			requireNoPromptText(t, fmt.Sprintf("%s[%d]", where, i), e)
		}
	case string:
		if !slices.ContainsFunc(traceStringValues, func(re *regexp.Regexp) bool { return re.MatchString(x) }) {
			t.Errorf("%s: string %q is not the schema, the event type or a request id", where, x)
		}
	}
}

// TestCaptureRecordedByTheRealFrontend: an autoApply request with capture on a claim bound to
// a host directory and a verification of 30 requests. The verification's real AIPerf traffic
// goes through the real Dynamo frontend (1.6.1), which writes its request trace into its own
// directory of the request's directory of the claim (subPathExpr of the request's UID and the
// pod's name). The frontend writes a segment of less
// than maxSegmentMiB when it stops, so the test deletes the deployment and reads the segments
// once the frontend pod is gone: at least as many request_end records (dynamo.request.trace.v1)
// as the verification completed, each read by aisim's Dynamo trace reader, none with text.
func TestCaptureRecordedByTheRealFrontend(t *testing.T) {
	ctx := context.Background()
	ns := realizedNamespace(t)
	dir := hostPathClaim(t, ns, "traces")
	// verifiedRequest with the Frontend's request trace on the claim, in segments of 1 MiB.
	captured, err := sandboxtest.ParseRequest(fmt.Sprintf(verifiedRequest, "captured", "llama-captured"))
	if err != nil {
		t.Fatal(err)
	}
	captured.Namespace = ns
	captured.Spec.Deployment.Capture = &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traces",
		Rotation: &v1beta2.CaptureRotation{MaxSegmentMiB: ptr.To[int32](1)}}
	if err := k8s.Create(ctx, captured); err != nil {
		t.Fatal(err)
	}
	requireSucceededWithCandidates(t, waitRequestDone(t, ns, "captured"))
	waitDeployed(t, ns, "captured", v1beta2.ReasonDeploymentReady)

	got := waitVerificationEnded(t, ns, "captured", realizeTimeout+verifyTimeout)
	v := got.Status.Verification
	if v.Phase != v1beta2.VerificationSucceeded || v.Observed == nil || v.Observed.Requests == 0 {
		t.Fatalf("verification %s %s: %s (observed %+v)", v.Phase, v.Reason, v.Message, v.Observed)
	}
	completed := v.Observed.Requests

	pods, err := deploymentPods(ctx, ns, "llama-captured")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(pods, func(p corev1.Pod) bool {
		return p.Labels[dgdrealizer.LabelComponentType] == dgdv1beta1.ComponentFrontend
	})
	if i < 0 {
		t.Fatalf("no frontend pod among %d pods", len(pods))
	}
	frontend := pods[i].Name

	// The frontend writes its open segment on SIGTERM: stop it with its deployment. The request
	// goes first, or autoApply would deploy it again (and hold the Node's GPUs for later tests).
	req, err := getDGDR(ctx, ns, "captured")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the request to be gone", func(ctx context.Context) (bool, string, error) {
		_, err := getDGDR(ctx, ns, "captured")
		return client.IgnoreNotFound(err) == nil && err != nil, "present", client.IgnoreNotFound(err)
	})
	dgd, err := deployment(ctx, ns, "llama-captured")
	if err != nil || dgd == nil {
		t.Fatalf("deployment llama-captured: %v", err)
	}
	if err := k8s.Delete(ctx, dgd); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the deployment's pods to be gone", func(ctx context.Context) (bool, string, error) {
		left, err := deploymentPods(ctx, ns, "llama-captured")
		return err == nil && len(left) == 0, fmt.Sprintf("%d pods", len(left)), err
	})

	podDir := filepath.Join(dir, string(captured.UID), frontend)
	segments, err := filepath.Glob(filepath.Join(podDir, "request-trace.*.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(segments) == 0 {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("no segment under %s (the claim holds %v)", podDir, entries)
	}
	records := 0
	for _, seg := range segments {
		tr, err := trace.Read(seg, trace.FormatDynamo, 0)
		if err != nil {
			t.Fatalf("%s: %v", seg, err)
		}
		raw := gunzip(t, seg)
		lines := 0
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines++
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("%s line %d: %v", seg, lines, err)
			}
			ev, _ := line["event"].(map[string]any)
			if ev["schema"] != trace.DynamoSchema || ev["event_type"] != "request_end" {
				t.Errorf("%s line %d: schema %v, event_type %v; want %s request_end", seg, lines, ev["schema"], ev["event_type"], trace.DynamoSchema)
			}
			requireNoPromptText(t, fmt.Sprintf("%s line %d", filepath.Base(seg), lines), line)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if len(tr.Requests) != lines {
			t.Errorf("%s: the trace reader read %d requests of %d lines", seg, len(tr.Requests), lines)
		}
		records += lines
		t.Logf("%s: %d request_end records, block size %d, %d bytes uncompressed", filepath.Base(seg), lines, tr.BlockSize, len(raw))
	}
	if int64(records) < completed {
		t.Errorf("%d request_end records in %d segments, want at least the %d requests the verification completed", records, len(segments), completed)
	}
	t.Logf("frontend %s: %d records in %d segments; the verification completed %d requests", frontend, records, len(segments), completed)
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}
