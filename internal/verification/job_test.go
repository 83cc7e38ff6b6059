package verification

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
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
		"--max-duration", "90", "--requests", "50", "--isl", "512", "--osl", "64", "--request-rate", "2.5"}
	if diff := cmp.Diff(wantArgs, c.Args[2:]); diff != "" || c.Args[0] != "-c" || c.Args[1] != Launcher {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if job.Labels[LabelDeploymentGeneration] != "3" || job.Spec.Template.Labels[v1beta2.LabelRequestUID] != "uid-1" {
		t.Errorf("labels %v", job.Labels)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Name != TmpVolume || len(c.VolumeMounts) != 1 {
		t.Errorf("synthetic requests mount /tmp only: volumes %+v, mounts %+v", pod.Volumes, c.VolumeMounts)
	}
}

// TestBuildJobReplaysTheTrace: a trace replay mounts the request's trace source read-only where
// the search container read it (a ConfigMap's key as the trace file, a claim read-only) and
// tells the launcher the file, its format and how to replay it.
func TestBuildJobReplaysTheTrace(t *testing.T) {
	cfg := config.Default()
	cfg.Verification.Image = "aiperf:0.13.0"
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	dgdr.Name, dgdr.Namespace, dgdr.UID = "llama", "team", types.UID("uid-1")
	target := Target{URL: "http://llama-frontend.team.svc:8000", Model: "org/llama", Deployment: "llama", Generation: 3}
	cm := v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "traffic", Key: "day.jsonl"}}
	pvc := v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "captures", Path: "frontend/day.jsonl.gz"}}
	cases := []struct {
		name       string
		plan       *Plan
		wantVolume corev1.VolumeSource
		wantArgs   []string
	}{
		{name: "a ConfigMap trace at its timestamps", plan: &Plan{MaxDurationSeconds: 300,
			Trace: &TraceReplay{Source: cm, Path: "/var/run/dgdr/trace/trace.jsonl", Format: v1beta2.TraceFormatMooncake, Speedup: ptr.To(2.0), BlockSize: ptr.To[int32](64)}},
			wantVolume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "traffic"},
				Items: []corev1.KeyToPath{{Key: "day.jsonl", Path: "trace.jsonl"}}}},
			wantArgs: []string{"--max-duration", "300", "--trace-file", "/var/run/dgdr/trace/trace.jsonl", "--trace-format", "mooncake",
				"--trace-speedup", "2", "--trace-block-size", "64"}},
		{name: "a Dynamo trace on a claim, closed-loop", plan: &Plan{MaxDurationSeconds: 300, Requests: 500, Load: v1beta2.VerificationLoad{Concurrency: ptr.To[int32](24)},
			Trace: &TraceReplay{Source: pvc, Path: "/var/run/dgdr/trace/frontend/day.jsonl.gz", Format: v1beta2.TraceFormatDynamo}},
			wantVolume: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "captures", ReadOnly: true}},
			wantArgs: []string{"--max-duration", "300", "--requests", "500", "--trace-file", "/var/run/dgdr/trace/frontend/day.jsonl.gz", "--trace-format", "dynamo",
				"--concurrency", "24"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := BuildJob(dgdr, tc.plan, target, cfg)
			pod := job.Spec.Template.Spec
			if len(pod.Volumes) != 2 || pod.Volumes[1].Name != TraceVolume {
				t.Fatalf("volumes %+v, want /tmp and the trace", pod.Volumes)
			}
			if diff := cmp.Diff(tc.wantVolume, pod.Volumes[1].VolumeSource); diff != "" {
				t.Errorf("trace volume (-want +got):\n%s", diff)
			}
			wantMounts := []corev1.VolumeMount{{Name: TmpVolume, MountPath: TmpDir}, {Name: TraceVolume, MountPath: "/var/run/dgdr/trace", ReadOnly: true}}
			if diff := cmp.Diff(wantMounts, pod.Containers[0].VolumeMounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			want := append([]string{"-c", Launcher, "--url", target.URL, "--model", "org/llama", "--tokenizer", "org/llama"}, tc.wantArgs...)
			if diff := cmp.Diff(want, pod.Containers[0].Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildJobResourcesAndPlacement: the verification pod gets verification.resources (the
// bounded defaults when the configuration sets none, so it is never BestEffort) and its own
// placement, verification.nodeSelector, tolerations and priorityClassName; the search pod's
// job.* placement never reaches it.
func TestBuildJobResourcesAndPlacement(t *testing.T) {
	cfg := config.Default()
	cfg.Verification.Image = "aiperf:0.13.0"
	cfg.Job.NodeSelector = map[string]string{"pool": "search"}
	cfg.Job.Tolerations = []corev1.Toleration{{Key: "search", Operator: corev1.TolerationOpExists}}
	cfg.Job.PriorityClassName = "search-low"
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	dgdr.Name, dgdr.Namespace, dgdr.UID = "llama", "team", types.UID("uid-1")
	p := &Plan{Load: v1beta2.VerificationLoad{Concurrency: ptr.To[int32](10000), InputTokens: ptr.To[int32](512), OutputTokens: ptr.To[int32](64)},
		Requests: 10000, MaxDurationSeconds: 90}
	target := Target{URL: "http://llama-frontend.team.svc:8000", Model: "org/llama", Deployment: "llama", Generation: 3}

	type shape struct {
		Resources         corev1.ResourceRequirements
		NodeSelector      map[string]string
		Tolerations       []corev1.Toleration
		PriorityClassName string
	}
	of := func(cfg *v1alpha1.OperatorConfiguration) shape {
		pod := BuildJob(dgdr, p, target, cfg).Spec.Template.Spec
		return shape{pod.Containers[0].Resources, pod.NodeSelector, pod.Tolerations, pod.PriorityClassName}
	}
	if diff := cmp.Diff(shape{Resources: config.DefaultVerificationResources()}, of(cfg)); diff != "" {
		t.Errorf("default verification pod (-want +got):\n%s", diff)
	}
	own := shape{
		Resources:         corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}},
		NodeSelector:      map[string]string{"pool": "load"},
		Tolerations:       []corev1.Toleration{{Key: "load", Operator: corev1.TolerationOpExists}},
		PriorityClassName: "verify",
	}
	cfg.Verification.Resources, cfg.Verification.NodeSelector = own.Resources, own.NodeSelector
	cfg.Verification.Tolerations, cfg.Verification.PriorityClassName = own.Tolerations, own.PriorityClassName
	if diff := cmp.Diff(own, of(cfg)); diff != "" {
		t.Errorf("configured verification pod (-want +got):\n%s", diff)
	}
}
