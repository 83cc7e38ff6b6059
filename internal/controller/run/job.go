package run

import (
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/modelaccess"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
)

// Labels the operator puts on what it manages.
const (
	// LabelManagedBy marks objects the operator manages (reporter RBAC, Jobs).
	LabelManagedBy = jobcontract.LabelManagedBy
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = jobcontract.ManagedByValue
	// LabelComponent names the part of the product an object belongs to.
	LabelComponent = "app.kubernetes.io/component"
)

// runOwnerRef is the controller reference children carry to their Run.
func runOwnerRef(run *v1beta2.DynamoGraphDeploymentRun) metav1.OwnerReference {
	return *metav1.NewControllerRef(run, v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRun"))
}

// childLabels are the labels of every object created for a Run.
func childLabels(run *v1beta2.DynamoGraphDeploymentRun) map[string]string {
	l := map[string]string{
		LabelManagedBy:           ManagedByValue,
		LabelComponent:           "search",
		v1beta2.LabelRunName:     run.Name,
		v1beta2.LabelRunUID:      string(run.UID),
		v1beta2.LabelRequestName: run.Labels[v1beta2.LabelRequestName],
	}
	if l[v1beta2.LabelRequestName] == "" {
		delete(l, v1beta2.LabelRequestName)
	}
	return l
}

// QueueName is the Kueue queue of a Run (copied from its request), or "".
func QueueName(run *v1beta2.DynamoGraphDeploymentRun) string {
	return run.Labels[v1beta2.LabelKueueQueueName]
}

// reporterImageContainer is a container of the reporter image (the input init container and the
// reporter): the operator's own binary, with the reporter's resources and a restricted context.
func reporterImageContainer(cfg *v1alpha1.OperatorConfiguration, name string, args []string) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    cfg.Reporter.Image,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		Args:                     append([]string(nil), args...),
		Resources:                *cfg.Reporter.Resources.DeepCopy(),
		SecurityContext:          restrictedSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// restrictedSecurityContext is the hardened context of every container.
func restrictedSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// runtimeImagesEnv renders runtime images as "backend=image,..." in backend order.
func runtimeImagesEnv(images map[string]string) string {
	keys := make([]string, 0, len(images))
	for k := range images {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+images[k])
	}
	return strings.Join(parts, ",")
}

// BuildJob returns the search Job of a Run. It is pure: the same Run and configuration always
// yield the same Job. The search image comes only from cfg.Planner.Image; nothing in the Run
// can change it. A Run with a Kueue queue label gets a suspended Job carrying that label.
func BuildJob(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration) *batchv1.Job {
	labels := childLabels(run)
	queue := QueueName(run)
	if queue != "" {
		labels[v1beta2.LabelKueueQueueName] = queue
	}
	baseline := baselineInput(run)
	input := inputContainer(run, cfg, baseline != nil)
	search := searchContainer(run, cfg)
	containers := []corev1.Container{search}
	volumes := podVolumes(cfg)
	if baseline != nil {
		containers = append(containers, baselineContainer(search, cfg))
		volumes = append(volumes, emptyDir(jobcontract.BaselineTmpVolume, cfg.Job.TmpSizeLimit))
	}
	containers = append(containers, reporterContainer(run, cfg, baseline != nil))
	volumes = append(volumes, modelaccess.Volumes(&run.Spec.Model)...)

	// The trace of a trace workload, read-only, where the effective input names it: the
	// baseline replays the same traffic as the search.
	traceVolumes, traceMounts := traceMount(run)
	volumes = append(volumes, traceVolumes...)
	for i := range containers {
		if c := &containers[i]; c.Name == jobcontract.SearchContainer || c.Name == jobcontract.BaselineContainer {
			c.VolumeMounts = append(c.VolumeMounts, traceMounts...)
		}
	}
	// A re-search's input container cuts the window of the capture into the trace volume first.
	if captureVolume, inputArgs, inputMounts := windowCut(run); captureVolume != nil {
		volumes = append(volumes, *captureVolume)
		input.Args = append(input.Args, inputArgs...)
		input.VolumeMounts = append(input.VolumeMounts, inputMounts...)
	}

	annotations := jobAnnotations(run, baseline)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            naming.JobName(run.Name),
			Namespace:       run.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{runOwnerRef(run)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   cfg.Job.ActiveDeadlineSeconds,
			TTLSecondsAfterFinished: cfg.Job.TTLSecondsAfterFinished,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: childLabels(run), Annotations: maps.Clone(annotations)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           jobcontract.SearchIdentity(run.UID),
					AutomountServiceAccountToken: ptr.To(false),
					NodeSelector:                 cfg.Job.NodeSelector,
					Tolerations:                  cfg.Job.Tolerations,
					PriorityClassName:            cfg.Job.PriorityClassName,
					SecurityContext:              podSecurityContext(cfg),
					InitContainers:               []corev1.Container{input},
					Containers:                   containers,
					Volumes:                      volumes,
				},
			},
		},
	}
	if queue != "" {
		job.Spec.Suspend = ptr.To(true)
	}
	return job
}

