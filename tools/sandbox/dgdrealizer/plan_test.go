package dgdrealizer

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

var testSettings = Settings{ModelDir: "/repo/tiny-llama", LauncherDir: "/repo/python", DiscoveryDir: "/state/dgd/d", AISSystem: "h200_sxm"}

func deploymentFromYAML(t *testing.T, spec string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(spec), &m); err != nil {
		t.Fatal(err)
	}
	d := &unstructured.Unstructured{Object: map[string]any{"spec": m}}
	d.SetGroupVersionKind(GVK)
	d.SetNamespace("team")
	d.SetName("llama")
	d.SetUID("0123456789abcdef")
	d.SetGeneration(3)
	return d
}

// podView is what a plan decides for one pod.
type podView struct {
	Name, Type, Image string
	Command, Args     []string
	GPUs              string
}

func viewPods(pods []corev1.Pod) []podView {
	var out []podView
	for _, p := range pods {
		c := p.Spec.Containers[0]
		gpus := ""
		if q, ok := c.Resources.Limits["nvidia.com/gpu"]; ok {
			gpus = q.String()
		}
		out = append(out, podView{Name: p.Name, Type: p.Labels[LabelComponentType], Image: c.Image, Command: c.Command, Args: c.Args, GPUs: gpus})
	}
	return out
}

func workerArgs(backend, model string, tp int, extra ...string) []string {
	ais := `{"backend":"` + backend + `","model":"/opt/dgdr-sandbox/model","system":"h200_sxm","tp":` + string(rune('0'+tp)) + `}`
	return append([]string{"--profile-out", "/var/run/dynamo/profile/perf.npz", "--model-path", "/opt/dgdr-sandbox/model",
		"--model-name", model, "--engine-type", backend, "--ais-perf-config", ais}, extra...)
}

var launcher = []string{"python3", "/opt/dgdr-sandbox/launcher/mocker_worker.py"}

