package render_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/golden"
)

var testImages = map[string]string{
	"vllm":   "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1",
	"sglang": "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1",
	"trtllm": "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.3.1",
}

func readDoc(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestGolden renders every testdata/input document and compares it with testdata/golden.
func TestGolden(t *testing.T) {
	assertGoldens(t, "", func(name string) render.Options {
		opts := render.Options{Name: "llm-" + name, RuntimeImages: testImages}
		if strings.HasPrefix(name, "vllm-agg") || strings.HasPrefix(name, "sglang-disagg") || strings.HasPrefix(name, "trtllm-agg") {
			opts.ModelRevision = "0123456789abcdef0123456789abcdef01234567"
		}
		return opts
	})
}

// assertGoldens renders every testdata/input document with the options for its name and
// compares it with testdata/golden/<dir>/<name>.yaml.
func assertGoldens(t *testing.T, dir string, options func(name string) render.Options) {
	t.Helper()
	inputs, err := filepath.Glob("testdata/input/*.yaml")
	if err != nil || len(inputs) < 6 {
		t.Fatalf("want at least 6 inputs, got %d (%v)", len(inputs), err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			dgd, _, err := render.Render(readDoc(t, in), options(name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(dgd)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", "golden", dir, name+".yaml"), got)
		})
	}
}

// TestGoldenModelAccess renders every input with a token Secret, a cache claim and remote code
// trusted, into testdata/golden/model-access: the trust flag of each backend, the read-only
// cache mount, HF_HOME and HF_TOKEN in every worker (aggregated, disaggregated and multinode).
func TestGoldenModelAccess(t *testing.T) {
	assertGoldens(t, "model-access", func(name string) render.Options {
		return render.Options{Name: "llm-" + name, RuntimeImages: testImages, ModelRevision: "0123456789abcdef0123456789abcdef01234567",
			Model: v1beta2.ModelSpec{
				RemoteCode:     v1beta2.RemoteCodeTrustCacheAndRevision,
				Revision:       "0123456789abcdef0123456789abcdef01234567",
				Cache:          &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "model-cache", Path: "hf"}},
				TokenSecretRef: &v1beta2.TokenSecretReference{Name: "hf-token", Key: "token"},
			}}
	})
}

// TestRemoteCodePolicy: the engine's trust flag appears exactly when the policy allows it,
// for every backend, never by default.
func TestRemoteCodePolicy(t *testing.T) {
	cache := &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "c"}}
	policies := []struct {
		name string
		m    v1beta2.ModelSpec
		want bool
	}{
		{"unset", v1beta2.ModelSpec{}, false},
		{"Never", v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeNever, Revision: "r", Cache: cache}, false},
		{"TrustCacheAndRevision", v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeTrustCacheAndRevision, Revision: "r", Cache: cache}, true},
		{"TrustCacheAndRevision without cache", v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeTrustCacheAndRevision, Revision: "r"}, false},
		{"AlwaysTrust", v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeAlwaysTrust}, true},
	}
	inputs := map[string]func(args []string) bool{
		"vllm-agg":      func(a []string) bool { return slices.Contains(a, "--trust-remote-code") },
		"sglang-disagg": func(a []string) bool { return slices.Contains(a, "--trust-remote-code") },
		"trtllm-disagg": func(a []string) bool {
			i := slices.Index(a, "--override-engine-args")
			return i >= 0 && strings.Contains(a[i+1], `"trust_remote_code":true`)
		},
	}
	for input, trusted := range inputs {
		for _, p := range policies {
			t.Run(input+"/"+p.name, func(t *testing.T) {
				dgd, _, err := render.Render(readDoc(t, filepath.Join("testdata", "input", input+".yaml")),
					render.Options{RuntimeImages: testImages, Model: p.m})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range dgd.Spec.Components[1:] {
					if got := trusted(c.PodTemplate.Spec.Containers[0].Args); got != p.want {
						t.Errorf("%s: trusted = %v, want %v (args %q)", c.Name, got, p.want, c.PodTemplate.Spec.Containers[0].Args)
					}
				}
			})
		}
	}
}

