package candidates_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// keptBy is an artifacts ConfigMap as the reporter writes it for run.
func keptBy(run *v1beta2.DynamoGraphDeploymentRun) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:   jobcontract.ArtifactsName(run.UID),
		Labels: map[string]string{v1beta2.LabelRunName: run.Name, v1beta2.LabelRunUID: string(run.UID)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1beta2.GroupVersion.String(), Kind: "DynamoGraphDeploymentRun",
			Name: run.Name, UID: run.UID, Controller: ptr.To(true)}},
	}}
}

// TestReadArtifactsTrustsOnlyTheRunsOwn: a ConfigMap is read as a Run's artifacts only when the
// Run controls it and it carries the Run's UID label; anyone could create one of that name.
func TestReadArtifactsTrustsOnlyTheRunsOwn(t *testing.T) {
	run := builders.Run("", "llm-run-1").UID("run-uid").Obj()
	cases := []struct {
		name  string
		edit  func(cm *corev1.ConfigMap)
		trust bool
	}{
		{"as the reporter keeps it", func(*corev1.ConfigMap) {}, true},
		{"another Run's", func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].UID = "other" }, false},
		{"owned, not controlled", func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].Controller = nil }, false},
		{"controlled by another kind with the Run's UID", func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].Kind = "Job" }, false},
		{"without the Run's UID label", func(cm *corev1.ConfigMap) { delete(cm.Labels, v1beta2.LabelRunUID) }, false},
		{"labelled for another Run", func(cm *corev1.ConfigMap) { cm.Labels[v1beta2.LabelRunUID] = "other" }, false},
		{"no owner", func(cm *corev1.ConfigMap) { cm.OwnerReferences = nil }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm := keptBy(run)
			tc.edit(cm)
			_, err := candidates.ReadArtifacts(run, cm)
			if (err == nil) != tc.trust {
				t.Errorf("err = %v, want trusted %v", err, tc.trust)
			}
		})
	}
}

// TestArtifactsFiles: a kept file decompresses whole up to the cap; a missing one is ErrNotKept,
// one that decompresses past the cap or is not gzip is an error; Truncated follows the
// reporter's annotation.
func TestArtifactsFiles(t *testing.T) {
	run := builders.Run("", "llm-run-1").UID("run-uid").Obj()
	cm := keptBy(run)
	cm.Annotations = map[string]string{jobcontract.AnnotationArtifactsTruncated: "execution-events.jsonl"}
	cm.BinaryData = map[string][]byte{
		jobcontract.ArtifactRecommendationKey: gz(t, []byte(`{"candidates": []}`)),
		jobcontract.ArtifactEventsKey:         gz(t, make([]byte, candidates.MaxArtifactBytes+1)),
		"not-gzip":                            []byte("plain"),
	}
	art, err := candidates.ReadArtifacts(run, cm)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := art.File(jobcontract.ArtifactRecommendationKey); err != nil || string(got) != `{"candidates": []}` {
		t.Errorf("recommendation.json: %q, %v", got, err)
	}
	if _, err := art.File(jobcontract.ArtifactEventsKey); err == nil {
		t.Error("a file decompressing past the cap was read")
	}
	if _, err := art.File("not-gzip"); err == nil {
		t.Error("a file that is not gzip was read")
	}
	delete(cm.BinaryData, jobcontract.ArtifactRecommendationKey)
	if _, err := art.File(jobcontract.ArtifactRecommendationKey); !errors.Is(err, candidates.ErrNotKept) {
		t.Errorf("missing file: err = %v, want ErrNotKept", err)
	}
	got := map[string]bool{}
	for _, f := range []string{"", "recommendation.json", "execution-events.jsonl"} {
		got[f] = art.Truncated(f)
	}
	if diff := cmp.Diff(map[string]bool{"": true, "recommendation.json": false, "execution-events.jsonl": true}, got); diff != "" {
		t.Errorf("Truncated (-want +got):\n%s", diff)
	}
}
