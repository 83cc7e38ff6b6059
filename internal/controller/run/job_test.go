package run

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

func testConfig() *v1alpha1.OperatorConfiguration {
	cfg := config.Default()
	cfg.Planner.Image = "registry.example/planner:1"
	cfg.Planner.Args = []string{"--seed", "7"}
	cfg.Planner.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}}
	cfg.Reporter.Image = "registry.example/operator:1"
	cfg.Job.TTLSecondsAfterFinished = ptr.To[int32](600)
	cfg.Job.NodeSelector = map[string]string{"pool": "cpu"}
	cfg.Job.Tolerations = []corev1.Toleration{{Key: "search", Operator: corev1.TolerationOpExists}}
	cfg.RuntimeImages = map[string]v1alpha1.RuntimeImage{"vllm": {Image: "v:1", EngineVersion: "0.31.0"}, "sglang": {Image: "s:1"}}
	return cfg
}

func testRun() *v1beta2.DynamoGraphDeploymentRun {
	return builders.Run("inference", "llama-run-3").UID("run-uid").Label(v1beta2.LabelRequestName, "llama").InputHash("sha256:in").Obj()
}

func TestBuildJob(t *testing.T) {
	restricted := &corev1.SecurityContext{
		RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	labels := map[string]string{
		"app.kubernetes.io/managed-by": "dgdr-operator", "app.kubernetes.io/component": "search",
		"nvidia.com/dgdr-run-name": "llama-run-3", "nvidia.com/dgdr-run-uid": "run-uid", "nvidia.com/dgdr-request-name": "llama",
	}
	output := corev1.VolumeMount{Name: "output", MountPath: "/var/run/dgdr/output"}
	want := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: "llama-run-3-search", Namespace: "inference", Labels: labels,
			Annotations: map[string]string{"nvidia.com/dgdr-input-hash": "sha256:in"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "nvidia.com/v1beta2", Kind: "DynamoGraphDeploymentRun",
				Name: "llama-run-3", UID: "run-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To[int64](21600),
			TTLSecondsAfterFinished: ptr.To[int32](600),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"nvidia.com/dgdr-input-hash": "sha256:in"}},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           jobcontract.SearchIdentityPrefix + "run-uid",
					AutomountServiceAccountToken: ptr.To(false),
					NodeSelector:                 map[string]string{"pool": "cpu"},
					Tolerations:                  []corev1.Toleration{{Key: "search", Operator: corev1.TolerationOpExists}},
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
						RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					InitContainers: []corev1.Container{{
						Name: "input", Image: "registry.example/operator:1", ImagePullPolicy: corev1.PullIfNotPresent,
						Args:                     []string{"report", "--write-input"},
						SecurityContext:          restricted,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						Env: []corev1.EnvVar{
							{Name: "DGDR_RUN_NAME", Value: "llama-run-3"},
							{Name: "DGDR_RUN_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
							{Name: "DGDR_INPUT_DIR", Value: "/etc/dgdr/input"},
							{Name: "DGDR_INPUT_HASH", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
								APIVersion: "v1", FieldPath: "metadata.annotations['nvidia.com/dgdr-input-hash']"}}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "input", MountPath: "/etc/dgdr/input"},
							{Name: "reporter-token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
					}, {
						// A sidecar: the kubelet restarts it whenever it exits while the search runs.
						Name: "reporter", Image: "registry.example/operator:1", ImagePullPolicy: corev1.PullIfNotPresent,
						RestartPolicy:            ptr.To(corev1.ContainerRestartPolicyAlways),
						Args:                     []string{"report", "--outcome-file", "/var/run/dgdr/publication/outcome.json"},
						SecurityContext:          restricted,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						Env: []corev1.EnvVar{
							{Name: "DGDR_RUN_NAME", Value: "llama-run-3"},
							{Name: "DGDR_RUN_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
							{Name: "DGDR_POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
							{Name: "DGDR_OUTPUT_DIR", Value: "/var/run/dgdr/output/result"},
							{Name: "DGDR_SEARCH_TMP_DIR", Value: "/var/run/dgdr/search-tmp"},
							{Name: "DGDR_RUNTIME_IMAGES", Value: `{"sglang":{"image":"s:1"},"vllm":{"image":"v:1","engineVersion":"0.31.0"}}`},
							{Name: "DGDR_PLANNER_IMAGE", Value: "registry.example/planner:1"},
						},
						VolumeMounts: []corev1.VolumeMount{output,
							{Name: "tmp", MountPath: "/var/run/dgdr/search-tmp", ReadOnly: true},
							{Name: "reporter-token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
							{Name: "publication", MountPath: "/var/run/dgdr/publication"}},
					}},
					Containers: []corev1.Container{
						{
							Name: "search", Image: "registry.example/planner:1", ImagePullPolicy: corev1.PullIfNotPresent,
							Command: []string{"aisimulate", "recommend"},
							Args: []string{"--config", "/etc/dgdr/input/input.yaml", "--output-dir", "/var/run/dgdr/output/result",
								"--format", "json", "--seed", "7"},
							Resources:                corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}},
							SecurityContext:          restricted,
							TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
							VolumeMounts: []corev1.VolumeMount{{Name: "input", MountPath: "/etc/dgdr/input", ReadOnly: true}, output,
								{Name: "tmp", MountPath: "/tmp"}},
						},
						{
							// Ends with the reporter's outcome: the pod runs until the result is published.
							Name: "publication", Image: "registry.example/operator:1", ImagePullPolicy: corev1.PullIfNotPresent,
							Args:                     []string{"report", "--await-outcome", "/var/run/dgdr/publication/outcome.json"},
							SecurityContext:          restricted,
							TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
							VolumeMounts:             []corev1.VolumeMount{{Name: "publication", MountPath: "/var/run/dgdr/publication", ReadOnly: true}},
						},
					},
					Volumes: []corev1.Volume{
						{Name: "input", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "publication", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "output", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("256Mi"))}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}},
						{Name: "reporter-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
							{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](600)}},
							{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
								Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
							{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
								{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
						}}}},
					},
				},
			},
		},
	}
	if diff := cmp.Diff(want, BuildJob(testRun(), testConfig())); diff != "" {
		t.Errorf("BuildJob (-want +got):\n%s", diff)
	}
}