// deploymentOverrides are the pod template overrides of the deployment goldens: a toleration
// for every component, a Frontend label, a worker node selector and env in main, and a prefill
// and decode annotation.
var deploymentOverrides = &v1beta2.PodTemplateOverrides{
	All:      &runtime.RawExtension{Raw: []byte(`{"spec":{"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}}`)},
	Frontend: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"team":"serving"}}}`)},
	Workers:  &runtime.RawExtension{Raw: []byte(`{"spec":{"nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-H200"},"containers":[{"name":"main","env":[{"name":"NCCL_DEBUG","value":"WARN"}]}]}}`)},
	Prefill:  &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"role":"prefill"}}}`)},
	Decode:   &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"role":"decode"}}}`)},
}

// TestGoldenDeployment renders every input with the KV router, pod template overrides and
// model access into testdata/golden/deployment: DYN_ROUTER_MODE=kv on the Frontend, KV events
// per backend on every worker, the overrides merged by role and container name (main's env
// keeps HF_TOKEN next to the override's variable).
//
// Where prefill was searched on another GPU (per-role), the H200 selector is the decode role's
// alone: on every worker it would conflict with the prefill role's product and be refused.
func TestGoldenDeployment(t *testing.T) {
	perRole := *deploymentOverrides
	perRole.Workers = &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"main","env":[{"name":"NCCL_DEBUG","value":"WARN"}]}]}}`)}
	perRole.Decode = &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"role":"decode"}},"spec":{"nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-H200"}}}`)}
	assertGoldens(t, "deployment", func(name string) render.Options {
		overrides := deploymentOverrides
		if strings.Contains(name, "per-role") {
			overrides = &perRole
		}
		return render.Options{Name: "llm-" + name, RuntimeImages: testImages,
			Model: v1beta2.ModelSpec{TokenSecretRef: &v1beta2.TokenSecretReference{Name: "hf-token", Key: "HF_TOKEN"}},
			Deployment: &v1beta2.DeploymentSpec{
				Router:               &v1beta2.RouterSpec{Mode: v1beta2.RouterKV},
				PodTemplateOverrides: overrides,
			}}
	})
}

// TestGoldenPlanner renders every input with the Planner enabled, TTFT and ITL targets, a GPU
// budget and a planner override into testdata/golden/planner: a Planner component (the
// operator's Planner image, python3 -m dynamo.planner, SLA scaling with the candidate's backend,
// mode, per-engine GPUs and the aic_interpolation of its SKU, traffic and per-role parallelism)
// and scalingAdapter on every worker, for each backend and for aggregated, disaggregated and
// multinode candidates. TestRealPlannerAcceptsRenderedConfigs has the real Planner judge them.
func TestGoldenPlanner(t *testing.T) {
	ttft, itl, budget := 400.0, 20.0, 16
	assertGoldens(t, "planner", func(name string) render.Options {
		return render.Options{Name: "llm-" + name, RuntimeImages: testImages, PlannerImage: "nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.6.1",
			SLA: &v1beta2.SLASpec{TTFTMs: &ttft, ITLMs: &itl}, GPUBudget: budget,
			Deployment: &v1beta2.DeploymentSpec{
				Planner: &v1beta2.PlannerSpec{Enabled: ptrTo(true)},
				PodTemplateOverrides: &v1beta2.PodTemplateOverrides{
					Planner: &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"main","env":[{"name":"PROMETHEUS_ENDPOINT","value":"http://prometheus.monitoring:9090"}]}]}}`)},
				},
			}}
	})
}

func ptrTo[T any](v T) *T { return &v }