// baselineInput is the re-search baseline the operator recorded for the Run, or nil.
func baselineInput(run *v1beta2.DynamoGraphDeploymentRun) *v1beta2.BaselineInputStatus {
	if a := run.Status.AISimulate; a != nil {
		return a.Baseline
	}
	return nil
}

// jobAnnotations carry the hashes of the inputs the operator recorded for the Run (set by the
// reconcile that creates the Job, before it) onto the Job and its pod.
func jobAnnotations(run *v1beta2.DynamoGraphDeploymentRun, baseline *v1beta2.BaselineInputStatus) map[string]string {
	var annotations map[string]string
	if a := run.Status.AISimulate; a != nil && a.InputHash != "" {
		annotations = map[string]string{v1beta2.AnnotationInputHash: a.InputHash}
	}
	if baseline != nil {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1beta2.AnnotationBaselineInputHash] = baseline.InputHash
	}
	return annotations
}

func runNameEnv(run *v1beta2.DynamoGraphDeploymentRun) corev1.EnvVar {
	return corev1.EnvVar{Name: jobcontract.EnvRunName, Value: run.Name}
}

func fieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fieldPath}}}
}

func tokenMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: jobcontract.TokenVolume, MountPath: jobcontract.TokenDir, ReadOnly: true}
}

func outputMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: jobcontract.OutputVolume, MountPath: jobcontract.OutputMountDir}
}

// inputContainer copies the Run's recorded input (checked against its hash) into the input
// emptyDir, so the search reads exactly what status.aisimulate records and no other object
// carries it.
func inputContainer(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration, baseline bool) corev1.Container {
	input := reporterImageContainer(cfg, jobcontract.InputContainer, jobcontract.InputArgs)
	input.Env = []corev1.EnvVar{
		runNameEnv(run),
		fieldEnv(jobcontract.EnvRunNamespace, "metadata.namespace"),
		{Name: jobcontract.EnvInputDir, Value: jobcontract.InputDir},
		// The hash the operator recorded, from the pod's own annotation: no search identity can
		// write a pod, a Job or the Run's status.aisimulate, so the input the search reads is
		// the one the operator lowered (docs/operate/security.md).
		fieldEnv(jobcontract.EnvInputHash, "metadata.annotations['"+v1beta2.AnnotationInputHash+"']"),
	}
	if baseline {
		// A re-search's baseline input, checked the same way against its own annotation.
		input.Env = append(input.Env, fieldEnv(jobcontract.EnvBaselineInputHash, "metadata.annotations['"+v1beta2.AnnotationBaselineInputHash+"']"))
	}
	input.VolumeMounts = []corev1.VolumeMount{
		{Name: jobcontract.InputVolume, MountPath: jobcontract.InputDir},
		tokenMount(),
	}
	return input
}

// searchContainer runs the Planner image's search on the checked input.
func searchContainer(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration) corev1.Container {
	return corev1.Container{
		Name:                     jobcontract.SearchContainer,
		Image:                    cfg.Planner.Image,
		ImagePullPolicy:          cfg.Planner.ImagePullPolicy,
		Command:                  append([]string(nil), cfg.Planner.Command...),
		Args:                     append(append([]string(nil), jobcontract.SearchArgs...), cfg.Planner.Args...),
		Resources:                *cfg.Planner.Resources.DeepCopy(),
		SecurityContext:          restrictedSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		// Model access: HF_TOKEN from the token Secret and the cache claim, read-only.
		Env: modelaccess.Env(&run.Spec.Model),
		VolumeMounts: append([]corev1.VolumeMount{
			{Name: jobcontract.InputVolume, MountPath: jobcontract.InputDir, ReadOnly: true},
			outputMount(),
			// The root file system is read-only; AISimulate (and Python) need a writable /tmp.
			{Name: jobcontract.TmpVolume, MountPath: jobcontract.TmpDir},
		}, modelaccess.Mounts(&run.Spec.Model)...),
	}
}