func TestBuildJobKueue(t *testing.T) {
	r := testRun()
	r.Labels[v1beta2.LabelKueueQueueName] = "team-a"
	job := BuildJob(r, testConfig())
	if job.Spec.Suspend == nil || !*job.Spec.Suspend || job.Labels[v1beta2.LabelKueueQueueName] != "team-a" {
		t.Errorf("a Kueue Run needs a suspended Job with the queue label: suspend=%v labels=%v", job.Spec.Suspend, job.Labels)
	}
	if _, ok := job.Spec.Template.Labels[v1beta2.LabelKueueQueueName]; ok {
		t.Error("the queue label belongs on the Job, not the pods")
	}
}

// TestSearchImageComesOnlyFromTheConfiguration: the Run's spec, labels and annotations cannot
// reach the image.
func TestSearchImageComesOnlyFromTheConfiguration(t *testing.T) {
	r := testRun()
	r.Annotations = map[string]string{"image": "evil:1"}
	r.Labels["image"] = "evil"
	r.Spec.Model.Name = "evil.example/image:1"
	job := BuildJob(r, testConfig())
	data, _ := json.Marshal(job.Spec.Template.Spec.Containers)
	if strings.Contains(string(data), "evil") {
		t.Errorf("Run content reached the containers: %s", data)
	}
}

// TestSearchContainerHasNoToken: only the input init container and the reporter mount the
// service-account token; the search (the configured Planner image) reads its input from a
// read-only volume.
func TestSearchContainerHasNoToken(t *testing.T) {
	spec := BuildJob(testRun(), testConfig()).Spec.Template.Spec
	for _, c := range spec.Containers {
		if c.Name != jobcontract.SearchContainer {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name == jobcontract.TokenVolume || (m.Name == jobcontract.InputVolume && !m.ReadOnly) {
				t.Errorf("search container mount %+v", m)
			}
		}
	}
}

