package webhook_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

func i32(v int32) *int32     { return &v }
func f64(v float64) *float64 { return &v }

// fromYAML builds an unstructured request so that tests can submit shapes the Go types cannot
// express (two union variants, wrong types, unknown fields).
func fromYAML(t *testing.T, name, spec string) *unstructured.Unstructured {
	t.Helper()
	doc := "apiVersion: nvidia.com/v1beta2\nkind: DynamoGraphDeploymentRequest\nmetadata:\n  name: " + name +
		"\n  namespace: default\nspec:\n  model:\n    name: meta-llama/Llama-3.1-8B-Instruct\n" + spec
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	return u
}

// TestBadInputTable submits malformed requests to the real API server (strict field validation,
// as kubectl uses by default): the CRD schema, its CEL rules or the validating webhook must reject
// each one, naming the field, and nothing may be stored.
func TestBadInputTable(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, spec string
		wantField  string // field path in the Invalid status causes
		wantMsg    string
	}{
		{"load-empty", "  workload:\n    static:\n      load: {}\n", "spec.workload.static.load", "exactly one of concurrency, requestsPerSecond or kvCapacityFraction"},
		{"load-two", "  workload:\n    static:\n      load: {concurrency: 2, requestsPerSecond: 3}\n", "spec.workload.static.load", "exactly one of concurrency, requestsPerSecond or kvCapacityFraction"},
		{"load-three", "  workload:\n    static:\n      load: {concurrency: 2, requestsPerSecond: 3, kvCapacityFraction: {value: 0.5}}\n", "spec.workload.static.load", "exactly one of"},
		{"kv-both", "  workload:\n    static:\n      load: {kvCapacityFraction: {value: 0.5, range: {min: 0.1, max: 0.2}}}\n", "spec.workload.static.load.kvCapacityFraction", "exactly one of value or range"},
		{"kv-neither", "  workload:\n    static:\n      load: {kvCapacityFraction: {}}\n", "spec.workload.static.load.kvCapacityFraction", "exactly one of value or range"},
		{"kv-min-gt-max", "  workload:\n    static:\n      load: {kvCapacityFraction: {range: {min: 0.9, max: 0.1}}}\n", "spec.workload.static.load.kvCapacityFraction.range", "min must be less than or equal to max"},
		{"kv-min-zero", "  workload:\n    static:\n      load: {kvCapacityFraction: {range: {min: 0, max: 0.1}}}\n", "spec.workload.static.load.kvCapacityFraction.range.min", "greater than 0"},
		{"kv-value-zero", "  workload:\n    static:\n      load: {kvCapacityFraction: {value: 0}}\n", "spec.workload.static.load.kvCapacityFraction.value", "greater than 0"},
		{"sla-e2e-ttft", "  sla: {e2eMs: 100, ttftMs: 10}\n", "spec.sla", "e2eMs is mutually exclusive with ttftMs and itlMs"},
		{"sla-e2e-itl", "  sla: {e2eMs: 100, itlMs: 10}\n", "spec.sla", "e2eMs is mutually exclusive"},
		{"sla-empty", "  sla: {}\n", "spec.sla", "at least 1"},
		{"sla-negative", "  sla: {ttftMs: -1}\n", "spec.sla.ttftMs", "greater than 0"},
		{"rps-zero", "  workload:\n    static:\n      load: {requestsPerSecond: 0}\n", "spec.workload.static.load.requestsPerSecond", "greater than 0"},
		{"concurrency-zero", "  workload:\n    static:\n      load: {concurrency: 0}\n", "spec.workload.static.load.concurrency", "greater than or equal to 1"},
		{"backend-unknown", "  backends: [vllm, tgi]\n", "spec.backends[1]", "Unsupported value"},
		{"backend-duplicate", "  backends: [vllm, vllm]\n", "spec.backends[1]", "Duplicate"},
		{"max-candidates-21", "  recommendation: {maxCandidates: 21}\n", "spec.recommendation.maxCandidates", "less than or equal to 20"},
		{"budget-zero", "  hardware: {gpu: {budget: 0}}\n", "spec.hardware.gpu.budget", "greater than or equal to 1"},
		{"target-unknown", "  objective: {target: latency}\n", "spec.objective.target", "Unsupported value"},
		{"overrides-array", "  aisimulate:\n    inputOverrides: [1, 2]\n", "spec.aisimulate.inputOverrides", "object"},
		{"overrides-string", "  aisimulate:\n    inputOverrides: \"traffic\"\n", "spec.aisimulate.inputOverrides", "object"},
		{"sku-unknown", "  hardware: {gpu: {sku: k80_pcie}}\n", "spec.hardware.gpu.sku", "Unsupported value"},
		{"goodput-without-sla", "  objective: {target: goodput}\n", "spec.objective.target", "needs at least one SLA bound"},
		{"overrides-too-deep", "  aisimulate:\n    inputOverrides: " + strings.Repeat("{a: ", 17) + "1" + strings.Repeat("}", 17) + "\n", "spec.aisimulate.inputOverrides", "depth"},
		{"max-trials-over-cap", "  aisimulate:\n    inputOverrides: {optimizer: {max_trials: 100000}}\n", "spec.aisimulate.inputOverrides.optimizer.max_trials", "limits.maxTrials"},
		{"model-empty", "", "spec.model.name", ""},
		{"tokens-string", "  workload:\n    static: {inputTokens: \"many\"}\n", "spec.workload.static.inputTokens", "must be of type integer"},
		{"concurrency-fraction", "  workload:\n    static:\n      load: {concurrency: 1.5}\n", "spec.workload.static.load.concurrency", "integer"},
		{"tokens-too-large", "  workload:\n    static: {outputTokens: 3000000}\n", "spec.workload.static.outputTokens", "less than or equal to"},
		{"backends-not-a-list", "  backends: vllm\n", "spec.backends", "array"},
		{"backends-empty", "  backends: []\n", "spec.backends", "at least 1"},
		{"model-not-an-object", "", "spec.model", "object"},
		{"model-name-too-long", "", "spec.model.name", "256"},
		{"revision-empty", "", "spec.model.revision", "at least 1"},
		{"sku-pattern", "  hardware: {gpu: {sku: H200-SXM}}\n", "spec.hardware.gpu.sku", "should match"},
		{"budget-too-large", "  hardware: {gpu: {budget: 5000}}\n", "spec.hardware.gpu.budget", "less than or equal to 4096"},
		{"kv-value-too-large", "  workload:\n    static:\n      load: {kvCapacityFraction: {value: 101}}\n", "spec.workload.static.load.kvCapacityFraction.value", "less than or equal to 100"},
		{"kv-range-missing-max", "  workload:\n    static:\n      load: {kvCapacityFraction: {range: {min: 0.1}}}\n", "spec.workload.static.load.kvCapacityFraction.range.max", "Required value"},
		{"sla-string", "  sla: {ttftMs: fast}\n", "spec.sla.ttftMs", "number"},
		{"max-candidates-zero", "  recommendation: {maxCandidates: 0}\n", "spec.recommendation.maxCandidates", "greater than or equal to 1"},
		{"unknown-spec-field", "  models: {name: x}\n", "spec.models", "unknown field"},
		{"unknown-nested-field", "  workload:\n    static: {inputTokenz: 5}\n", "spec.workload.static.inputTokenz", "unknown field"},
		{"goodput-per-gpu-without-sla", "  objective: {target: goodputPerGpu}\n", "spec.objective.target", "needs at least one SLA bound"},
		{"overrides-too-large", "  aisimulate:\n    inputOverrides: {blob: \"" + strings.Repeat("x", 70*1024) + "\"}\n", "spec.aisimulate.inputOverrides", "65536"},
		{"overrides-two-stop-counts", "  aisimulate:\n    inputOverrides: {traffic: {stop: {requests_per_load_unit: 2}}}\n", "spec.aisimulate.inputOverrides.traffic.stop", "exactly one stop count"},
		{"overrides-unknown-field", "  aisimulate:\n    inputOverrides: {optimizer: {seeed: 1}}\n", "spec.aisimulate.inputOverrides.optimizer.seeed", "unknown field"},
		{"overrides-load-field-of-other-type", "  aisimulate:\n    inputOverrides: {traffic: {load: {type: poisson, requests_per_second: 2}}}\n", "spec.aisimulate.inputOverrides.traffic.load", "another type"},
		{"overrides-pareto-min-goodput", "  objective: {target: pareto}\n  aisimulate:\n    inputOverrides: {optimization: {constraints: {min_goodput_rps: 1}}}\n", "spec.aisimulate.inputOverrides.optimization.constraints.min_goodput_rps", "min_gpus"},
		{"overrides-parallelism-over-cap", "  aisimulate:\n    inputOverrides: {optimizer: {parallelism: 1000}}\n", "spec.aisimulate.inputOverrides.optimizer.parallelism", "limits.maxParallelism"},
		{"remote-code-unknown", "    remoteCode: Sometimes\n", "spec.model.remoteCode", "Unsupported value"},
		{"remote-code-trust-cache-without-revision", "    remoteCode: TrustCacheAndRevision\n    cache: {pvc: {claimName: models}}\n", "spec.model.remoteCode", "requires model.revision and model.cache"},
		{"remote-code-trust-revision-without-cache", "    remoteCode: TrustCacheAndRevision\n    revision: main\n", "spec.model.remoteCode", "requires model.revision and model.cache"},
		{"cache-empty", "    cache: {}\n", "spec.model.cache", "at least 1"},
		{"cache-pvc-without-claim", "    cache: {pvc: {path: hf}}\n", "spec.model.cache.pvc.claimName", "Required value"},
		{"cache-claim-not-a-name", "    cache: {pvc: {claimName: Models_1}}\n", "spec.model.cache.pvc.claimName", "RFC 1123"},
		{"cache-path-absolute", "    cache: {pvc: {claimName: models, path: /hf}}\n", "spec.model.cache.pvc.path", "relative path"},
		{"cache-path-escapes", "    cache: {pvc: {claimName: models, path: a/../../b}}\n", "spec.model.cache.pvc.path", "relative path"},
		{"token-without-name", "    tokenSecretRef: {key: token}\n", "spec.model.tokenSecretRef.name", "Required value"},
		{"token-name-not-a-name", "    tokenSecretRef: {name: HF_Token}\n", "spec.model.tokenSecretRef.name", "RFC 1123"},
		{"token-key-pattern", "    tokenSecretRef: {name: hf, key: \"a b\"}\n", "spec.model.tokenSecretRef.key", "should match"},
		{"unknown-model-cache-field", "    cache: {pvc: {claim: models}}\n", "spec.model.cache.pvc.claim", "unknown field"},
		{"router-mode-unknown", "  deployment: {router: {mode: LeastLoaded}}\n", "spec.deployment.router.mode", "Unsupported value"},
		{"pod-override-not-an-object", "  deployment:\n    podTemplateOverrides: {workers: [1]}\n", "spec.deployment.podTemplateOverrides.workers", "object"},
		{"pod-override-unknown-field", "  deployment:\n    podTemplateOverrides: {workers: {spec: {nodeSelektor: {a: b}}}}\n", "spec.deployment.podTemplateOverrides.workers", "PodTemplateSpec"},
		{"pod-override-wrong-type", "  deployment:\n    podTemplateOverrides: {frontend: {spec: {containers: main}}}\n", "spec.deployment.podTemplateOverrides.frontend", "PodTemplateSpec"},
		{"pod-override-container-without-name", "  deployment:\n    podTemplateOverrides: {prefill: {spec: {containers: [{image: x}]}}}\n", "spec.deployment.podTemplateOverrides.prefill", "PodTemplateSpec"},
		{"pod-override-all-bad-metadata", "  deployment:\n    podTemplateOverrides: {all: {metadata: {labels: [a]}}}\n", "spec.deployment.podTemplateOverrides.all", "PodTemplateSpec"},
		{"unknown-deployment-field", "  deployment: {routr: {mode: KV}}\n", "spec.deployment.routr", "unknown field"},
		{"capture-without-claim", "  deployment:\n    capture: {enabled: true}\n", "spec.deployment.capture.claimName", "claimName is required when capture is enabled"},
		{"capture-claim-not-a-name", "  deployment:\n    capture: {enabled: true, claimName: Traces_1}\n", "spec.deployment.capture.claimName", "should match"},
		{"capture-claim-too-long", "  deployment:\n    capture: {enabled: true, claimName: " + strings.Repeat("c", 254) + "}\n", "spec.deployment.capture.claimName", "253"},
		{"capture-segment-zero", "  deployment:\n    capture: {enabled: true, claimName: traces, rotation: {maxSegmentMiB: 0}}\n", "spec.deployment.capture.rotation.maxSegmentMiB", "greater than or equal to 1"},
		{"capture-segment-too-large", "  deployment:\n    capture: {enabled: true, claimName: traces, rotation: {maxSegmentMiB: 4097}}\n", "spec.deployment.capture.rotation.maxSegmentMiB", "less than or equal to 4096"},
		{"unknown-capture-field", "  deployment:\n    capture: {enabled: true, claim: traces}\n", "spec.deployment.capture.claim", "unknown field"},
		{"research-without-interval", "  research: {windowMinutes: 60}\n", "spec.research.intervalMinutes", "Required value"},
		{"research-interval-too-long", "  research: {intervalMinutes: 43201}\n", "spec.research.intervalMinutes", "less than or equal to 43200"},
		{"research-window-too-long", "  research: {intervalMinutes: 360, windowMinutes: 10081}\n", "spec.research.windowMinutes", "less than or equal to 10080"},
		{"research-interval-not-a-number", "  research: {intervalMinutes: 6h}\n", "spec.research.intervalMinutes", "integer"},
		{"research-interval-below-the-minimum", "  research: {intervalMinutes: 30}\n", "spec.research.intervalMinutes", "research.minInterval"},
		{"research-without-autoapply", "  research: {intervalMinutes: 360}\n", "spec.research", "requires spec.deployment.autoApply"},
		{"research-without-capture", "  deployment: {autoApply: true}\n  research: {intervalMinutes: 360}\n", "spec.research", "requires spec.deployment.capture.enabled"},
		{"research-min-requests-zero", "  research: {intervalMinutes: 360, minRequests: 0}\n", "spec.research.minRequests", "greater than or equal to 1"},
		{"capture-age-without-research", "  deployment:\n    capture: {enabled: true, claimName: traces, rotation: {maxAgeHours: 24}}\n", "spec.deployment.capture.rotation.maxAgeHours", "requires spec.research"},
		{"capture-age-shorter-than-the-window", "  deployment:\n    autoApply: true\n    capture: {enabled: true, claimName: traces, rotation: {maxAgeHours: 1}}\n  research: {intervalMinutes: 60, windowMinutes: 120}\n", "spec.deployment.capture.rotation.maxAgeHours", "must cover the re-search window of 120 minutes"},
		{"capture-age-zero", "  deployment:\n    capture: {enabled: true, claimName: traces, rotation: {maxAgeHours: 0}}\n", "spec.deployment.capture.rotation.maxAgeHours", "greater than or equal to 1"},
		{"replace-margin-not-a-percentage", "  deployment: {replaceMargin: \"0.1\"}\n", "spec.deployment.replaceMargin", "should match"},
		{"replace-margin-over-100", "  deployment: {replaceMargin: 150%}\n", "spec.deployment.replaceMargin", "should match"},
		{"selection-tolerance-not-a-percentage", "  deployment: {selection: {tolerance: \"0.02\"}}\n", "spec.deployment.selection.tolerance", "must be a percentage from 0% to 100% with at most two decimals"},
		{"selection-tolerance-over-100", "  deployment: {selection: {tolerance: 100.5%}}\n", "spec.deployment.selection.tolerance", "must be a percentage from 0% to 100%"},
		{"selection-tolerance-three-decimals", "  deployment: {selection: {tolerance: 1.125%}}\n", "spec.deployment.selection.tolerance", "at most two decimals"},
		{"selection-tolerance-negative", "  deployment: {selection: {tolerance: -1%}}\n", "spec.deployment.selection.tolerance", "must be a percentage from 0% to 100%"},
		{"selection-tolerance-a-number", "  deployment: {selection: {tolerance: 2}}\n", "spec.deployment.selection.tolerance", "must be of type string"},
		{"unknown-research-field", "  research: {intervalMinutes: 360, every: 60}\n", "spec.research.every", "unknown field"},
		{"per-node-zero", "  hardware: {gpu: {perNode: 0}}\n", "spec.hardware.gpu.perNode", "greater than or equal to 1"},
		{"per-node-too-large", "  hardware: {gpu: {perNode: 65}}\n", "spec.hardware.gpu.perNode", "less than or equal to 64"},
		{"overrides-hardware-auto", "  aisimulate:\n    inputOverrides: {engine: {hardware: auto}}\n", "spec.aisimulate.inputOverrides.engine.hardware", "spec.hardware.gpu.sku"},
		{"overrides-engine-model", "  aisimulate:\n    inputOverrides: {engine: {model: attacker/model}}\n", "spec.aisimulate.inputOverrides.engine.model", "spec.model.name"},
		{"model-name-url", "", "spec.model.name", "Hugging Face model id"},
		{"model-name-escape", "", "spec.model.name", "Hugging Face model id"},
		{"model-name-dotdot", "", "spec.model.name", "Hugging Face model id"},
		{"model-name-local-path", "", "spec.model.name", "models.allowLocalPaths"},
		{"revision-space", "    revision: \"main branch\"\n", "spec.model.revision", "branch, tag or commit"},
		{"revision-escape", "", "spec.model.revision", "branch, tag or commit"},
		{"revision-flag", "    revision: --trust-remote-code\n", "spec.model.revision", "branch, tag or commit"},
		{"deployment-name-64", "  deployment: {name: " + strings.Repeat("d", 64) + "}\n", "spec.deployment.name", "63"},
		{"max-cost-without-price", "  hardware: {gpu: {sku: h200_sxm}}\n  objective: {maxCostPerHour: \"40\"}\n", "spec.objective.maxCostPerHour", "no price per GPU-hour for GPU system h200_sxm"},
		{"max-cost-buys-no-gpu", "  hardware: {gpu: {sku: a100_sxm}}\n  objective: {maxCostPerHour: \"1.99\"}\n", "spec.objective.maxCostPerHour", "buys no GPU: one GPU-hour of a100_sxm costs 2.00 USD"},
		{"max-cost-not-a-decimal", "  hardware: {gpu: {sku: a100_sxm}}\n  objective: {maxCostPerHour: \"1e3\"}\n", "spec.objective.maxCostPerHour", "should match"},
		{"max-cost-a-number", "  hardware: {gpu: {sku: a100_sxm}}\n  objective: {maxCostPerHour: 40}\n", "spec.objective.maxCostPerHour", "must be of type string"},
		{"pod-override-over-cap", "  deployment:\n    podTemplateOverrides: {workers: {metadata: {annotations: {a: \"" + strings.Repeat("x", 40<<10) + "\"}}}}\n",
			"spec.deployment.podTemplateOverrides.workers", "32768 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := fromYAML(t, "bad-"+tc.name, tc.spec)
			switch tc.name {
			case "model-empty":
				_ = unstructured.SetNestedField(obj.Object, "", "spec", "model", "name")
			case "model-not-an-object":
				_ = unstructured.SetNestedField(obj.Object, "llama", "spec", "model")
			case "model-name-too-long":
				_ = unstructured.SetNestedField(obj.Object, strings.Repeat("m", 257), "spec", "model", "name")
			case "revision-empty":
				_ = unstructured.SetNestedField(obj.Object, "", "spec", "model", "revision")
			case "revision-escape":
				_ = unstructured.SetNestedField(obj.Object, "main\x1b]8;;https://evil.example\x07", "spec", "model", "revision")
			case "model-name-url":
				_ = unstructured.SetNestedField(obj.Object, "https://evil.example/org/model", "spec", "model", "name")
			case "model-name-escape":
				_ = unstructured.SetNestedField(obj.Object, "org/\x1b[2Jmodel", "spec", "model", "name")
			case "model-name-dotdot":
				_ = unstructured.SetNestedField(obj.Object, "org/../../etc", "spec", "model", "name")
			case "model-name-local-path":
				_ = unstructured.SetNestedField(obj.Object, "/models/llama", "spec", "model", "name")
			}
			err := k8s.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))
			if strings.HasPrefix(tc.name, "unknown-") {
				// Strict field validation rejects unknown fields while decoding, before admission.
				if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `unknown field "`+tc.wantField+`"`) {
					t.Fatalf("want BadRequest naming %s, got %v", tc.wantField, err)
				}
				assertNotStored(t, obj)
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			status := err.(apierrors.APIStatus).Status()
			var fields []string
			for _, c := range status.Details.Causes {
				fields = append(fields, c.Field)
			}
			if !contains(fields, tc.wantField) {
				t.Errorf("causes name fields %v, want %s (error: %v)", fields, tc.wantField, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
			assertNotStored(t, obj)
		})
	}
	if len(cases) < 40 {
		t.Errorf("the bad-input table has %d rows; keep at least 40", len(cases))
	}
}