// baselineContainer predicts the deployed Candidate under the re-search's traffic: the search
// container's image, context, resources and model access with the predict command and a /tmp of
// its own.
func baselineContainer(search corev1.Container, cfg *v1alpha1.OperatorConfiguration) corev1.Container {
	b := *search.DeepCopy()
	b.Name = jobcontract.BaselineContainer
	b.Command = append([]string(nil), cfg.Planner.PredictCommand...)
	b.Args = append([]string(nil), jobcontract.BaselineArgs...)
	for i := range b.VolumeMounts {
		if b.VolumeMounts[i].Name == jobcontract.TmpVolume {
			b.VolumeMounts[i].Name = jobcontract.BaselineTmpVolume
		}
	}
	return b
}

// reporterContainer publishes what the search writes.
func reporterContainer(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration, baseline bool) corev1.Container {
	reporter := reporterImageContainer(cfg, jobcontract.ReporterContainer, jobcontract.ReporterArgs)
	if baseline {
		// Named in the arguments, like every path of the pod contract, not left to the binary's
		// default: the pod's mounts decide where it is.
		reporter.Args = append(reporter.Args, "--baseline-output-dir", jobcontract.BaselineOutputDir)
	}
	reporter.Env = []corev1.EnvVar{
		runNameEnv(run),
		fieldEnv(jobcontract.EnvRunNamespace, "metadata.namespace"),
		fieldEnv(jobcontract.EnvPodName, "metadata.name"),
		{Name: jobcontract.EnvOutputDir, Value: jobcontract.ResultDir},
		{Name: jobcontract.EnvSearchTmpDir, Value: jobcontract.SearchTmpDir},
		{Name: jobcontract.EnvRuntimeImages, Value: runtimeImagesEnv(cfg.RuntimeImages)},
		{Name: jobcontract.EnvPlannerImage, Value: cfg.Planner.Image},
	}
	reporter.VolumeMounts = []corev1.VolumeMount{
		outputMount(),
		// The search's /tmp, read-only: the real AISimulate's live ledger is there while the
		// search runs ($TMPDIR/aisimulate-monitor-XXXX/events.jsonl); the output directory gets
		// its copy only when the search ends (docs/design/results.md, "While the search runs").
		{Name: jobcontract.TmpVolume, MountPath: jobcontract.SearchTmpDir, ReadOnly: true},
		tokenMount(),
	}
	return reporter
}

// podSecurityContext is an explicit non-root identity: an image whose USER is root (or a name
// the kubelet cannot check against runAsNonRoot) still starts, and the output volume is shared
// through fsGroup.
func podSecurityContext(cfg *v1alpha1.OperatorConfiguration) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(*cfg.Job.RunAsUser),
		RunAsGroup:     ptr.To(*cfg.Job.RunAsGroup),
		FSGroup:        ptr.To(*cfg.Job.FSGroup),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func emptyDir(name string, sizeLimit *resource.Quantity) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(sizeLimit.DeepCopy())}}}
}

// podVolumes are the volumes every search pod has: the input, the bounded output and /tmp, and
// the search identity's token.
func podVolumes(cfg *v1alpha1.OperatorConfiguration) []corev1.Volume {
	return []corev1.Volume{
		{Name: jobcontract.InputVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		// The search is not trusted to bound what it writes: the kubelet evicts the pod when the
		// output grows past job.outputSizeLimit.
		emptyDir(jobcontract.OutputVolume, cfg.Job.OutputSizeLimit),
		emptyDir(jobcontract.TmpVolume, cfg.Job.TmpSizeLimit),
		{Name: jobcontract.TokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token",
					ExpirationSeconds: cfg.Job.TokenExpirationSeconds, Audience: cfg.Job.TokenAudience}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
				}}},
			},
		}}},
	}
}