// TestBuildJobModelAccess: the cache claim is mounted read-only into the search container only,
// and HF_TOKEN comes from the token Secret (a secretKeyRef), never as a value.
func TestBuildJobModelAccess(t *testing.T) {
	run := testRun()
	run.Spec.Model = v1beta2.ModelSpec{
		Name:           "org/m",
		Cache:          &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "models", Path: "hf"}},
		TokenSecretRef: &v1beta2.TokenSecretReference{Name: "hf", Key: "token"},
	}
	spec := BuildJob(run, testConfig()).Spec.Template.Spec
	wantVolume := corev1.Volume{Name: "model-cache", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models", ReadOnly: true}}}
	if diff := cmp.Diff(wantVolume, spec.Volumes[len(spec.Volumes)-1]); diff != "" {
		t.Errorf("cache volume (-want +got):\n%s", diff)
	}
	wantMount := corev1.VolumeMount{Name: "model-cache", MountPath: "/opt/dgdr/model-cache", SubPath: "hf", ReadOnly: true}
	wantEnv := []corev1.EnvVar{
		{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "hf"}, Key: "token"}}},
		{Name: "HF_HOME", Value: "/opt/dgdr/model-cache"},
		{Name: "HF_HUB_OFFLINE", Value: "1"},
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		hasMount := false
		for _, m := range c.VolumeMounts {
			if m.Name == "model-cache" {
				hasMount = true
				if diff := cmp.Diff(wantMount, m); diff != "" {
					t.Errorf("%s: cache mount (-want +got):\n%s", c.Name, diff)
				}
			}
		}
		if c.Name != jobcontract.SearchContainer {
			if hasMount {
				t.Errorf("%s mounts the model cache", c.Name)
			}
			for _, e := range c.Env {
				if e.Name == "HF_TOKEN" {
					t.Errorf("%s gets HF_TOKEN", c.Name)
				}
			}
			continue
		}
		if !hasMount {
			t.Errorf("the search container does not mount the model cache")
		}
		if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
			t.Errorf("search env (-want +got):\n%s", diff)
		}
	}
}

// TestBuildJobHardening: the search pod's identity, its writable /tmp and the output volume's
// size limit come from the operator configuration (issue #17); only the search writes its /tmp,
// which the reporter reads.
func TestBuildJobHardening(t *testing.T) {
	cases := []struct {
		name                string
		edit                func(*v1alpha1.OperatorConfiguration)
		uid, gid, fsGroup   int64
		outputLimit, tmpLim string
	}{
		{name: "defaults", uid: 65532, gid: 65532, fsGroup: 65532, outputLimit: "256Mi", tmpLim: "1Gi"},
		{name: "configured", edit: func(c *v1alpha1.OperatorConfiguration) {
			c.Job.RunAsUser, c.Job.RunAsGroup, c.Job.FSGroup = ptr.To[int64](1001), ptr.To[int64](1002), ptr.To[int64](1003)
			c.Job.OutputSizeLimit, c.Job.TmpSizeLimit = ptr.To(resource.MustParse("64Mi")), ptr.To(resource.MustParse("2Gi"))
		}, uid: 1001, gid: 1002, fsGroup: 1003, outputLimit: "64Mi", tmpLim: "2Gi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.edit != nil {
				tc.edit(cfg)
			}
			spec := BuildJob(testRun(), cfg).Spec.Template.Spec
			sc := spec.SecurityContext
			if *sc.RunAsNonRoot != true || *sc.RunAsUser != tc.uid || *sc.RunAsGroup != tc.gid || *sc.FSGroup != tc.fsGroup {
				t.Errorf("pod securityContext %+v", sc)
			}
			limits := map[string]string{}
			for _, v := range spec.Volumes {
				if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
					limits[v.Name] = v.EmptyDir.SizeLimit.String()
				}
			}
			if limits[jobcontract.OutputVolume] != tc.outputLimit || limits[jobcontract.TmpVolume] != tc.tmpLim {
				t.Errorf("emptyDir size limits %v, want output %s, tmp %s", limits, tc.outputLimit, tc.tmpLim)
			}
			for _, c := range append(spec.InitContainers, spec.Containers...) {
				tmp, searchTmp := false, false
				for _, m := range c.VolumeMounts {
					tmp = tmp || (m.Name == jobcontract.TmpVolume && m.MountPath == "/tmp" && !m.ReadOnly)
					if m.Name == jobcontract.TmpVolume && m.MountPath != "/tmp" {
						searchTmp = m.MountPath == jobcontract.SearchTmpDir && m.ReadOnly
						if !searchTmp {
							t.Errorf("container %s mounts the search's tmp %+v", c.Name, m)
						}
					}
				}
				if want := c.Name == jobcontract.SearchContainer; tmp != want {
					t.Errorf("container %s: writable /tmp mounted = %v, want %v", c.Name, tmp, want)
				}
				// The reporter reads the search's tmp (the real AISimulate's live ledger), read-only.
				if want := c.Name == jobcontract.ReporterContainer; searchTmp != want {
					t.Errorf("container %s: the search's tmp mounted read-only at %s = %v, want %v", c.Name, jobcontract.SearchTmpDir, searchTmp, want)
				}
				if !*c.SecurityContext.ReadOnlyRootFilesystem {
					t.Errorf("container %s: root file system not read-only", c.Name)
				}
			}
		})
	}
}

