// Package dgdrealizer stands in for the Dynamo operator in the sandbox: it turns each
// DynamoGraphDeployment into pods that run the real Dynamo frontend and mocker workers (the
// pinned ai-dynamo of the upstream venv), and sets the deployment's Ready condition once the
// frontend lists the model. The operator never imports it. See docs/develop/sandbox.md.
package dgdrealizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
)

// Labels and annotations of the objects the realizer creates.
const (
	// LabelDeployment names the DynamoGraphDeployment a pod or Service realizes.
	LabelDeployment = "nvidia.com/dynamo-graph-deployment-name"
	// LabelComponent names the deployment's component a pod runs.
	LabelComponent = "nvidia.com/dynamo-component"
	// LabelComponentType is the component's type (frontend, worker, prefill, decode).
	LabelComponentType = "nvidia.com/dynamo-component-type"
	// AnnotationGeneration is the deployment generation a pod was planned from: a pod of an
	// older generation is replaced.
	AnnotationGeneration = "sandbox.dgdr-operator.dev/dgd-generation"
	// LabelRealize "false" on a Namespace opts its DynamoGraphDeployments out. The realizer,
	// like the Dynamo operator, realizes every other deployment; tests that play the Dynamo
	// operator themselves (writing the status) opt out so that they are not raced.
	LabelRealize = "sandbox.dgdr-operator.dev/realize-dgd"
)

// Container paths of the pods' volumes; the node agent maps them to host directories.
const (
	ModelMount     = "/opt/dgdr-sandbox/model"
	LauncherMount  = "/opt/dgdr-sandbox/launcher"
	DiscoveryMount = "/var/run/dynamo/discovery"
	ProfileMount   = "/var/run/dynamo/profile"
	// LauncherScript is the worker launcher under LauncherMount (python/mocker_worker.py).
	LauncherScript = "mocker_worker.py"
	// FrontendPortName names the frontend's HTTP port in its pod and Service.
	FrontendPortName = "http"
)

// Settings are the host facts a plan depends on.
type Settings struct {
	// ModelDir is the host directory of the tokenizer and config.json the workers serve
	// (testdata/tiny-llama): nothing is downloaded.
	ModelDir string
	// LauncherDir is the host directory holding LauncherScript.
	LauncherDir string
	// DiscoveryDir is the host directory the deployment's processes share for Dynamo's file
	// discovery backend (one per deployment).
	DiscoveryDir string
	// AISSystem is the AISimulate system whose performance data times the steps of workers
	// that select no GPU product; a worker that selects one (nvidia.com/gpu.product, as the
	// operator's rendering does) is timed with that product's system.
	AISSystem string
}

// Plan is what one DynamoGraphDeployment becomes.
type Plan struct {
	// ModelName is the name the frontend serves (the workers' served model name).
	ModelName string
	Pods      []corev1.Pod
	// Frontend is the Service in front of the frontend pod: its port is the frontend's HTTP
	// port, free on the host (pods are host processes).
	Frontend corev1.Service
}

// role is a worker component's parallelism and engine limits, read from its arguments.
type role struct {
	model          string
	tp, dp         int
	blockSize      string
	maxSeqs        string
	batchedTokens  string
	maxModelLen    string
	memoryFraction string
	noPrefixCache  bool
	// engineArgs are the backend-specific mocker flags with their values.
	engineArgs []string
}

// engineFlags are the flags of one backend's engine that the mocker takes.
type engineFlags struct {
	model, servedName                     []string
	tp, dp                                []string
	blockSize, maxSeqs, batched, modelLen []string
	memoryFraction                        string // the backend's flag, which the mocker takes under the same name
	// renamed maps a backend flag to the mocker flag that models it, in the order passed on.
	renamed [][2]string
}

var backends = map[string]engineFlags{
	"sglang": {
		model: []string{"--model-path"}, servedName: []string{"--served-model-name"},
		tp: []string{"--tp", "--tp-size", "--tensor-parallel-size"}, dp: []string{"--dp", "--dp-size", "--data-parallel-size"},
		blockSize: []string{"--page-size"}, maxSeqs: []string{"--max-running-requests"},
		modelLen:       []string{"--context-length"},
		memoryFraction: "--mem-fraction-static",
		renamed: [][2]string{
			{"--chunked-prefill-size", "--sglang-chunked-prefill-size"},
			{"--max-prefill-tokens", "--sglang-max-prefill-tokens"},
		},
	},
	"vllm": {
		model: []string{"--model"}, servedName: []string{"--served-model-name"},
		tp: []string{"--tensor-parallel-size", "-tp"}, dp: []string{"--data-parallel-size", "-dp"},
		blockSize: []string{"--block-size"}, maxSeqs: []string{"--max-num-seqs"},
		batched: []string{"--max-num-batched-tokens"}, modelLen: []string{"--max-model-len"},
		memoryFraction: "--gpu-memory-utilization",
	},
	"trtllm": {
		model: []string{"--model-path"}, servedName: []string{"--served-model-name"},
		tp:        []string{"--tensor-parallel-size"},
		blockSize: []string{"--kv-block-size"}, maxSeqs: []string{"--max-batch-size"},
		batched: []string{"--max-num-tokens"}, modelLen: []string{"--max-seq-len"},
		memoryFraction: "--free-gpu-memory-fraction",
	},
}

