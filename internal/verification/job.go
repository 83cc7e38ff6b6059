package verification

import (
	_ "embed"
	"maps"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
)

// Launcher is the verification container's program, run with python3 -c (Command, then "-c",
// Launcher and its flags); the operator fence admits no other (jobcontract.OperatorFencePolicy).
//
//go:embed launcher.py
var Launcher string

// Command is the verification container's command.
var Command = []string{"python3"}

// Names and labels of the verification Job.
const (
	// ContainerName is the verification container; the operator reads its termination message.
	ContainerName = "aiperf"
	// ComponentValue is the app.kubernetes.io/component of verification Jobs and pods.
	ComponentValue = "verification"
	// LabelDeploymentGeneration is the DynamoGraphDeployment generation a Job measures.
	LabelDeploymentGeneration = "nvidia.com/dgdr-deployment-generation"
	labelManagedBy            = "app.kubernetes.io/managed-by"
	managedByValue            = "dgdr-operator"
	labelComponent            = "app.kubernetes.io/component"
	// TmpVolume is the container's writable emptyDir, mounted at TmpDir.
	TmpVolume = "tmp"
	// TraceVolume is the request's trace source (a ConfigMap or a claim), mounted read-only at
	// aisimulate.TraceMountDir when the Job replays the trace; the pod's only other volume.
	TraceVolume = "trace"
	// TmpDir is where TmpVolume is mounted (the root file system is read-only).
	TmpDir       = "/tmp"
	tmpSizeLimit = "256Mi"
)

// EnvNames are the verification container's environment variables (both set to TmpDir).
var EnvNames = []string{"TMPDIR", "HOME"}

// Target is the deployment a Job measures.
type Target struct {
	// URL of the frontend's OpenAI-compatible endpoint (scheme, host and port).
	URL string
	// Model is the served model name.
	Model string
	// Deployment is the DynamoGraphDeployment's name and Generation its metadata.generation.
	Deployment string
	Generation int64
}

// BuildJob returns the verification Job of a request's deployed generation. It is pure. The pod
// runs only the configured verification image, without a ServiceAccount token, as the search
// pod's non-root identity, with a read-only root, a bounded /tmp and, to replay a trace, the
// request's trace source read-only, within verification.resources and placed by
// verification.nodeSelector, tolerations and priorityClassName (not the search pod's job.*); it
// talks to the frontend and reports through its termination message, which the operator reads
// (docs/design/verification.md).
func BuildJob(dgdr *v1beta2.DynamoGraphDeploymentRequest, p *Plan, t Target, cfg *v1alpha1.OperatorConfiguration) *batchv1.Job {
	labels := map[string]string{
		labelManagedBy:            managedByValue,
		labelComponent:            ComponentValue,
		v1beta2.LabelRequestName:  dgdr.Name,
		v1beta2.LabelRequestUID:   string(dgdr.UID),
		LabelDeploymentGeneration: strconv.FormatInt(t.Generation, 10),
	}
	args := append([]string{"-c", Launcher}, LauncherArgs(p, t)...)
	volumes := []corev1.Volume{{Name: TmpVolume, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse(tmpSizeLimit))}}}}
	mounts := []corev1.VolumeMount{{Name: TmpVolume, MountPath: TmpDir}}
	if tr := p.Trace; tr != nil {
		volumes = append(volumes, traceVolume(tr.Source))
		mounts = append(mounts, corev1.VolumeMount{Name: TraceVolume, MountPath: aisimulate.TraceMountDir, ReadOnly: true})
	}
	pod := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		NodeSelector:                 maps.Clone(cfg.Verification.NodeSelector),
		Tolerations:                  slices.Clone(cfg.Verification.Tolerations),
		PriorityClassName:            cfg.Verification.PriorityClassName,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To(*cfg.Job.RunAsUser),
			RunAsGroup:     ptr.To(*cfg.Job.RunAsGroup),
			FSGroup:        ptr.To(*cfg.Job.FSGroup),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            ContainerName,
			Image:           cfg.Verification.Image,
			ImagePullPolicy: cfg.Verification.ImagePullPolicy,
			Command:         append([]string(nil), Command...),
			Args:            args,
			Resources:       *cfg.Verification.Resources.DeepCopy(),
			// AIPerf's console goes to the log; only the launcher's result is the message.
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			Env:                      envOf(TmpDir),
			VolumeMounts:             mounts,
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot:             ptr.To(true),
				ReadOnlyRootFilesystem:   ptr.To(true),
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		}},
		Volumes: volumes,
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            naming.VerificationJobName(dgdr.Name, t.Generation),
			Namespace:       dgdr.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dgdr, v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRequest"))},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To(int64(p.MaxDurationSeconds) + StartGraceSeconds),
			TTLSecondsAfterFinished: cfg.Job.TTLSecondsAfterFinished,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod,
			},
		},
	}
}

// LauncherArgs are the launcher's flags (after -c and the program) for plan p against t: the
// frontend, the bounds, and either synthetic requests (token lengths, concurrency or request
// rate) or the trace to replay (its file and format, its arrival speedup or the concurrency, its
// prefix block size).
func LauncherArgs(p *Plan, t Target) []string {
	args := []string{"--url", t.URL, "--model", t.Model, "--tokenizer", t.Model, "--max-duration", strconv.Itoa(int(p.MaxDurationSeconds))}
	if p.Requests > 0 {
		args = append(args, "--requests", strconv.Itoa(int(p.Requests)))
	}
	if tr := p.Trace; tr != nil {
		args = append(args, "--trace-file", tr.Path, "--trace-format", string(tr.Format))
		if tr.Speedup != nil {
			args = append(args, "--trace-speedup", strconv.FormatFloat(*tr.Speedup, 'g', -1, 64))
		}
		if tr.BlockSize != nil {
			args = append(args, "--trace-block-size", strconv.Itoa(int(*tr.BlockSize)))
		}
	} else {
		args = append(args, "--isl", strconv.Itoa(int(*p.Load.InputTokens)), "--osl", strconv.Itoa(int(*p.Load.OutputTokens)))
	}
	switch {
	case p.Load.Concurrency != nil:
		args = append(args, "--concurrency", strconv.Itoa(int(*p.Load.Concurrency)))
	case p.Load.RequestsPerSecond != nil:
		args = append(args, "--request-rate", strconv.FormatFloat(*p.Load.RequestsPerSecond, 'g', -1, 64))
	}
	return args
}

// traceVolume is the request's trace source, read-only: a ConfigMap's key projected to
// aisimulate.TraceConfigMapFile, or the claim holding the file, as the search pod mounts them.
func traceVolume(src v1beta2.TraceSource) corev1.Volume {
	v := corev1.Volume{Name: TraceVolume}
	switch {
	case src.ConfigMap != nil:
		v.ConfigMap = &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: src.ConfigMap.Name},
			Items:                []corev1.KeyToPath{{Key: src.ConfigMap.Key, Path: aisimulate.TraceConfigMapFile}},
		}
	case src.PVC != nil:
		v.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.PVC.ClaimName, ReadOnly: true}
	}
	return v
}

// envOf sets every name of EnvNames to dir.
func envOf(dir string) []corev1.EnvVar {
	env := make([]corev1.EnvVar, 0, len(EnvNames))
	for _, name := range EnvNames {
		env = append(env, corev1.EnvVar{Name: name, Value: dir})
	}
	return env
}