func TestPlanDeploymentPods(t *testing.T) {
	frontend := func(image string, routerMode bool) podView {
		cmd := []string{"python3", "-m", "dynamo.frontend", "--http-port", "31000"}
		if !routerMode {
			cmd = append(cmd, "--router-mode", "round-robin")
		}
		return podView{Name: "llama-frontend", Type: "frontend", Image: image, Command: cmd}
	}
	tests := []struct {
		name string
		spec string
		want []podView
	}{{
		name: "sglang aggregated: replicas, tensor parallelism, page size, memory fraction and prefill budgets",
		spec: `
backendFramework: sglang
components:
- {name: Frontend, type: frontend, replicas: 1, podTemplate: {spec: {containers: [{name: main, image: sg:1}]}}}
- name: SGLangWorker
  type: worker
  replicas: 2
  podTemplate: {spec: {containers: [{name: main, image: sg:1, command: [python3, -m, dynamo.sglang],
    args: [--model-path, Qwen/Qwen3-0.6B, --served-model-name, Qwen/Qwen3-0.6B, --tp, "2", --chunked-prefill-size, "8192",
      --max-prefill-tokens, "8192", --max-running-requests, "256", --context-length, "8192", --page-size, "32", --mem-fraction-static, "0.9"],
    resources: {limits: {nvidia.com/gpu: "2"}, requests: {nvidia.com/gpu: "2"}}}]}}
`,
		want: []podView{
			frontend("sg:1", false),
			{Name: "llama-sglangworker-0", Type: "worker", Image: "sg:1", Command: launcher, GPUs: "2", Args: workerArgs("sglang", "Qwen/Qwen3-0.6B", 2,
				"--data-parallel-size", "1", "--block-size", "32", "--max-num-seqs", "256",
				"--max-model-len", "8192", "--mem-fraction-static", "0.9", "--sglang-chunked-prefill-size", "8192", "--sglang-max-prefill-tokens", "8192")},
			{Name: "llama-sglangworker-1", Type: "worker", Image: "sg:1", Command: launcher, GPUs: "2", Args: workerArgs("sglang", "Qwen/Qwen3-0.6B", 2,
				"--data-parallel-size", "1", "--block-size", "32", "--max-num-seqs", "256",
				"--max-model-len", "8192", "--mem-fraction-static", "0.9", "--sglang-chunked-prefill-size", "8192", "--sglang-max-prefill-tokens", "8192")},
		},
	}, {
		name: "vllm disaggregated: prefill and decode roles, data parallelism, prefix caching off, router mode from the env",
		spec: `
backendFramework: vllm
components:
- {name: Frontend, type: frontend, podTemplate: {spec: {containers: [{name: main, image: vl:1, env: [{name: DYN_ROUTER_MODE, value: kv}]}]}}}
- name: VllmPrefillWorker
  type: prefill
  podTemplate: {spec: {containers: [{name: main, image: vl:1,
    args: [--model, meta-llama/Llama-3.1-8B-Instruct, --tensor-parallel-size, "4", --block-size, "64", --gpu-memory-utilization, "0.88"]}]}}
- name: VllmDecodeWorker
  type: decode
  replicas: 1
  podTemplate: {spec: {containers: [{name: main, image: vl:1,
    args: [--model, meta-llama/Llama-3.1-8B-Instruct, --tensor-parallel-size=1, --data-parallel-size, "8", --max-num-seqs, "512", --no-enable-prefix-caching]}]}}
- {name: Planner, type: planner, podTemplate: {spec: {containers: [{name: main, image: planner:1}]}}}
`,
		want: []podView{
			frontend("vl:1", true),
			{Name: "llama-vllmprefillworker-0", Type: "prefill", Image: "vl:1", Command: launcher, Args: workerArgs("vllm", "meta-llama/Llama-3.1-8B-Instruct", 4,
				"--data-parallel-size", "1", "--block-size", "64", "--gpu-memory-utilization", "0.88", "--disaggregation-mode", "prefill")},
			{Name: "llama-vllmdecodeworker-0", Type: "decode", Image: "vl:1", Command: launcher, Args: workerArgs("vllm", "meta-llama/Llama-3.1-8B-Instruct", 1,
				"--data-parallel-size", "8", "--max-num-seqs", "512", "--no-enable-prefix-caching", "--disaggregation-mode", "decode")},
		},
	}, {
		name: "trtllm: KV block size, batch size and free memory fraction; no data parallel flag",
		spec: `
backendFramework: trtllm
components:
- {name: Frontend, type: frontend, podTemplate: {spec: {containers: [{name: main, image: trt:1}]}}}
- name: TRTLLMWorker
  type: worker
  replicas: 1
  podTemplate: {spec: {containers: [{name: main, image: trt:1,
    args: [--model-path, m/x, --tensor-parallel-size, "8", --max-batch-size, "64", --max-num-tokens, "4096", --kv-block-size, "32", --free-gpu-memory-fraction, "0.9"]}]}}
`,
		want: []podView{
			frontend("trt:1", false),
			{Name: "llama-trtllmworker-0", Type: "worker", Image: "trt:1", Command: launcher, Args: workerArgs("trtllm", "m/x", 8,
				"--data-parallel-size", "1", "--block-size", "32", "--max-num-seqs", "64", "--max-num-batched-tokens", "4096", "--free-gpu-memory-fraction", "0.9")},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := PlanDeployment(deploymentFromYAML(t, tt.spec), 31000, testSettings)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, viewPods(plan.Pods)); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanDeploymentShared: every pod is owned by the deployment, carries its generation,
// shares its discovery directory and Dynamo namespace, and mounts the local model; the
// frontend's port is in its pod and its Service.
func TestPlanDeploymentShared(t *testing.T) {
	d := deploymentFromYAML(t, `
backendFramework: sglang
env: [{name: FROM_SPEC, value: "1"}]
components:
- {name: Frontend, type: frontend, podTemplate: {spec: {containers: [{name: main, image: sg:1}]}}}
- {name: W, type: worker, podTemplate: {spec: {containers: [{name: main, image: sg:1, args: [--model-path, m]}]}}}
`)
	plan, err := PlanDeployment(d, 31000, testSettings)
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "nvidia.com/v1beta1", Kind: "DynamoGraphDeployment", Name: "llama", UID: "0123456789abcdef",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	wantEnv := []corev1.EnvVar{
		{Name: "DYN_DISCOVERY_BACKEND", Value: "file"}, {Name: "DYN_FILE_KV", Value: DiscoveryMount},
		{Name: "DYN_REQUEST_PLANE", Value: "tcp"}, {Name: "DYN_EVENT_PLANE", Value: "zmq"},
		{Name: "DYN_NAMESPACE", Value: "team_llama"}, {Name: "HF_HUB_OFFLINE", Value: "1"}, {Name: "FROM_SPEC", Value: "1"},
	}
	if plan.ModelName != "m" {
		t.Errorf("model name %q", plan.ModelName)
	}
	for _, p := range plan.Pods {
		if diff := cmp.Diff([]metav1.OwnerReference{owner}, p.OwnerReferences); diff != "" {
			t.Errorf("%s owner (-want +got):\n%s", p.Name, diff)
		}
		if p.Annotations[AnnotationGeneration] != "3" || p.Labels[LabelDeployment] != "llama" {
			t.Errorf("%s metadata: %v %v", p.Name, p.Labels, p.Annotations)
		}
		if diff := cmp.Diff(wantEnv, p.Spec.Containers[0].Env); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", p.Name, diff)
		}
		hostPaths := map[string]string{}
		for _, v := range p.Spec.Volumes {
			if v.HostPath != nil {
				hostPaths[v.Name] = v.HostPath.Path
			}
		}
		want := map[string]string{"model": "/repo/tiny-llama", "discovery": "/state/dgd/d"}
		if p.Labels[LabelComponentType] == "worker" {
			want["launcher"] = "/repo/python"
		}
		if diff := cmp.Diff(want, hostPaths); diff != "" {
			t.Errorf("%s host paths (-want +got):\n%s", p.Name, diff)
		}
	}
	front := plan.Pods[0].Spec.Containers[0]
	if diff := cmp.Diff([]corev1.ContainerPort{{Name: "http", ContainerPort: 31000, Protocol: corev1.ProtocolTCP}}, front.Ports); diff != "" {
		t.Errorf("frontend ports (-want +got):\n%s", diff)
	}
	wantSvc := corev1.ServiceSpec{
		Selector: map[string]string{LabelDeployment: "llama", LabelComponentType: "frontend"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 31000, TargetPort: intstr.FromInt32(31000), Protocol: corev1.ProtocolTCP}},
	}
	if diff := cmp.Diff(wantSvc, plan.Frontend.Spec); diff != "" || plan.Frontend.Name != "llama-frontend" {
		t.Errorf("Service %s (-want +got):\n%s", plan.Frontend.Name, diff)
	}
}

func TestPlanDeploymentErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, spec, want string }{
		{"unknown backend", `{backendFramework: tgi, components: []}`, "spec.backendFramework"},
		{"no frontend", `
backendFramework: sglang
components: [{name: W, type: worker, podTemplate: {spec: {containers: [{name: main, image: x, args: [--model-path, m]}]}}}]`,
			"spec.components: no component of type frontend"},
		{"worker without a model", `
backendFramework: vllm
components:
- {name: F, type: frontend, podTemplate: {spec: {containers: [{name: main, image: x}]}}}
- {name: W, type: worker, podTemplate: {spec: {containers: [{name: main, image: x, args: [--tensor-parallel-size, "2"]}]}}}`,
			"spec.components[1].podTemplate.spec.containers[main].args: no model"},
		{"tensor parallelism not a number", `
backendFramework: sglang
components:
- {name: F, type: frontend, podTemplate: {spec: {containers: [{name: main, image: x}]}}}
- {name: W, type: worker, podTemplate: {spec: {containers: [{name: main, image: x, args: [--model-path, m, --tp, two]}]}}}`,
			`spec.components[1].podTemplate.spec.containers[main].args[tensor parallel]: "two" is not a positive integer`},
		{"two models", `
backendFramework: sglang
components:
- {name: F, type: frontend, podTemplate: {spec: {containers: [{name: main, image: x}]}}}
- {name: P, type: prefill, podTemplate: {spec: {containers: [{name: main, image: x, args: [--model-path, a]}]}}}
- {name: D, type: decode, podTemplate: {spec: {containers: [{name: main, image: x, args: [--model-path, b]}]}}}`,
			`spec.components[2]: serves "b", another worker "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PlanDeployment(deploymentFromYAML(t, tt.spec), 31000, testSettings)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestPlanDeploymentCarriesTheFrontendsVolumes(t *testing.T) {
	d := deploymentFromYAML(t, `
backendFramework: vllm
components:
- name: Frontend
  type: frontend
  podTemplate:
    spec:
      containers:
      - name: main
        image: x
        env:
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: DYN_REQUEST_TRACE_OUTPUT_PATH, value: /opt/trace/request-trace}
        volumeMounts: [{name: trace, mountPath: /opt/trace, subPathExpr: $(POD)}]
      volumes: [{name: trace, persistentVolumeClaim: {claimName: traces}}]
- name: W
  type: worker
  podTemplate:
    spec:
      containers: [{name: main, image: x, args: [--model, m], volumeMounts: [{name: cache, mountPath: /cache}]}]
      volumes: [{name: cache, persistentVolumeClaim: {claimName: hf-cache}}]
`)
	plan, err := PlanDeployment(d, 31000, testSettings)
	if err != nil {
		t.Fatal(err)
	}
	front := plan.Pods[0]
	wantVolume := corev1.Volume{Name: "trace", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "traces"}}}
	if !slices.ContainsFunc(front.Spec.Volumes, func(v corev1.Volume) bool { return cmp.Equal(v, wantVolume) }) {
		t.Errorf("frontend volumes %v, want %v among them", front.Spec.Volumes, wantVolume)
	}
	ct := front.Spec.Containers[0]
	wantMount := corev1.VolumeMount{Name: "trace", MountPath: "/opt/trace", SubPathExpr: "$(POD)"}
	if !slices.ContainsFunc(ct.VolumeMounts, func(m corev1.VolumeMount) bool { return cmp.Equal(m, wantMount) }) {
		t.Errorf("frontend mounts %v, want %v among them", ct.VolumeMounts, wantMount)
	}
	wantEnv := corev1.EnvVar{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
	if !slices.ContainsFunc(ct.Env, func(e corev1.EnvVar) bool { return cmp.Equal(e, wantEnv) }) {
		t.Errorf("frontend env %v, want %v among it", ct.Env, wantEnv)
	}
	worker := plan.Pods[1]
	if slices.ContainsFunc(worker.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "cache" }) {
		t.Errorf("worker volumes %v: the mocker reads no model volume", worker.Spec.Volumes)
	}

	clash := deploymentFromYAML(t, `
backendFramework: vllm
components:
- {name: F, type: frontend, podTemplate: {spec: {containers: [{name: main, image: x}], volumes: [{name: model, emptyDir: {}}]}}}
- {name: W, type: worker, podTemplate: {spec: {containers: [{name: main, image: x, args: [--model, m]}]}}}
`)
	if _, err := PlanDeployment(clash, 31000, testSettings); err == nil || !strings.Contains(err.Error(), "spec.components[0].podTemplate.spec.volumes[model]") {
		t.Errorf("a frontend volume named like the realizer's: error %v", err)
	}
}

func TestDynamoNamespace(t *testing.T) {
	for _, tt := range []struct{ ns, name, want string }{
		{"team", "llama", "team_llama"},
		{"e2e-x1", "Llama.Prod", "e2e_x1_llama_prod"},
	} {
		if got := DynamoNamespace(tt.ns, tt.name); got != tt.want {
			t.Errorf("DynamoNamespace(%q, %q) = %q, want %q", tt.ns, tt.name, got, tt.want)
		}
	}
}

// TestPlanDeploymentKeepsPlacement: each pod keeps its component's placement (as the Dynamo
// operator applies the pod template), and a worker that selects a GPU product is timed with that
// product's AISimulate system; one that selects none with the configured default.
func TestPlanDeploymentKeepsPlacement(t *testing.T) {
	d := deploymentFromYAML(t, `
backendFramework: vllm
components:
- {name: Frontend, type: frontend, podTemplate: {spec: {containers: [{name: main, image: v:1}]}}}
- name: Pinned
  type: prefill
  podTemplate:
    spec:
      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
        {matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3, NVIDIA-H100-SXM5-80GB]}]}]}}}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers: [{name: main, image: v:1, args: [--model, m]}]