// TestPlannerScalesOnLoadWithoutTTFTAndITL: without both TTFT and ITL targets the Planner is
// configured for load-based scaling only (no pre-deployment sweep), with the deployment's own
// GPUs as its ceiling when the request sets no budget; a disabled Planner renders nothing.
func TestPlannerScalesOnLoadWithoutTTFTAndITL(t *testing.T) {
	e2e := 2000.0
	doc := readDoc(t, filepath.Join("testdata", "input", "vllm-disagg.yaml"))
	opts := render.Options{RuntimeImages: testImages, PlannerImage: "planner:1", SLA: &v1beta2.SLASpec{E2EMs: &e2e},
		Deployment: &v1beta2.DeploymentSpec{Planner: &v1beta2.PlannerSpec{Enabled: ptrTo(true)}}}
	dgd, sum, err := render.Render(doc, opts)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	for _, c := range dgd.Spec.Components {
		if c.Type == dgdv1beta1.ComponentPlanner {
			if err := yaml.Unmarshal([]byte(c.PodTemplate.Spec.Containers[0].Args[1]), &cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]any{"optimization_target": "throughput", "enable_throughput_scaling": false, "enable_load_scaling": true,
		"pre_deployment_sweeping_mode": "none", "max_gpu_budget": float64(sum.GPUs), "mode": "disagg"}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("planner config %s = %v, want %v (config %v)", k, cfg[k], v, cfg)
		}
	}
	for _, k := range []string{"ttft_ms", "itl_ms", "aic_interpolation"} {
		if _, ok := cfg[k]; ok {
			t.Errorf("planner config has %s without SLA scaling", k)
		}
	}

	opts.Deployment.Planner.Enabled = ptrTo(false)
	dgd, _, err = render.Render(doc, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range dgd.Spec.Components {
		if c.Type == dgdv1beta1.ComponentPlanner || c.ScalingAdapter != nil {
			t.Errorf("planner disabled but %s has type %s, scalingAdapter %v", c.Name, c.Type, c.ScalingAdapter)
		}
	}
	opts.Deployment.Planner.Enabled, opts.PlannerImage = ptrTo(true), ""
	if _, _, err := render.Render(doc, opts); err == nil || !strings.Contains(err.Error(), "planner.image") {
		t.Errorf("planner without an image: err = %v, want one naming planner.image", err)
	}
}

// TestRouterMode: DYN_ROUTER_MODE on the Frontend per mode; KV events on workers only for KV.
func TestRouterMode(t *testing.T) {
	cases := []struct {
		mode     v1beta2.RouterMode
		wantEnv  string
		kvEvents bool
	}{
		{"", "", false},
		{v1beta2.RouterRoundRobin, "round-robin", false},
		{v1beta2.RouterRandom, "random", false},
		{v1beta2.RouterKV, "kv", true},
	}
	events := map[string]string{"vllm-disagg": "--kv-events-config", "sglang-agg": "--kv-events-config", "trtllm-agg": "--publish-events-and-metrics"}
	for input, flag := range events {
		for _, tc := range cases {
			t.Run(input+"/"+string(tc.mode), func(t *testing.T) {
				opts := render.Options{RuntimeImages: testImages}
				if tc.mode != "" {
					opts.Deployment = &v1beta2.DeploymentSpec{Router: &v1beta2.RouterSpec{Mode: tc.mode}}
				}
				dgd, _, err := render.Render(readDoc(t, filepath.Join("testdata", "input", input+".yaml")), opts)
				if err != nil {
					t.Fatal(err)
				}
				var env []corev1.EnvVar
				if tc.wantEnv != "" {
					env = []corev1.EnvVar{{Name: "DYN_ROUTER_MODE", Value: tc.wantEnv}}
				}
				if diff := cmp.Diff(env, dgd.Spec.Components[0].PodTemplate.Spec.Containers[0].Env); diff != "" {
					t.Errorf("Frontend env (-want +got):\n%s", diff)
				}
				for _, c := range dgd.Spec.Components[1:] {
					if got := slices.Contains(c.PodTemplate.Spec.Containers[0].Args, flag); got != tc.kvEvents {
						t.Errorf("%s: %s = %v, want %v", c.Name, flag, got, tc.kvEvents)
					}
				}
			})
		}
	}
}

// TestOverrideThatDoesNotApply: a patch that breaks the template is an error naming the
// component, never a silently unpatched deployment.
func TestOverrideThatDoesNotApply(t *testing.T) {
	opts := render.Options{RuntimeImages: testImages, Deployment: &v1beta2.DeploymentSpec{
		PodTemplateOverrides: &v1beta2.PodTemplateOverrides{Workers: &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"main"}}`)}}}}
	_, _, err := render.Render(readDoc(t, filepath.Join("testdata", "input", "vllm-agg.yaml")), opts)
	if err == nil || !strings.Contains(err.Error(), "VllmWorker") {
		t.Fatalf("want an error naming VllmWorker, got %v", err)
	}
}

// TestGoldenFourGPUNodes renders every input for nodes of 4 GPUs (GB200/GB300) into
// testdata/golden/per-node-4: engines wider than 4 GPUs become multinode with 4 GPUs per pod.
func TestGoldenFourGPUNodes(t *testing.T) {
	assertGoldens(t, "per-node-4", func(name string) render.Options {
		return render.Options{Name: "llm-" + name, RuntimeImages: testImages, GPUsPerNode: 4}
	})
}

// TestNoPodAsksForMoreGPUsThanANodeHas: for every input and node size, every pod's GPU limit
// is at most the node size (its GPU's catalogue node size for a role searched on another GPU
// than engine.hardware: the node size is the request's SKU's), and pods × nodeCount covers the
// engine.
func TestNoPodAsksForMoreGPUsThanANodeHas(t *testing.T) {
	inputs, err := filepath.Glob("testdata/input/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		for _, perNode := range []int{1, 2, 4, 8} {
			dgd, sum, err := render.Render(readDoc(t, in), render.Options{RuntimeImages: testImages, GPUsPerNode: perNode})
			if err != nil {
				if !strings.Contains(err.Error(), "do not split evenly") {
					t.Errorf("%s at %d GPUs per node: %v", in, perNode, err)
				}
				continue
			}
			total := 0
			for _, c := range dgd.Spec.Components[1:] {
				q := c.PodTemplate.Spec.Containers[0].Resources.Limits[render.GPUResource]
				gpus := int(q.Value())
				if c.Name == "VllmPrefillWorker" && strings.Contains(in, "per-role") {
					if gpus != 4 {
						t.Errorf("%s: %s on GB200 trays asks for %d GPUs per pod, want 4", in, c.Name, gpus)
					}
				} else if gpus > perNode {
					t.Errorf("%s at %d GPUs per node: %s asks for %d GPUs per pod", in, perNode, c.Name, gpus)
				}
				nodes := 1
				if c.Multinode != nil {
					nodes = int(c.Multinode.NodeCount)
				}
				total += gpus * nodes * int(*c.Replicas)
			}
			if total != sum.GPUs {
				t.Errorf("%s at %d GPUs per node: pods cover %d GPUs, the summary says %d", in, perNode, total, sum.GPUs)
			}
		}
	}
}

func TestSummaryAndShape(t *testing.T) {
	tests := []struct {
		input      string
		wantMode   string
		wantGPUs   int
		components []string // name/type
		podGPUs    []string
		nodeCounts []int32
	}{
		{"vllm-agg", "aggregated", 4, []string{"Frontend/frontend", "VllmWorker/worker"}, []string{"", "2"}, []int32{0, 0}},
		{"vllm-disagg", "disaggregated", 20, []string{"Frontend/frontend", "VllmPrefillWorker/prefill", "VllmDecodeWorker/decode"}, []string{"", "4", "8"}, []int32{0, 0, 0}},
		{"sglang-disagg", "disaggregated", 20, []string{"Frontend/frontend", "prefill/prefill", "decode/decode"}, []string{"", "4", "8"}, []int32{0, 0, 0}},
		{"trtllm-agg", "aggregated", 4, []string{"Frontend/frontend", "TRTLLMWorker/worker"}, []string{"", "2"}, []int32{0, 0}},
		{"vllm-disagg-moe-multinode", "disaggregated", 24, []string{"Frontend/frontend", "VllmPrefillWorker/prefill", "VllmDecodeWorker/decode"}, []string{"", "8", "8"}, []int32{0, 0, 2}},
		{"sglang-agg-dep", "aggregated", 8, []string{"Frontend/frontend", "SGLangWorker/worker"}, []string{"", "8"}, []int32{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.input, func(t *testing.T) {
			dgd, sum, err := render.Render(readDoc(t, "testdata/input/"+tc.input+".yaml"), render.Options{RuntimeImages: testImages})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Mode != tc.wantMode || sum.GPUs != tc.wantGPUs {
				t.Errorf("summary = %+v, want mode %s gpus %d", sum, tc.wantMode, tc.wantGPUs)
			}
			var comps, gpus []string
			var nodes []int32
			for _, c := range dgd.Spec.Components {
				comps = append(comps, c.Name+"/"+c.Type)
				main := c.PodTemplate.Spec.Containers[0]
				if main.Name != dgdv1beta1.MainContainer || main.Image == "" {
					t.Errorf("component %s: main container %q image %q", c.Name, main.Name, main.Image)
				}
				q := main.Resources.Limits[render.GPUResource]
				if q.IsZero() {
					gpus = append(gpus, "")
				} else {
					gpus = append(gpus, q.String())
				}
				var n int32
				if c.Multinode != nil {
					n = c.Multinode.NodeCount
				}
				nodes = append(nodes, n)
				for _, a := range main.Args {
					if strings.HasPrefix(a, "--") && strings.Contains(a, "=") {
						t.Errorf("component %s: flag %q uses --flag=value", c.Name, a)
					}
				}
			}
			if diff := cmp.Diff(tc.components, comps); diff != "" {
				t.Errorf("components (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.podGPUs, gpus); diff != "" {
				t.Errorf("GPUs per pod (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.nodeCounts, nodes); diff != "" {
				t.Errorf("node counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"engine": map[string]any{
			"backend": "vllm", "mode": "aggregated", "model": "m",
			"workers": map[string]any{"aggregated": map[string]any{"parallelism": map[string]any{"tensor": 1}}},
		}}
	}
	tests := []struct {
		name   string
		mutate func(map[string]any)
		opts   render.Options
		want   string
	}{
		{"no image", func(map[string]any) {}, render.Options{RuntimeImages: map[string]string{"sglang": "x"}}, "no runtime image"},
		{"no model", func(d map[string]any) { d["engine"].(map[string]any)["model"] = "" }, render.Options{RuntimeImages: testImages}, "engine.model"},
		{"afd", func(d map[string]any) { d["engine"].(map[string]any)["mode"] = "afd" }, render.Options{RuntimeImages: testImages}, "cannot be rendered"},
		{"missing role", func(d map[string]any) { d["engine"].(map[string]any)["mode"] = "disaggregated" }, render.Options{RuntimeImages: testImages}, "prefill"},
		{"uneven multinode", func(d map[string]any) {
			d["engine"].(map[string]any)["workers"] = map[string]any{"aggregated": map[string]any{"parallelism": map[string]any{"tensor": 12}}}
		}, render.Options{RuntimeImages: testImages}, "split evenly"},
		{"SLA planner without the GPU SKU", func(map[string]any) {}, render.Options{RuntimeImages: testImages, PlannerImage: "p",
			SLA:        &v1beta2.SLASpec{TTFTMs: ptrTo(400.0), ITLMs: ptrTo(20.0)},
			Deployment: &v1beta2.DeploymentSpec{Planner: &v1beta2.PlannerSpec{Enabled: ptrTo(true)}}}, "engine.hardware"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := base()
			tc.mutate(d)
			_, _, err := render.Render(d, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestRendersRealSearchOutput runs the real aisim recommender and renders every numbered
// recommendation it writes: the renderer must accept AISimulate's concrete documents.
func TestRendersRealSearchOutput(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "aisim")
	build := exec.Command("go", "build", "-o", bin, "github.com/dgdr-operator/dgdr-operator/tools/aisim/cmd/aisim")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building aisim: %v\n%s", err, out)
	}
	in := filepath.Join(dir, "input.yaml")
	input := "engine: {model: Qwen/Qwen3-8B, hardware: h200_sxm, backend: {choices: [vllm, sglang]}, workers: {aggregated: {}, prefill: {}, decode: {}}}\n" +
		"traffic: {source: {type: synthetic, input_tokens: 512, output_tokens: 64}, load: {type: concurrency, concurrency: 4}, stop: {requests: 200}}\n" +
		"optimization: {}\noptimizer: {max_trials: 24}\n"
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "recommend", "-c", in, "--output-dir", out, "--format", "json")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("aisim: %v\n%s", err, b)
	}
	sweep, err := output.ReadSweepResult(out)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := output.ReadRecommendations(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no recommendations")
	}
	sel := sweep.Selected()
	for i, doc := range docs {
		_, sum, err := render.Render(doc, render.Options{RuntimeImages: testImages})
		if err != nil {
			t.Fatalf("%04d.yaml: %v", i+1, err)
		}
		if i < len(sel) && sum.GPUs != sel[i].UsedGPUs {
			t.Errorf("%04d.yaml: rendered %d GPUs, search used %d", i+1, sum.GPUs, sel[i].UsedGPUs)
		}
	}
}

// TestTypedModelNameWins: the engines serve the request's model.name, not whatever model a
// prediction (the search's output) names.
func TestTypedModelNameWins(t *testing.T) {
	dgd, _, err := render.Render(readDoc(t, filepath.Join("testdata", "input", "vllm-agg.yaml")),
		render.Options{RuntimeImages: testImages, Model: v1beta2.ModelSpec{Name: "org/typed-model"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range dgd.Spec.Components[1:] {
		args := c.PodTemplate.Spec.Containers[0].Args
		i := slices.Index(args, "--model")
		if i < 0 || args[i+1] != "org/typed-model" {
			t.Errorf("%s: args %q, want --model org/typed-model", c.Name, args)
		}
	}
}

// captureDeployment turns capture on with 16 MiB segments, next to the KV router and a
// Frontend override that tries to record request bodies and sets an unrelated variable.
func captureDeployment() *v1beta2.DeploymentSpec {
	return &v1beta2.DeploymentSpec{
		Router: &v1beta2.RouterSpec{Mode: v1beta2.RouterKV},
		Capture: &v1beta2.CaptureSpec{Enabled: ptrTo(true), ClaimName: "request-traces",
			Rotation: &v1beta2.CaptureRotation{MaxSegmentMiB: ptrTo(int32(16))}},
		PodTemplateOverrides: &v1beta2.PodTemplateOverrides{
			Frontend: &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"main","env":[{"name":"DYN_REQUEST_TRACE_RECORDS","value":"request_payload"},{"name":"DYN_LOG","value":"info"}]}]}}`)},
		},
	}
}