// baselineRun is a re-search Run with a recorded baseline whose search's input container
// reported the window it cut, as the Run controller has it when it creates the baseline Job.
func baselineRun() *v1beta2.DynamoGraphDeploymentRun {
	r := testRun()
	r.Labels[v1beta2.LabelRequestUID] = "llama-uid"
	r.Annotations = map[string]string{v1beta2.AnnotationResearchWindowEnd: "2026-12-03T12:00:00Z"}
	r.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traffic",
		Rotation: &v1beta2.CaptureRotation{MaxAgeHours: ptr.To[int32](48)}}}
	r.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 60, WindowMinutes: ptr.To[int32](360), MinRequests: ptr.To[int32](50)}
	r.Spec.Model = v1beta2.ModelSpec{Name: "org/m",
		Cache:          &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "models", Path: "hf"}},
		TokenSecretRef: &v1beta2.TokenSecretReference{Name: "hf", Key: "token"}}
	r.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{
		Source: &v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "traffic", Path: "t.jsonl"}}}}
	r.Status.AISimulate.Baseline = &v1beta2.BaselineInputStatus{Candidate: "llama-run-1-0001",
		Input: &runtime.RawExtension{Raw: []byte(`{"engine":{}}`)}, InputHash: "sha256:base"}
	r.Status.AISimulate.Trace = &v1beta2.TraceSourceStatus{Window: &v1beta2.TraceWindowStatus{ClaimName: "traffic",
		Start: ptr.To(metav1.NewTime(time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC))), End: ptr.To(metav1.NewTime(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))),
		Requests: ptr.To[int64](51002), SHA256: "sha256:" + strings.Repeat("ab", 32)}}
	return r
}

// TestSearchJobHasNoBaseline: a re-search's search Job is the plain search pod (input, reporter
// sidecar, search and publication): the baseline is a Job of its own.
func TestSearchJobHasNoBaseline(t *testing.T) {
	job := BuildJob(baselineRun(), testConfig())
	spec := job.Spec.Template.Spec
	var names []string
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		names = append(names, c.Name)
		for _, e := range c.Env {
			if e.Name == jobcontract.EnvBaselineInputHash {
				t.Errorf("container %s of the search Job checks the baseline's input", c.Name)
			}
		}
	}
	if diff := cmp.Diff([]string{"input", "reporter", "search", "publication"}, names); diff != "" {
		t.Errorf("search pod containers (-want +got):\n%s", diff)
	}
	if _, ok := job.Annotations[v1beta2.AnnotationBaselineInputHash]; ok {
		t.Errorf("the search Job carries the baseline's hash: %v", job.Annotations)
	}
}

