package verification

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

// TestBuildJob: one deterministic Job per deployment generation, controlled by the request,
// running only the configured image, hardened like the search pod, with AIPerf's load and
// bounds in the launcher's arguments and a deadline of maxDurationSeconds plus the start grace.
func TestBuildJob(t *testing.T) {
	cfg := config.Default()
	cfg.Verification.Image = "aiperf:0.13.0"
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	dgdr.Name, dgdr.Namespace, dgdr.UID = "llama", "team", types.UID("uid-1")
	p := &Plan{Load: v1beta2.VerificationLoad{RequestsPerSecond: ptr.To(2.5), InputTokens: ptr.To[int32](512), OutputTokens: ptr.To[int32](64)},
		Requests: 50, MaxDurationSeconds: 90}
	job := BuildJob(dgdr, p, Target{URL: "http://llama-frontend.team.svc:8000", Model: "org/llama", Deployment: "llama", Generation: 3}, cfg)

	if job.Name != "llama-verify-3" || job.Namespace != "team" {
		t.Errorf("Job %s/%s, want team/llama-verify-3", job.Namespace, job.Name)
	}
	if ref := job.OwnerReferences; len(ref) != 1 || ref[0].UID != "uid-1" || !*ref[0].Controller {
		t.Errorf("owner references %+v", ref)
	}
	if got := *job.Spec.ActiveDeadlineSeconds; got != 90+StartGraceSeconds {
		t.Errorf("activeDeadlineSeconds %d", got)
	}
	pod := job.Spec.Template.Spec
	if *pod.AutomountServiceAccountToken || pod.ServiceAccountName != "" || !*pod.SecurityContext.RunAsNonRoot || *pod.SecurityContext.RunAsUser == 0 {
		t.Errorf("pod identity not hardened: %+v", pod)
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if c.Image != "aiperf:0.13.0" || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container %+v", c)
	}
	wantArgs := []string{"--url", "http://llama-frontend.team.svc:8000", "--model", "org/llama", "--tokenizer", "org/llama",
		"--isl", "512", "--osl", "64", "--requests", "50", "--max-duration", "90", "--request-rate", "2.5"}
	if diff := cmp.Diff(wantArgs, c.Args[2:]); diff != "" || c.Args[0] != "-c" || c.Args[1] != Launcher {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if job.Labels[LabelDeploymentGeneration] != "3" || job.Spec.Template.Labels[v1beta2.LabelRequestUID] != "uid-1" {
		t.Errorf("labels %v", job.Labels)
	}
}