// TestGoldenCapture renders every input with capture on into testdata/golden/capture: the
// Frontend alone mounts the claim (read-write, its pod's own directory as subPathExpr) and
// gets the request-trace variables; the override's request-trace variable is replaced, its
// other variable kept.
func TestGoldenCapture(t *testing.T) {
	assertGoldens(t, "capture", func(name string) render.Options {
		return render.Options{Name: "llm-" + name, RuntimeImages: testImages, Deployment: captureDeployment(), RequestUID: captureRequestUID}
	})
}

// captureRequestUID is the request the capture tests render for.
const captureRequestUID = "7f9c2a4e-0000-4000-8000-0000000000c1"

// TestCaptureNeedsTheRequest: a capture is rendered into the request's directory of the claim
// only: without the request's UID there is no directory to render, and rendering fails rather
// than sharing the claim's top level with every other request naming it.
func TestCaptureNeedsTheRequest(t *testing.T) {
	doc := readDoc(t, filepath.Join("testdata", "input", "vllm-agg.yaml"))
	_, _, err := render.Render(doc, render.Options{RuntimeImages: testImages, Deployment: captureDeployment()})
	if err == nil || !strings.Contains(err.Error(), "spec.deployment.capture needs the request's UID") {
		t.Errorf("got %v, want the capture refused without the request's UID", err)
	}
}