- name: Selected
  type: decode
  podTemplate: {spec: {nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}, containers: [{name: main, image: v:1, args: [--model, m]}]}}
- {name: Free, type: worker, podTemplate: {spec: {containers: [{name: main, image: v:1, args: [--model, m]}]}}}
`)
	plan, err := PlanDeployment(d, 31000, testSettings)
	if err != nil {
		t.Fatal(err)
	}
	systems := map[string]string{}
	for _, p := range plan.Pods[1:] {
		args := p.Spec.Containers[0].Args
		i := slices.Index(args, "--ais-perf-config")
		var cfg struct {
			System string `json:"system"`
		}
		if err := yaml.Unmarshal([]byte(args[i+1]), &cfg); err != nil {
			t.Fatal(err)
		}
		systems[p.Name] = cfg.System
	}
	want := map[string]string{"llama-pinned-0": "h100_sxm", "llama-selected-0": "a100_sxm", "llama-free-0": "h200_sxm"}
	if diff := cmp.Diff(want, systems); diff != "" {
		t.Errorf("mocker systems (-want +got):\n%s", diff)
	}
	pinned := plan.Pods[1].Spec
	if pinned.Affinity == nil || len(pinned.Tolerations) != 1 {
		t.Errorf("the pinned worker lost its placement: affinity %v, tolerations %v", pinned.Affinity, pinned.Tolerations)
	}
	if plan.Pods[2].Spec.NodeSelector["nvidia.com/gpu.product"] != "NVIDIA-A100-SXM4-80GB" {
		t.Errorf("the selected worker lost its nodeSelector: %v", plan.Pods[2].Spec.NodeSelector)
	}
}
