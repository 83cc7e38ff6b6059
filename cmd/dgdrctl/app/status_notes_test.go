package app

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// TestCandidateNotes: `dgdrctl status` names each candidate that is not deployable, with its
// reason and the fields, and says which candidates rest on another engine version than their
// runtime image runs (one line per skew); nothing for deployable candidates without skew.
func TestCandidateNotes(t *testing.T) {
	cand := func(rank int32, conds ...metav1.Condition) v1beta2.DynamoGraphDeploymentCandidate {
		c := v1beta2.DynamoGraphDeploymentCandidate{}
		c.Name = "r-c" + string(rune('0'+rank))
		c.Status.Rank, c.Status.Conditions = rank, conds
		return c
	}
	skew := metav1.Condition{Type: v1beta2.ConditionVersionSkew, Status: metav1.ConditionTrue, Reason: v1beta2.ReasonEngineVersionsDiffer,
		Message: "predicted from vllm 0.24.0 performance data; the runtime image runs vllm 0.31.0"}
	noSkew := metav1.Condition{Type: v1beta2.ConditionVersionSkew, Status: metav1.ConditionFalse, Reason: v1beta2.ReasonEngineVersionsMatch}
	refused := metav1.Condition{Type: v1beta2.ConditionDeployable, Status: metav1.ConditionFalse, Reason: v1beta2.ReasonNotRenderable,
		Message: "not deployable: the renderer cannot lower engine.speculation"}
	deployable := metav1.Condition{Type: v1beta2.ConditionDeployable, Status: metav1.ConditionTrue, Reason: v1beta2.ReasonRendered}
	var out bytes.Buffer
	writeCandidateNotes(&out, []v1beta2.DynamoGraphDeploymentCandidate{
		cand(1, deployable, skew), cand(2, refused, skew), cand(3, deployable, noSkew),
	})
	want := "#2 r-c2 is not deployable (NotRenderable): not deployable: the renderer cannot lower engine.speculation\n" +
		"Version skew (#1, #2): predicted from vllm 0.24.0 performance data; the runtime image runs vllm 0.31.0\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