// frontendOf returns the Frontend component of dgd.
func frontendOf(t *testing.T, dgd *dgdv1beta1.DynamoGraphDeployment) dgdv1beta1.Component {
	t.Helper()
	for _, c := range dgd.Spec.Components {
		if c.Type == dgdv1beta1.ComponentFrontend {
			return c
		}
	}
	t.Fatal("no Frontend component")
	return dgdv1beta1.Component{}
}

// mentionsCapture reports whether a component carries any part of the capture: the volume,
// a mount at the capture path, or a request-trace variable.
func mentionsCapture(c dgdv1beta1.Component) bool {
	for _, v := range c.PodTemplate.Spec.Volumes {
		if v.Name == render.CaptureVolume || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "request-traces") {
			return true
		}
	}
	for _, ct := range c.PodTemplate.Spec.Containers {
		for _, m := range ct.VolumeMounts {
			if m.Name == render.CaptureVolume || m.MountPath == render.CaptureMountPath {
				return true
			}
		}
		for _, e := range ct.Env {
			if strings.HasPrefix(e.Name, "DYN_REQUEST_TRACE") || e.Name == render.EnvCapturePod {
				return true
			}
		}
	}
	return false
}

// TestCaptureIsConfinedToTheFrontend: with capture on only the Frontend mounts the claim and
// records; the workers and the Planner never see it. Capture off, or on without a claim,
// renders nothing of it.
func TestCaptureIsConfinedToTheFrontend(t *testing.T) {
	for _, input := range []string{"vllm-agg", "sglang-disagg", "vllm-disagg-moe-multinode"} {
		doc := readDoc(t, filepath.Join("testdata", "input", input+".yaml"))
		d := captureDeployment()
		d.Planner = &v1beta2.PlannerSpec{Enabled: ptrTo(true)}
		dgd, _, err := render.Render(doc, render.Options{RuntimeImages: testImages, PlannerImage: "planner:1", Deployment: d, RequestUID: captureRequestUID})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range dgd.Spec.Components {
			if got, want := mentionsCapture(c), c.Type == dgdv1beta1.ComponentFrontend; got != want {
				t.Errorf("%s/%s: capture rendered = %v, want %v", input, c.Name, got, want)
			}
		}
		for name, off := range map[string]*v1beta2.CaptureSpec{
			"disabled":        {Enabled: ptrTo(false), ClaimName: "request-traces"},
			"enabled unset":   {ClaimName: "request-traces"},
			"without a claim": {Enabled: ptrTo(true)},
		} {
			dgd, _, err := render.Render(doc, render.Options{RuntimeImages: testImages, Deployment: &v1beta2.DeploymentSpec{Capture: off}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range dgd.Spec.Components {
				if mentionsCapture(c) {
					t.Errorf("%s, capture %s: %s carries capture", input, name, c.Name)
				}
			}
		}
	}
}

// TestCaptureOwnsTheFrontendsRequestTrace: whatever a Frontend override sets, the Frontend
// records request_end records only (no request bodies), to the claim, in rotating gzip
// segments of maxSegmentMiB: an override's request-trace and audit variables, and a volume or
// mount that takes the capture's name or path, are replaced; its other settings stay.
func TestCaptureOwnsTheFrontendsRequestTrace(t *testing.T) {
	d := captureDeployment()
	d.PodTemplateOverrides.Frontend = &runtime.RawExtension{Raw: []byte(`{"spec":{
		"volumes":[{"name":"request-trace","hostPath":{"path":"/var/log"}},{"name":"scratch","emptyDir":{}}],
		"containers":[{"name":"main",
			"env":[{"name":"DYN_REQUEST_TRACE_FILE_PATH","value":"/tmp/elsewhere"},{"name":"DYN_REQUEST_TRACE_RECORDS","value":"request_payload"},
				{"name":"DYN_AUDIT_FORCE_LOGGING","value":"1"},{"name":"DYN_LOG","value":"debug"}],
			"volumeMounts":[{"name":"scratch","mountPath":"/opt/dgdr/request-trace"},{"name":"scratch","mountPath":"/scratch"}]}]}}`)}
	dgd, _, err := render.Render(readDoc(t, filepath.Join("testdata", "input", "vllm-agg.yaml")), render.Options{RuntimeImages: testImages, Deployment: d, RequestUID: captureRequestUID})
	if err != nil {
		t.Fatal(err)
	}
	fe := frontendOf(t, dgd)
	main := fe.PodTemplate.Spec.Containers[0]
	wantEnv := []corev1.EnvVar{
		{Name: "DYN_LOG", Value: "debug"},
		{Name: "DYN_ROUTER_MODE", Value: "kv"},
		{Name: "DGDR_CAPTURE_POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "DYN_REQUEST_TRACE", Value: "1"},
		{Name: "DYN_REQUEST_TRACE_RECORDS", Value: "request_end"},
		{Name: "DYN_REQUEST_TRACE_SINKS", Value: "jsonl_gz"},
		{Name: "DYN_REQUEST_TRACE_OUTPUT_PATH", Value: "/opt/dgdr/request-trace/request-trace"},
		{Name: "DYN_REQUEST_TRACE_JSONL_GZ_ROLL_BYTES", Value: "16777216"},
	}
	if diff := cmp.Diff(wantEnv, main.Env); diff != "" {
		t.Errorf("Frontend env (-want +got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "request-trace", MountPath: "/opt/dgdr/request-trace", SubPathExpr: captureRequestUID + "/$(DGDR_CAPTURE_POD)"},
	}
	if diff := cmp.Diff(wantMounts, main.VolumeMounts); diff != "" {
		t.Errorf("Frontend volume mounts (-want +got):\n%s", diff)
	}
	wantVolumes := []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "request-trace", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "request-traces"}}},
	}
	if diff := cmp.Diff(wantVolumes, fe.PodTemplate.Spec.Volumes); diff != "" {
		t.Errorf("Frontend volumes (-want +got):\n%s", diff)
	}
}