// TestBuildBaselineJob: a re-search's baseline Job, owned by its Run and named after it, runs as
// the Run's search identity: its input container cuts the recorded window again from the claim,
// read-only (no pruning), checked against the search's hash, and writes the baseline input
// checked against the hash on the Job; the baseline container runs the configured predict
// command with the search's model access and the window; the reporter publishes it in baseline
// mode; the publication container ends with its outcome; the deadline is
// job.baselineDeadlineSeconds. A Run without a recorded baseline gets none.
func TestBuildBaselineJob(t *testing.T) {
	cfg := testConfig()
	cfg.Planner.PredictCommand = []string{"aisim", "predict"}
	cfg.Job.BaselineDeadlineSeconds = ptr.To[int64](900)
	run := baselineRun()
	search := BuildJob(run, cfg)
	job := BuildBaselineJob(run, cfg)

	labels := maps.Clone(search.Labels)
	labels["app.kubernetes.io/component"] = "baseline"
	annotations := map[string]string{"nvidia.com/dgdr-baseline-input-hash": "sha256:base"}
	wantMeta := metav1.ObjectMeta{Name: "llama-run-3-baseline", Namespace: "inference", Labels: labels, Annotations: annotations,
		OwnerReferences: search.OwnerReferences}
	if diff := cmp.Diff(wantMeta, job.ObjectMeta); diff != "" {
		t.Errorf("baseline Job metadata (-want +got):\n%s", diff)
	}
	if *job.Spec.ActiveDeadlineSeconds != 900 || *job.Spec.BackoffLimit != 0 || job.Spec.Template.Spec.ServiceAccountName != search.Spec.Template.Spec.ServiceAccountName {
		t.Errorf("baseline Job spec: deadline %d, backoff %d, service account %q", *job.Spec.ActiveDeadlineSeconds, *job.Spec.BackoffLimit, job.Spec.Template.Spec.ServiceAccountName)
	}
	if diff := cmp.Diff(annotations, job.Spec.Template.Annotations); diff != "" {
		t.Errorf("pod annotations (-want +got):\n%s", diff)
	}
	spec, searchSpec := job.Spec.Template.Spec, search.Spec.Template.Spec

	wantInput := *searchSpec.InitContainers[0].DeepCopy()
	wantInput.Env[3] = corev1.EnvVar{Name: "DGDR_BASELINE_INPUT_HASH", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: "metadata.annotations['nvidia.com/dgdr-baseline-input-hash']"}}}
	wantInput.Args = []string{"report", "--write-input",
		"--trace-window-source", "/var/run/dgdr/capture", "--trace-window-directory", "llama-uid",
		"--trace-window-start", "2026-12-03T06:00:00Z", "--trace-window-end", "2026-12-03T12:00:00Z",
		"--trace-window-out", "/var/run/dgdr/trace/window.jsonl.gz", "--trace-window-sha256", "sha256:" + strings.Repeat("ab", 32),
		"--termination-log", "/dev/termination-log"}
	wantInput.VolumeMounts[2].ReadOnly = true // the capture claim: the search's cut pruned it
	wantReporter := *searchSpec.InitContainers[1].DeepCopy()
	wantReporter.Args = []string{"report", "--baseline", "--outcome-file", "/var/run/dgdr/publication/outcome.json"}
	wantReporter.Env = append(wantReporter.Env[:3:3], corev1.EnvVar{Name: "DGDR_OUTPUT_DIR", Value: "/var/run/dgdr/output/baseline"})
	wantReporter.VolumeMounts = []corev1.VolumeMount{{Name: "output", MountPath: "/var/run/dgdr/output"},
		{Name: "reporter-token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		{Name: "publication", MountPath: "/var/run/dgdr/publication"}}
	if diff := cmp.Diff([]corev1.Container{wantInput, wantReporter}, spec.InitContainers); diff != "" {
		t.Errorf("init containers (-want +got):\n%s", diff)
	}

	wantBaseline := *searchSpec.Containers[0].DeepCopy()
	wantBaseline.Name = "baseline"
	wantBaseline.Command = []string{"aisim", "predict"}
	// The search's configured args are recommend's, not predict's.
	wantBaseline.Args = []string{"--config", "/etc/dgdr/input/baseline.yaml", "--output-dir", "/var/run/dgdr/output/baseline", "--format", "json"}
	if diff := cmp.Diff([]corev1.Container{wantBaseline, searchSpec.Containers[1]}, spec.Containers); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	wantVolumes := slices.Clone(searchSpec.Volumes)
	wantVolumes[len(wantVolumes)-1].PersistentVolumeClaim.ReadOnly = true
	if diff := cmp.Diff(wantVolumes, spec.Volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}

	plain := testRun()
	if got := BuildBaselineJob(plain, cfg); got != nil {
		t.Errorf("a Run without a recorded baseline got a baseline Job %s", got.Name)
	}
}

// TestBuildJobResearchWindow: a re-search Run's input container mounts the capture claim
// read-only and cuts the window [end − window, end) of its request's directory of the claim into
// the trace volume, an emptyDir bounded by the largest window, that the search mounts read-only
// where its input names the window file; the search never gets the claim.
func TestBuildJobResearchWindow(t *testing.T) {
	run := testRun()
	run.Labels[v1beta2.LabelRequestUID] = "llama-uid"
	run.Annotations = map[string]string{v1beta2.AnnotationResearchWindowEnd: "2026-12-03T12:00:00Z"}
	run.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traffic"}}
	run.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 60, WindowMinutes: ptr.To[int32](360),
		MinRequests: ptr.To[int32](50)}
	plain := BuildJob(testRun(), testConfig())
	spec := BuildJob(run, testConfig()).Spec.Template.Spec

	wantArgs := append(slices.Clone(plain.Spec.Template.Spec.InitContainers[0].Args),
		"--trace-window-source", "/var/run/dgdr/capture", "--trace-window-directory", "llama-uid",
		"--trace-window-start", "2026-12-03T06:00:00Z", "--trace-window-end", "2026-12-03T12:00:00Z",
		"--trace-window-out", "/var/run/dgdr/trace/window.jsonl.gz", "--trace-window-min-requests", "50",
		"--termination-log", "/dev/termination-log")
	if diff := cmp.Diff(wantArgs, spec.InitContainers[0].Args); diff != "" {
		t.Errorf("input args (-want +got):\n%s", diff)
	}
	wantInputMounts := append(slices.Clone(plain.Spec.Template.Spec.InitContainers[0].VolumeMounts),
		corev1.VolumeMount{Name: "capture", MountPath: "/var/run/dgdr/capture", ReadOnly: true},
		corev1.VolumeMount{Name: "trace", MountPath: "/var/run/dgdr/trace"})
	if diff := cmp.Diff(wantInputMounts, spec.InitContainers[0].VolumeMounts); diff != "" {
		t.Errorf("input mounts (-want +got):\n%s", diff)
	}
	wantSearchMounts := append(slices.Clone(plain.Spec.Template.Spec.Containers[0].VolumeMounts),
		corev1.VolumeMount{Name: "trace", MountPath: "/var/run/dgdr/trace", ReadOnly: true})
	if diff := cmp.Diff(wantSearchMounts, spec.Containers[0].VolumeMounts); diff != "" {
		t.Errorf("search mounts (-want +got):\n%s", diff)
	}
	wantVolumes := append(slices.Clone(plain.Spec.Template.Spec.Volumes),
		corev1.Volume{Name: "trace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("144Mi"))}}},
		corev1.Volume{Name: "capture", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "traffic", ReadOnly: true}}})
	if diff := cmp.Diff(wantVolumes, spec.Volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
}