func assertNotStored(t *testing.T, obj client.Object) {
	t.Helper()
	got := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), got); !apierrors.IsNotFound(err) {
		t.Errorf("a rejected request was stored (get: %v)", err)
	}
}

func TestNameTooLongForDerivedChildren(t *testing.T) {
	obj := fromYAML(t, strings.Repeat("n", 64), "")
	err := k8s.Create(context.Background(), obj)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.name") {
		t.Fatalf("want metadata.name rejected, got %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestDefaultingIsStored checks that admission materializes every default into the stored
// object (origin change examples), and that the stored object lowers as SPEC §4.3 says.
func TestDefaultingIsStored(t *testing.T) {
	ctx := context.Background()
	defaultStatic := &v1beta2.StaticWorkload{InputTokens: i32(1024), OutputTokens: i32(128), Load: &v1beta2.LoadSpec{Concurrency: i32(10)}}
	cases := []struct {
		name       string
		spec       string
		wantStatic *v1beta2.StaticWorkload
		wantLoad   string // expected traffic of the effective input (JSON), "" = skip
	}{
		{"model-only", "", defaultStatic, `{"source":{"type":"synthetic","input_tokens":1024,"output_tokens":128},"load":{"type":"concurrency","concurrency":10},"stop":{"requests":1000}}`},
		{"opt-out", "  workload:\n    static: {}\n", &v1beta2.StaticWorkload{}, `null`},
		{"partial", "  workload:\n    static: {inputTokens: 2048}\n",
			&v1beta2.StaticWorkload{InputTokens: i32(2048), OutputTokens: i32(128), Load: &v1beta2.LoadSpec{Concurrency: i32(10)}}, ""},
		{"rps", "  workload:\n    static:\n      load: {requestsPerSecond: 20}\n",
			&v1beta2.StaticWorkload{InputTokens: i32(1024), OutputTokens: i32(128), Load: &v1beta2.LoadSpec{RequestsPerSecond: f64(20)}},
			`{"source":{"type":"synthetic","input_tokens":1024,"output_tokens":128},"load":{"type":"poisson","requests_per_second":20},"stop":{"requests":1000}}`},
		{"kv-value", "  workload:\n    static:\n      load: {kvCapacityFraction: {value: 0.5}}\n",
			&v1beta2.StaticWorkload{InputTokens: i32(1024), OutputTokens: i32(128), Load: &v1beta2.LoadSpec{KVCapacityFraction: &v1beta2.KVCapacityFraction{Value: f64(0.5)}}}, ""},
		{"kv-range", "  workload:\n    static:\n      load: {kvCapacityFraction: {range: {min: 0.1, max: 1.0}}}\n",
			&v1beta2.StaticWorkload{InputTokens: i32(1024), OutputTokens: i32(128), Load: &v1beta2.LoadSpec{KVCapacityFraction: &v1beta2.KVCapacityFraction{Range: &v1beta2.FractionRange{Min: 0.1, Max: 1}}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := fromYAML(t, "stored-"+tc.name, tc.spec)
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			got := &v1beta2.DynamoGraphDeploymentRequest{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantStatic, got.Spec.Workload.Static); diff != "" {
				t.Errorf("stored static (-want +got):\n%s", diff)
			}
			if d := got.Spec.Deployment; d == nil || d.Router == nil || d.Router.Mode != v1beta2.RouterRoundRobin {
				t.Errorf("deployment.router.mode not materialized: %+v", d)
			}
			if sel := got.Spec.Deployment.Selection; sel == nil || sel.Tolerance != "2%" {
				t.Errorf("deployment.selection.tolerance not materialized as 2%%: %+v", sel)
			}
			if got.Spec.Model.RemoteCode != v1beta2.RemoteCodeNever {
				t.Errorf("model.remoteCode not materialized: %q", got.Spec.Model.RemoteCode)
			}
			if p := got.Spec.Hardware.GPU.PerNode; p == nil || *p != 8 {
				t.Errorf("hardware.gpu.perNode not materialized from the catalogue: %v", p)
			}
			if got.Spec.Hardware.GPU.SKU != "h200_sxm" || *got.Spec.Recommendation.MaxCandidates != 5 {
				t.Errorf("sku/maxCandidates not materialized: %+v %+v", got.Spec.Hardware.GPU, got.Spec.Recommendation)
			}
			if tc.wantLoad != "" {
				in, errs := aisimulate.Lower(&got.Spec, aisimulate.Options{})
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				want, _ := aisimulate.Canonicalize([]byte(`{"t":` + tc.wantLoad + `}`))
				gotTraffic, _ := aisimulate.Canonicalize(mustJSON(t, map[string]any{"t": in.Document["traffic"]}))
				if diff := cmp.Diff(string(want.JSON), string(gotTraffic.JSON)); diff != "" {
					t.Errorf("effective traffic (-want +got):\n%s", diff)
				}
			}
			// Defaulting is idempotent through the API server: an update without changes keeps
			// the generation.
			gen := got.Generation
			if err := k8s.Update(ctx, got); err != nil {
				t.Fatal(err)
			}
			if got.Generation != gen {
				t.Errorf("a no-op update bumped the generation %d → %d", gen, got.Generation)
			}
		})
	}
}

// TestSelectionTolerancesAccepted: the percentages the tolerance's rule admits are stored as
// written, the bounds and two decimals included.
func TestSelectionTolerancesAccepted(t *testing.T) {
	ctx := context.Background()
	for i, tol := range []string{"0%", "0.5%", "2%", "10.25%", "99.99%", "100%"} {
		obj := fromYAML(t, "tolerance-"+strconv.Itoa(i), "  deployment: {selection: {tolerance: \""+tol+"\"}}\n")
		if err := k8s.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			t.Errorf("tolerance %s: %v", tol, err)
			continue
		}
		got := &v1beta2.DynamoGraphDeploymentRequest{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Deployment.Selection.Tolerance != tol {
			t.Errorf("tolerance %s stored as %q", tol, got.Spec.Deployment.Selection.Tolerance)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRunAndCandidateSpecsAreImmutable: once set, a Run's or Candidate's spec cannot change (the
// CRDs' CEL rules alone: no webhook serves these kinds); status can.
func TestRunAndCandidateSpecsAreImmutable(t *testing.T) {
	ctx := context.Background()
	run := builders.Run("default", "immutable-run").WithSpec(builders.Request("", "").Model("m").GPUSKU("h200_sxm").Spec).Obj()
	if err := k8s.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	run.Spec.Model.Name = "other"
	if err := k8s.Update(ctx, run); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("changing a Run's spec: want Invalid 'spec is immutable', got %v", err)
	}
	fresh := &v1beta2.DynamoGraphDeploymentRun{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(run), fresh); err != nil {
		t.Fatal(err)
	}
	if fresh.Spec.Model.Name != "m" {
		t.Fatalf("spec changed to %q", fresh.Spec.Model.Name)
	}
	fresh.Status.Phase = v1beta2.RunPhaseRunning
	if err := k8s.Status().Update(ctx, fresh); err != nil {
		t.Fatalf("status must stay writable: %v", err)
	}

	cand := builders.Candidate("default", "immutable-candidate").
		GraphDeployment([]byte(`{"services":{}}`)).Parameters(`{"engine":{}}`).Obj()
	if err := k8s.Create(ctx, cand); err != nil {
		t.Fatal(err)
	}
	cand.Spec.GPUs = 2
	if err := k8s.Update(ctx, cand); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("changing a Candidate's spec: want Invalid, got %v", err)
	}
}

// TestWritesThatMustNotStick: status written through the main resource is dropped (only the
// status subresource writes it), and Runs are held to the same schema and CEL rules as requests.
func TestWritesThatMustNotStick(t *testing.T) {
	ctx := context.Background()
	obj := fromYAML(t, "status-through-main", "")
	_ = unstructured.SetNestedField(obj.Object, int64(7), "status", "observedGeneration")
	_ = unstructured.SetNestedField(obj.Object, "forged-run", "status", "activeRunRef", "name")
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration != 0 || got.Status.ActiveRunRef != nil {
		t.Fatalf("status written through the main resource was stored: %+v", got.Status)
	}
	got.Status.ObservedGeneration = 9
	if err := k8s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration != 0 {
		t.Fatalf("status update through the main resource was stored: %d", got.Status.ObservedGeneration)
	}

	run := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1beta2", "kind": "DynamoGraphDeploymentRun",
		"metadata": map[string]any{"name": "bad-run", "namespace": "default"},
		"spec": map[string]any{"model": map[string]any{"name": "m"},
			"workload": map[string]any{"static": map[string]any{"load": map[string]any{}}}},
	}}
	err := k8s.Create(ctx, run)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.workload.static.load") {
		t.Fatalf("a Run with an invalid load union: want Invalid at spec.workload.static.load, got %v", err)
	}
}

// TestModelAccessDefaultsAreStored: a token Secret reference without a key is stored with key
// HF_TOKEN, and a complete model-access spec is accepted and kept as written.
func TestModelAccessDefaultsAreStored(t *testing.T) {
	ctx := context.Background()
	obj := fromYAML(t, "stored-model-access", "    revision: 0123456789abcdef0123456789abcdef01234567\n"+
		"    remoteCode: TrustCacheAndRevision\n    cache: {pvc: {claimName: models, path: hf}}\n    tokenSecretRef: {name: hf-token}\n")
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	want := v1beta2.ModelSpec{
		Name:           "meta-llama/Llama-3.1-8B-Instruct",
		Revision:       "0123456789abcdef0123456789abcdef01234567",
		RemoteCode:     v1beta2.RemoteCodeTrustCacheAndRevision,
		Cache:          &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "models", Path: "hf"}},
		TokenSecretRef: &v1beta2.TokenSecretReference{Name: "hf-token", Key: "HF_TOKEN"},
	}
	if diff := cmp.Diff(want, got.Spec.Model); diff != "" {
		t.Errorf("stored model (-want +got):\n%s", diff)
	}
}
