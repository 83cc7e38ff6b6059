package app

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// TestWriteDeployment: the Deployment section of dgdrctl status names the deployment, the
// deployed candidate and, when autoApply chose a cheaper one, the best it was chosen over and why.
func TestWriteDeployment(t *testing.T) {
	deployed := metav1.Condition{Type: v1beta2.ConditionDeployed, Status: metav1.ConditionTrue, Reason: "DeploymentReady", Message: "Ready"}
	withDeployment := func(sel *v1beta2.DeploymentSelection, cond *metav1.Condition) *v1beta2.DynamoGraphDeploymentRequest {
		req := &v1beta2.DynamoGraphDeploymentRequest{}
		req.Status.Deployment = &v1beta2.DeploymentStatus{Name: "llm-prod", Run: "llm-run-1", Candidate: "llm-run-1-c3", Selection: sel}
		if cond != nil {
			req.Status.Conditions = []metav1.Condition{*cond}
		}
		return req
	}
	tests := []struct {
		name string
		req  *v1beta2.DynamoGraphDeploymentRequest
		want string
	}{
		{"nothing deployed, no condition", &v1beta2.DynamoGraphDeploymentRequest{}, ""},
		{"a cheaper candidate within the tolerance", withDeployment(&v1beta2.DeploymentSelection{Best: "llm-run-1-c1", Chosen: "llm-run-1-c3", Tolerance: "2%",
			Reason: "llm-run-1-c3 uses fewer GPUs (4) than the best candidate llm-run-1-c1 (8 GPUs), and scores 2159 against 2164 (0.23% lower), within the tolerance of 2%"}, &deployed), `
Deployment: DynamoGraphDeployment llm-prod
  candidate  llm-run-1-c3 of Run llm-run-1
  chosen     llm-run-1-c3 instead of the best llm-run-1-c1 (tolerance 2%)
  why        llm-run-1-c3 uses fewer GPUs (4) than the best candidate llm-run-1-c1 (8 GPUs), and scores 2159 against 2164 (0.23% lower), within the tolerance of 2%
Deployed=True (DeploymentReady): Ready
`},
		{"the best", withDeployment(&v1beta2.DeploymentSelection{Best: "llm-run-1-c3", Chosen: "llm-run-1-c3", Tolerance: "0%",
			Reason: "the tolerance is 0%: the best candidate llm-run-1-c3 (4 GPUs) is deployed"}, nil), `
Deployment: DynamoGraphDeployment llm-prod
  candidate  llm-run-1-c3 of Run llm-run-1
  chosen     the best, llm-run-1-c3 (tolerance 0%)
  why        the tolerance is 0%: the best candidate llm-run-1-c3 (4 GPUs) is deployed
`},
		{"recorded before selections were", withDeployment(nil, nil), `
Deployment: DynamoGraphDeployment llm-prod
  candidate  llm-run-1-c3 of Run llm-run-1
`},
		{"waiting for a result", &v1beta2.DynamoGraphDeploymentRequest{Status: v1beta2.DynamoGraphDeploymentRequestStatus{Conditions: []metav1.Condition{
			{Type: v1beta2.ConditionDeployed, Status: metav1.ConditionFalse, Reason: v1beta2.ReasonAwaitingResult, Message: "nothing deployed yet"}}}}, `
Deployment: none yet
Deployed=False (AwaitingResult): nothing deployed yet
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			writeDeployment(&out, tc.req)
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
