package run

import (
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
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

// Components of the Jobs of a Run (LabelComponent).
const (
	componentSearch   = "search"
	componentBaseline = "baseline"
)

// componentLabels are the labels of every object created for a Run: component "search", or for
// a re-search's baseline Job "baseline".
func componentLabels(run *v1beta2.DynamoGraphDeploymentRun, component string) map[string]string {
	l := map[string]string{
		LabelManagedBy:           ManagedByValue,
		LabelComponent:           component,
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

// reporterImageContainer is a container of the reporter image (the input init container, the
// reporter and the publication container): the operator's own binary, with the reporter's
// resources and a restricted context.
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

// BuildJob returns the search Job of a Run. It is pure: the same Run and configuration always
// yield the same Job. The search image comes only from cfg.Planner.Image; nothing in the Run
// can change it. A Run with a Kueue queue label gets a suspended Job carrying that label.
func BuildJob(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration) *batchv1.Job {
	var hash string
	if a := run.Status.AISimulate; a != nil {
		hash = a.InputHash
	}
	search := searchContainer(run, cfg)
	traceVolumes, traceMounts := traceMount(run)
	search.VolumeMounts = append(search.VolumeMounts, traceMounts...)
	input := inputContainer(run, cfg, jobcontract.EnvInputHash, v1beta2.AnnotationInputHash)
	volumes := append(modelaccess.Volumes(&run.Spec.Model), traceVolumes...)
	// A re-search's input container cuts the window of the capture into the trace volume first.
	if captureVolume, inputArgs, inputMounts := windowCut(run); captureVolume != nil {
		volumes = append(volumes, *captureVolume)
		input.Args = append(input.Args, inputArgs...)
		input.VolumeMounts = append(input.VolumeMounts, inputMounts...)
	}
	return podJob(run, cfg, podParts{
		name: naming.JobName(run.Name), component: componentSearch, deadline: cfg.Job.ActiveDeadlineSeconds,
		annotations: hashAnnotation(v1beta2.AnnotationInputHash, hash),
		input:       input, reporter: searchReporter(run, cfg), main: search, volumes: volumes,
	})
}

// podParts are what differs between the Jobs a Run runs as its search identity (podJob).
type podParts struct {
	name, component string
	deadline        *int64
	annotations     map[string]string
	// input is the input init container, reporter the reporter sidecar, main the search or
	// the baseline container; volumes are added to podVolumes.
	input, reporter, main corev1.Container
	volumes               []corev1.Volume
}

// podJob is a Job of the Run's search identity: the input init container, the reporter as a
// sidecar (restartPolicy Always: the kubelet starts it again whenever it exits while the pod
// runs), then the main container beside the publication container, which ends with the
// reporter's outcome.
func podJob(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration, p podParts) *batchv1.Job {
	labels := componentLabels(run, p.component)
	queue := QueueName(run)
	if queue != "" {
		labels[v1beta2.LabelKueueQueueName] = queue
	}
	reporter := p.reporter
	reporter.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	publication := reporterImageContainer(cfg, jobcontract.PublicationContainer, jobcontract.PublicationArgs)
	publication.VolumeMounts = []corev1.VolumeMount{publicationMount(true)}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            p.name,
			Namespace:       run.Namespace,
			Labels:          labels,
			Annotations:     p.annotations,
			OwnerReferences: []metav1.OwnerReference{runOwnerRef(run)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   p.deadline,
			TTLSecondsAfterFinished: cfg.Job.TTLSecondsAfterFinished,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: componentLabels(run, p.component), Annotations: maps.Clone(p.annotations)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           jobcontract.SearchIdentity(run.UID),
					AutomountServiceAccountToken: ptr.To(false),
					NodeSelector:                 cfg.Job.NodeSelector,
					Tolerations:                  cfg.Job.Tolerations,
					PriorityClassName:            cfg.Job.PriorityClassName,
					SecurityContext:              podSecurityContext(cfg),
					InitContainers:               []corev1.Container{p.input, reporter},
					Containers:                   []corev1.Container{p.main, publication},
					Volumes:                      append(podVolumes(cfg), p.volumes...),
				},
			},
		},
	}
	if queue != "" {
		job.Spec.Suspend = ptr.To(true)
	}
	return job
}

// hashAnnotation carries the hash of the input the operator recorded for the Job (set by the
// reconcile that creates the Job, before it) onto the Job and its pod; nil without one.
func hashAnnotation(key, hash string) map[string]string {
	if hash == "" {
		return nil
	}
	return map[string]string{key: hash}
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
// emptyDir, so the search (or the baseline) reads exactly what status.aisimulate records and no
// other object carries it. hashEnv names the hash to check (the search's or the baseline's),
// read from the pod's annotation.
func inputContainer(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration, hashEnv, annotation string) corev1.Container {
	input := reporterImageContainer(cfg, jobcontract.InputContainer, jobcontract.InputArgs)
	input.Env = []corev1.EnvVar{
		runNameEnv(run),
		fieldEnv(jobcontract.EnvRunNamespace, "metadata.namespace"),
		{Name: jobcontract.EnvInputDir, Value: jobcontract.InputDir},
		// The hash the operator recorded, from the pod's own annotation: no search identity can
		// write a pod, a Job or the Run's status.aisimulate, so the input the search reads is
		// the one the operator lowered (docs/operate/security.md).
		fieldEnv(hashEnv, "metadata.annotations['"+annotation+"']"),
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

// searchReporter is the search pod's reporter: it publishes what the search writes.
func searchReporter(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration) corev1.Container {
	reporter := reporterImageContainer(cfg, jobcontract.ReporterContainer, jobcontract.ReporterArgs)
	reporter.Env = []corev1.EnvVar{
		runNameEnv(run),
		fieldEnv(jobcontract.EnvRunNamespace, "metadata.namespace"),
		fieldEnv(jobcontract.EnvPodName, "metadata.name"),
		{Name: jobcontract.EnvOutputDir, Value: jobcontract.ResultDir},
		{Name: jobcontract.EnvSearchTmpDir, Value: jobcontract.SearchTmpDir},
		{Name: jobcontract.EnvRuntimeImages, Value: config.FormatRuntimeImages(cfg.RuntimeImages)},
		{Name: jobcontract.EnvPlannerImage, Value: cfg.Planner.Image},
	}
	reporter.VolumeMounts = []corev1.VolumeMount{
		outputMount(),
		// The search's /tmp, read-only: the real AISimulate's live ledger is there while the
		// search runs ($TMPDIR/aisimulate-monitor-XXXX/events.jsonl); the output directory gets
		// its copy only when the search ends (docs/design/results.md, "While the search runs").
		{Name: jobcontract.TmpVolume, MountPath: jobcontract.SearchTmpDir, ReadOnly: true},
		tokenMount(),
		publicationMount(false),
	}
	return reporter
}

// publicationMount is the mount of the outcome's volume: writable by the reporter only.
func publicationMount(readOnly bool) corev1.VolumeMount {
	return corev1.VolumeMount{Name: jobcontract.PublicationVolume, MountPath: jobcontract.PublicationDir, ReadOnly: readOnly}
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

// podVolumes are the volumes every search and baseline pod has: the input, the bounded output
// and /tmp, the reporter's outcome, and the search identity's token.
func podVolumes(cfg *v1alpha1.OperatorConfiguration) []corev1.Volume {
	return []corev1.Volume{
		{Name: jobcontract.InputVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: jobcontract.PublicationVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
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