// flagValue is the value of the first of names in args ("--tp 2" or "--tp=2"), "" when absent.
func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
		}
	}
	return ""
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name {
			return true
		}
	}
	return false
}

// positive parses a parallelism flag; absent is 1.
func positive(v, field string) (int, error) {
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s: %q is not a positive integer", field, v)
	}
	return n, nil
}

// readRole reads a worker's engine settings from its main container's arguments.
func readRole(backend string, args []string, path string) (role, error) {
	f := backends[backend]
	r := role{
		model:          flagValue(args, f.servedName...),
		blockSize:      flagValue(args, f.blockSize...),
		maxSeqs:        flagValue(args, f.maxSeqs...),
		batchedTokens:  flagValue(args, f.batched...),
		maxModelLen:    flagValue(args, f.modelLen...),
		memoryFraction: flagValue(args, f.memoryFraction),
		noPrefixCache:  hasFlag(args, "--no-enable-prefix-caching"),
	}
	if r.model == "" {
		r.model = flagValue(args, f.model...)
	}
	for _, rn := range f.renamed {
		if v := flagValue(args, rn[0]); v != "" {
			r.engineArgs = append(r.engineArgs, rn[1], v)
		}
	}
	if r.model == "" {
		return r, fmt.Errorf("%s.args: no model (%s)", path, strings.Join(append(f.servedName, f.model...), ", "))
	}
	var err error
	if r.tp, err = positive(flagValue(args, f.tp...), path+".args[tensor parallel]"); err != nil {
		return r, err
	}
	if len(f.dp) > 0 {
		if r.dp, err = positive(flagValue(args, f.dp...), path+".args[data parallel]"); err != nil {
			return r, err
		}
	} else {
		r.dp = 1
	}
	return r, nil
}