// TestCaptureSegmentSize: the roll size is maxSegmentMiB in bytes; a capture without rotation
// (a Run admitted before the field existed) gets admission's default.
func TestCaptureSegmentSize(t *testing.T) {
	doc := readDoc(t, filepath.Join("testdata", "input", "vllm-agg.yaml"))
	for _, tc := range []struct {
		rotation *v1beta2.CaptureRotation
		want     string
	}{
		{&v1beta2.CaptureRotation{MaxSegmentMiB: ptrTo(int32(1))}, "1048576"},
		{&v1beta2.CaptureRotation{MaxSegmentMiB: ptrTo(int32(4096))}, "4294967296"},
		{nil, strconv.Itoa(int(specdefaults.CaptureMaxSegmentMiB) << 20)},
	} {
		d := &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptrTo(true), ClaimName: "c", Rotation: tc.rotation}}
		dgd, _, err := render.Render(doc, render.Options{RuntimeImages: testImages, Deployment: d, RequestUID: captureRequestUID})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, e := range frontendOf(t, dgd).PodTemplate.Spec.Containers[0].Env {
			if e.Name == render.EnvRequestTraceRollBytes {
				got = e.Value
			}
		}
		if got != tc.want {
			t.Errorf("rotation %+v: %s = %q, want %q", tc.rotation, render.EnvRequestTraceRollBytes, got, tc.want)
		}
	}
}