// TestBuildJobResearchWindowPrunes: with capture.rotation.maxAgeHours the input container also
// deletes the segments older than the bound, so it alone mounts the claim writable.
func TestBuildJobResearchWindowPrunes(t *testing.T) {
	run := testRun()
	run.Annotations = map[string]string{v1beta2.AnnotationResearchWindowEnd: "2026-12-03T12:00:00Z"}
	run.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traffic",
		Rotation: &v1beta2.CaptureRotation{MaxAgeHours: ptr.To[int32](48)}}}
	run.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 60}
	spec := BuildJob(run, testConfig()).Spec.Template.Spec
	args := spec.InitContainers[0].Args
	if diff := cmp.Diff([]string{"--trace-prune-before", "2026-12-01T12:00:00Z"}, args[len(args)-2:]); diff != "" {
		t.Errorf("input args end (-want +got):\n%s", diff)
	}
	for _, m := range spec.InitContainers[0].VolumeMounts {
		if m.Name == "capture" && m.ReadOnly {
			t.Errorf("the input container cannot delete segments: %+v", m)
		}
	}
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == "capture" {
				t.Errorf("container %s mounts the claim", c.Name)
			}
		}
	}
	for _, v := range spec.Volumes {
		if v.Name == "capture" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ReadOnly) {
			t.Errorf("capture volume %+v", v)
		}
	}
}