// mainContainer is the component's "main" container (the first one when none is named so).
func mainContainer(c *dgdv1beta1.Component) *corev1.Container {
	cs := c.PodTemplate.Spec.Containers
	for i := range cs {
		if cs[i].Name == dgdv1beta1.MainContainer {
			return &cs[i]
		}
	}
	if len(cs) > 0 {
		return &cs[0]
	}
	return nil
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsLabel lower-cases s and replaces what a DNS label cannot hold with '-'.
func dnsLabel(s string) string {
	return strings.Trim(nonName.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// DynamoNamespace is the Dynamo namespace of a deployment's processes: one per deployment, so
// two deployments never discover each other's workers.
func DynamoNamespace(ns, name string) string {
	return strings.ReplaceAll(dnsLabel(ns+"-"+name), "-", "_")
}

// PlanDeployment maps a DynamoGraphDeployment (nvidia.com/v1beta1 "components" shape) to its
// pods and frontend Service, the frontend listening on port. Every pod and the Service are
// owned by the deployment (garbage-collected with it). Planner components are not realized.
func PlanDeployment(dgd *unstructured.Unstructured, port int32, s Settings) (*Plan, error) {
	raw, _, _ := unstructured.NestedMap(dgd.Object, "spec")
	var spec dgdv1beta1.DynamoGraphDeploymentSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	backend := spec.BackendFramework
	if _, ok := backends[backend]; !ok {
		return nil, fmt.Errorf("spec.backendFramework: %q is not one of sglang, vllm, trtllm", backend)
	}
	owner := metav1.OwnerReference{APIVersion: dgd.GetAPIVersion(), Kind: dgd.GetKind(), Name: dgd.GetName(), UID: dgd.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	p := &Plan{}
	var frontend *dgdv1beta1.Component
	var frontendPath string
	for i := range spec.Components {
		c := &spec.Components[i]
		path := fmt.Sprintf("spec.components[%d]", i)
		main := mainContainer(c)
		if main == nil {
			return nil, fmt.Errorf("%s.podTemplate.spec.containers: empty", path)
		}
		switch c.Type {
		case dgdv1beta1.ComponentFrontend:
			if frontend != nil {
				return nil, fmt.Errorf("%s: a second frontend component (%s)", path, frontend.Name)
			}
			frontend, frontendPath = c, path
		case dgdv1beta1.ComponentWorker, dgdv1beta1.ComponentPrefill, dgdv1beta1.ComponentDecode:
			r, err := readRole(backend, main.Args, path+".podTemplate.spec.containers["+main.Name+"]")
			if err != nil {
				return nil, err
			}
			if p.ModelName == "" {
				p.ModelName = r.model
			} else if p.ModelName != r.model {
				return nil, fmt.Errorf("%s: serves %q, another worker %q", path, r.model, p.ModelName)
			}
			replicas := int(ptr.Deref(c.Replicas, 1))
			for n := range replicas {
				p.Pods = append(p.Pods, workerPod(dgd, &spec, c, main, r, n, owner, s))
			}
		}
	}
	if frontend == nil {
		return nil, fmt.Errorf("spec.components: no component of type frontend")
	}
	if p.ModelName == "" {
		return nil, fmt.Errorf("spec.components: no worker, prefill or decode component")
	}
	fp, err := frontendPod(dgd, &spec, frontend, mainContainer(frontend), frontendPath+".podTemplate.spec", port, owner, s)
	if err != nil {
		return nil, err
	}
	p.Pods = append([]corev1.Pod{fp}, p.Pods...)
	p.Frontend = corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: FrontendServiceName(dgd.GetName()), Namespace: dgd.GetNamespace(),
			Labels: map[string]string{LabelDeployment: dgd.GetName()}, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{LabelDeployment: dgd.GetName(), LabelComponentType: dgdv1beta1.ComponentFrontend},
			Ports: []corev1.ServicePort{{Name: FrontendPortName, Port: port, TargetPort: intstr.FromInt32(port),
				Protocol: corev1.ProtocolTCP}},
		},
	}
	return p, nil
}

// FrontendServiceName is the Service of a deployment's frontend (the Dynamo operator's name).
func FrontendServiceName(dgd string) string { return dgd + "-frontend" }

// podBase is what every pod of the deployment shares: owner, labels, generation, the Dynamo
// runtime's environment (file discovery in the deployment's shared directory, TCP request
// plane, ZMQ event plane: no etcd, no NATS), the model and discovery volumes.
func podBase(dgd *unstructured.Unstructured, spec *dgdv1beta1.DynamoGraphDeploymentSpec, c *dgdv1beta1.Component, main *corev1.Container, name string, owner metav1.OwnerReference, s Settings) corev1.Pod {
	env := []corev1.EnvVar{
		{Name: "DYN_DISCOVERY_BACKEND", Value: "file"},
		{Name: "DYN_FILE_KV", Value: DiscoveryMount},
		{Name: "DYN_REQUEST_PLANE", Value: "tcp"},
		{Name: "DYN_EVENT_PLANE", Value: "zmq"},
		{Name: "DYN_NAMESPACE", Value: DynamoNamespace(dgd.GetNamespace(), dgd.GetName())},
		{Name: "HF_HUB_OFFLINE", Value: "1"},
	}
	env = append(env, spec.Env...)
	env = append(env, main.Env...)
	// The component's placement, as the Dynamo operator applies its pod template: the scheduler
	// puts each pod where the deployment asks (its GPU product).
	tmpl := c.PodTemplate.Spec
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: dgd.GetNamespace(),
			Labels:          map[string]string{LabelDeployment: dgd.GetName(), LabelComponent: dnsLabel(c.Name), LabelComponentType: c.Type},
			Annotations:     map[string]string{AnnotationGeneration: strconv.FormatInt(dgd.GetGeneration(), 10)},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			NodeSelector:                  tmpl.NodeSelector,
			Affinity:                      tmpl.Affinity,
			Tolerations:                   tmpl.Tolerations,
			Containers: []corev1.Container{{
				Name: dgdv1beta1.MainContainer, Image: main.Image, Env: env,
				Resources: gpuResources(main.Resources),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "model", MountPath: ModelMount, ReadOnly: true},
					{Name: "discovery", MountPath: DiscoveryMount},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "model", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: s.ModelDir}}},
				{Name: "discovery", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: s.DiscoveryDir}}},
			},
		},
	}
}

// gpuResources keeps the container's GPU requests and limits: the scheduler places the
// candidate's GPUs on the sandbox Node as it would on a cluster.
func gpuResources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	const gpu corev1.ResourceName = "nvidia.com/gpu"
	var out corev1.ResourceRequirements
	if q, ok := r.Limits[gpu]; ok {
		out.Limits = corev1.ResourceList{gpu: q}
	}
	if q, ok := r.Requests[gpu]; ok {
		out.Requests = corev1.ResourceList{gpu: q}
	}
	return out
}

// frontendPod runs the real Dynamo frontend with the component's own environment, volumes and
// main's volume mounts (a request-trace claim, an override's volumes): the frontend is the one
// process that is what the deployment says. Workers keep only the realizer's volumes, since
// their model volumes name storage the mocker does not read.
func frontendPod(dgd *unstructured.Unstructured, spec *dgdv1beta1.DynamoGraphDeploymentSpec, c *dgdv1beta1.Component, main *corev1.Container, path string, port int32, owner metav1.OwnerReference, s Settings) (corev1.Pod, error) {
	pod := podBase(dgd, spec, c, main, dgd.GetName()+"-"+dnsLabel(c.Name), owner, s)
	ct := &pod.Spec.Containers[0]
	for _, v := range c.PodTemplate.Spec.Volumes {
		if slices.ContainsFunc(pod.Spec.Volumes, func(o corev1.Volume) bool { return o.Name == v.Name }) {
			return pod, fmt.Errorf("%s.volumes[%s]: the sandbox realizer uses this name", path, v.Name)
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, v)
	}
	for _, m := range main.VolumeMounts {
		if slices.ContainsFunc(ct.VolumeMounts, func(o corev1.VolumeMount) bool { return o.MountPath == m.MountPath }) {
			return pod, fmt.Errorf("%s.containers[%s].volumeMounts[%s]: the sandbox realizer mounts %s", path, main.Name, m.Name, m.MountPath)
		}
		ct.VolumeMounts = append(ct.VolumeMounts, m)
	}
	// DYN_ROUTER_MODE, when the deployment sets it, chooses the router; round-robin otherwise.
	ct.Command = []string{"python3", "-m", "dynamo.frontend", "--http-port", strconv.Itoa(int(port))}
	if !hasEnv(ct.Env, "DYN_ROUTER_MODE") {
		ct.Command = append(ct.Command, "--router-mode", "round-robin")
	}
	ct.Ports = []corev1.ContainerPort{{Name: FrontendPortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
	ct.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/v1/models", Port: intstr.FromString(FrontendPortName)}},
		PeriodSeconds: 2, FailureThreshold: 3, TimeoutSeconds: 2,
	}
	return pod, nil
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

func workerPod(dgd *unstructured.Unstructured, spec *dgdv1beta1.DynamoGraphDeploymentSpec, c *dgdv1beta1.Component, main *corev1.Container, r role, n int, owner metav1.OwnerReference, s Settings) corev1.Pod {
	pod := podBase(dgd, spec, c, main, fmt.Sprintf("%s-%s-%d", dgd.GetName(), dnsLabel(c.Name), n), owner, s)
	ais, _ := json.Marshal(map[string]any{"model": ModelMount, "backend": spec.BackendFramework, "system": systemOf(&c.PodTemplate.Spec, s.AISSystem), "tp": r.tp})
	args := []string{
		"--profile-out", ProfileMount + "/perf.npz",
		"--model-path", ModelMount, "--model-name", r.model,
		"--engine-type", spec.BackendFramework,
		"--ais-perf-config", string(ais),
		"--data-parallel-size", strconv.Itoa(r.dp),
	}
	for _, f := range []struct{ flag, value string }{
		{"--block-size", r.blockSize}, {"--max-num-seqs", r.maxSeqs}, {"--max-num-batched-tokens", r.batchedTokens},
		{"--max-model-len", r.maxModelLen}, {backends[spec.BackendFramework].memoryFraction, r.memoryFraction},
	} {
		if f.value != "" {
			args = append(args, f.flag, f.value)
		}
	}
	args = append(args, r.engineArgs...)
	if r.noPrefixCache {
		args = append(args, "--no-enable-prefix-caching")
	}
	switch c.Type {
	case dgdv1beta1.ComponentPrefill, dgdv1beta1.ComponentDecode:
		args = append(args, "--disaggregation-mode", c.Type)
	}
	ct := &pod.Spec.Containers[0]
	ct.Command = []string{"python3", LauncherMount + "/" + LauncherScript}
	ct.Args = args
	ct.VolumeMounts = append(ct.VolumeMounts,
		corev1.VolumeMount{Name: "launcher", MountPath: LauncherMount, ReadOnly: true},
		corev1.VolumeMount{Name: "profile", MountPath: ProfileMount})
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "launcher", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: s.LauncherDir}}},
		corev1.Volume{Name: "profile", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	return pod
}

// systemOf is the AISimulate system of the GPU product a pod template selects (its nodeSelector,
// or the first product of a required node affinity term), or def when it selects none the
// catalogue knows.
func systemOf(spec *corev1.PodSpec, def string) string {
	products := []string{spec.NodeSelector[gpunodes.ProductLabel]}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, req := range term.MatchExpressions {
				if req.Key == gpunodes.ProductLabel && req.Operator == corev1.NodeSelectorOpIn {
					products = append(products, req.Values...)
				}
			}
		}
	}
	for _, p := range products {
		if sys, ok := aisimulate.SKUForGPUProduct(p); ok {
			return sys
		}
	}
	return def
}
