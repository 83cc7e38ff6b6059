package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

const header = "apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: OperatorConfiguration\nreporter: {image: example.com/dgdr-operator:1}\n"

func TestDecodeDefaults(t *testing.T) {
	cfg, err := config.Decode([]byte(header + "planner:\n  image: example.com/planner:1\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{
		"command":   cfg.Planner.Command,
		"sku":       cfg.Defaults.GPUSKU,
		"discovery": *cfg.Defaults.GPUDiscovery,
		"images":    cfg.RuntimeImages,
		"retention": *cfg.RunRetention,
		"maxActive": *cfg.Limits.MaxActiveRunsPerNamespace,
		"deadline":  *cfg.Job.ActiveDeadlineSeconds,
		"baseline":  *cfg.Job.BaselineDeadlineSeconds,
		"port":      *cfg.Webhook.Port,
		"jobTTL":    *cfg.Job.TTLSecondsAfterFinished,
		"tokenLife": *cfg.Job.TokenExpirationSeconds,
		"bodyLimit": cfg.Webhook.MaxRequestBodySize.Value(),
		"readTime":  cfg.Webhook.RequestReadTimeout.Duration,
		"autoApply": cfg.AutoApply.Enabled,
		"localPath": cfg.Models.AllowLocalPaths,
		"override":  *cfg.Limits.MaxPodTemplateOverrideBytes,
		"reconcile": cfg.ReconciliationTimeout.Duration,
	}
	want := map[string]any{
		"command": []string{"aisimulate", "recommend"}, "sku": "", "discovery": true, "retention": int32(5),
		"images": map[string]v1alpha1.RuntimeImage{
			"vllm":   {Image: "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1", EngineVersion: "0.31.0"},
			"sglang": {Image: "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1", EngineVersion: "0.5.21"},
			"trtllm": {Image: "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.6.1", EngineVersion: "1.3.0rc29"}},
		"maxActive": int32(4), "deadline": int64(21600), "baseline": int64(1800), "port": int32(9443),
		"jobTTL": int32(3600), "tokenLife": int64(600),
		"bodyLimit": int64(3 << 20), "readTime": 10 * time.Second,
		"autoApply": false, "localPath": false, "override": int32(32768),
		"reconcile": 2 * time.Minute,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestDecodeErrorsNamePaths(t *testing.T) {
	cases := []struct {
		name, doc, wantInError string
	}{
		{"unknown nested field", header + "planner:\n  image: x\n  imagee: y\n", `planner.imagee`},
		{"unknown top-level field", header + "planner: {image: x}\nretention: 3\n", `"retention"`},
		{"missing planner image", header + "planner: {}\n", "planner.image"},
		{"wrong kind", "apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: Other\nplanner: {image: x}\n", "kind"},
		{"unknown default sku", header + "planner: {image: x}\ndefaults: {gpuSKU: k80}\n", "defaults.gpuSKU"},
		{"retention out of range", header + "planner: {image: x}\nrunRetention: 0\n", "runRetention"},
		{"negative limit", header + "planner: {image: x}\nlimits: {maxTrials: -1}\n", "limits.maxTrials"},
		{"unknown runtime backend", header + "planner: {image: x}\nruntimeImages: {tensorrt: img}\n", "runtimeImages[tensorrt]"},
		{"wrong type", header + "planner: {image: x}\nrunRetention: many\n", "runRetention"},
		{"duplicate field", header + "planner: {image: x}\nplanner: {image: y}\n", "planner"},
		{"token lifetime the API server extends to a year", header + "planner: {image: x}\njob: {tokenExpirationSeconds: 3607}\n", "job.tokenExpirationSeconds"},
		{"token lifetime below the minimum", header + "planner: {image: x}\njob: {tokenExpirationSeconds: 60}\n", "job.tokenExpirationSeconds"},
		{"webhook body limit below 1Mi", header + "planner: {image: x}\nwebhook: {maxRequestBodySize: 512Ki}\n", "webhook.maxRequestBodySize"},
		{"webhook body limit above 64Mi", header + "planner: {image: x}\nwebhook: {maxRequestBodySize: 1Gi}\n", "webhook.maxRequestBodySize"},
		{"webhook read timeout above 30s", header + "planner: {image: x}\nwebhook: {requestReadTimeout: 5m}\n", "webhook.requestReadTimeout"},
		{"webhook read timeout below 1s", header + "planner: {image: x}\nwebhook: {requestReadTimeout: 10ms}\n", "webhook.requestReadTimeout"},
		{"pod template override cap too small", header + "planner: {image: x}\nlimits: {maxPodTemplateOverrideBytes: 10}\n", "limits.maxPodTemplateOverrideBytes"},
		{"unknown autoApply field", header + "planner: {image: x}\nautoApply: {enable: true}\n", "autoApply.enable"},
		{"autoApply enabled not a boolean", header + "planner: {image: x}\nautoApply: {enabled: sometimes}\n", "autoApply.enabled"},
		{"unknown models field", header + "planner: {image: x}\nmodels: {allowLocalModels: true}\n", "models.allowLocalModels"},
		{"unknown verification field", header + "planner: {image: x}\nverification: {images: y}\n", "verification.images"},
		{"verification image with whitespace", header + "planner: {image: x}\nverification: {image: \"aiperf latest\"}\n", "verification.image"},
		{"unknown verification pull policy", header + "planner: {image: x}\nverification: {image: aiperf:1, imagePullPolicy: Sometimes}\n", "verification.imagePullPolicy"},
		{"reconciliation timeout below 10s", header + "planner: {image: x}\nreconciliationTimeout: 5s\n", "reconciliationTimeout"},
		{"reconciliation timeout above 1h", header + "planner: {image: x}\nreconciliationTimeout: 2h\n", "reconciliationTimeout"},
		{"crds without a conversion service", header + "planner: {image: x}\ncrds: {conversionService: {namespace: ns}}\n", "crds.conversionService.name"},
		{"trusted namespace that is not a namespace name", header + "planner: {image: x}\ncalibration: {trustedNamespaces: [team-a, Team_B]}\n", "calibration.trustedNamespaces[1]"},
		{"trusted namespace twice", header + "planner: {image: x}\ncalibration: {trustedNamespaces: [team-a, team-a]}\n", "calibration.trustedNamespaces[1]: Duplicate value"},
		{"trusted namespace not watched", header + "planner: {image: x}\nnamespaces: [team-a]\ncalibration: {trustedNamespaces: [team-a, team-b]}\n", "calibration.trustedNamespaces[1]: Invalid value: \"team-b\": must be one of namespaces"},
		{"too many trusted namespaces", header + "planner: {image: x}\ncalibration: {trustedNamespaces: [" + strings.Repeat("t,", 32) + "u]}\n", "calibration.trustedNamespaces: Too many: 33"},
		{"the removed calibration namespace", header + "planner: {image: x}\ncalibration: {namespace: dgdr-system}\n", "calibration.namespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Decode([]byte(tc.doc))
			if err == nil {
				t.Fatalf("want an error naming %s", tc.wantInError)
			}
			if !strings.Contains(err.Error(), tc.wantInError) {
				t.Errorf("error %q does not name %s", err, tc.wantInError)
			}
		})
	}
}

// TestDefaultsAreNotAssumedOverExplicitValues: an explicit default SKU, discovery off and runtime
// images of another release stay as written.
func TestDefaultsAreNotAssumedOverExplicitValues(t *testing.T) {
	cfg, err := config.Decode([]byte(header + "planner: {image: x}\ndefaults: {gpuSKU: a100_sxm, gpuDiscovery: false}\nruntimeImages: {vllm: v:2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{"sku": cfg.Defaults.GPUSKU, "discovery": config.GPUDiscoveryEnabled(cfg), "images": cfg.RuntimeImages}
	want := map[string]any{"sku": "a100_sxm", "discovery": false, "images": map[string]v1alpha1.RuntimeImage{"vllm": {Image: "v:2"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReporterImageFromEnvironment(t *testing.T) {
	doc := "apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: OperatorConfiguration\nplanner: {image: p}\n"
	t.Setenv("OPERATOR_IMAGE", "")
	if _, err := config.Decode([]byte(doc)); err == nil || !strings.Contains(err.Error(), "reporter.image") {
		t.Fatalf("want reporter.image required, got %v", err)
	}
	t.Setenv("OPERATOR_IMAGE", "registry.example.com/dgdr-operator:v1")
	cfg, err := config.Decode([]byte(doc))
	if err != nil || cfg.Reporter.Image != "registry.example.com/dgdr-operator:v1" {
		t.Fatalf("reporter image from OPERATOR_IMAGE: %v %q", err, cfg.Reporter.Image)
	}
}

// TestVerificationResources: a configuration that gives the verification container no resources
// gets the bounded defaults (never a BestEffort pod running a load the request chooses); one that
// sets any keeps exactly what it set.
func TestVerificationResources(t *testing.T) {
	cases := []struct {
		name, doc string
		want      corev1.ResourceRequirements
	}{
		{"unset", "", config.DefaultVerificationResources()},
		{"empty", "verification: {resources: {}}\n", config.DefaultVerificationResources()},
		{"limits only", "verification: {resources: {limits: {memory: 8Gi}}}\n",
			corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Decode([]byte(header + "planner: {image: x}\n" + tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cfg.Verification.Resources); diff != "" {
				t.Errorf("verification.resources (-want +got):\n%s", diff)
			}
		})
	}
	d := config.DefaultVerificationResources()
	if d.Limits.Cpu().IsZero() || d.Limits.Memory().IsZero() || d.Requests.Cpu().IsZero() || d.Requests.Memory().IsZero() {
		t.Errorf("the default verification resources leave a bound unset: %+v", d)
	}
}

// TestRuntimeImageForms: runtimeImages takes {image, engineVersion} per backend and, as
// configurations written before engine versions, a plain image; a default image named alone runs
// the default engine version, another image's version is unknown. Bad entries are errors naming
// their path.
func TestRuntimeImageForms(t *testing.T) {
	cfg, err := config.Decode([]byte(header + `planner: {image: x}
runtimeImages:
  vllm: {image: "registry.example/vllm:2", engineVersion: "0.33.0"}
  sglang: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1
  trtllm: registry.example/trtllm:2
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]v1alpha1.RuntimeImage{
		"vllm":   {Image: "registry.example/vllm:2", EngineVersion: "0.33.0"},
		"sglang": {Image: "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1", EngineVersion: "0.5.21"},
		"trtllm": {Image: "registry.example/trtllm:2"},
	}
	if diff := cmp.Diff(want, cfg.RuntimeImages); diff != "" {
		t.Errorf("runtimeImages (-want +got):\n%s", diff)
	}
	for doc, wantErr := range map[string]string{
		"runtimeImages: {vllm: {image: a, version: b}}":                                      `unknown field "version"`,
		"runtimeImages: {vllm: {engineVersion: b}}":                                          "runtimeImages[vllm].image: Required value",
		"runtimeImages: {vllm: {image: a, engineVersion: v" + strings.Repeat("9", 65) + "}}": "runtimeImages[vllm].engineVersion: Too long",
		"runtimeImages: {tgi: a}":                                                            "runtimeImages[tgi]: Unsupported value",
	} {
		_, err := config.Decode([]byte(header + "planner: {image: x}\n" + doc + "\n"))
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: error %v, want one with %q", doc, err, wantErr)
		}
	}
}

// TestRuntimeImagesEnvironment: the reporter reads back what the operator writes into the search
// Job (engine versions included), and the images-only list of earlier operators.
func TestRuntimeImagesEnvironment(t *testing.T) {
	got, err := config.ParseRuntimeImages(config.FormatRuntimeImages(config.DefaultRuntimeImages))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(config.DefaultRuntimeImages, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	got, err = config.ParseRuntimeImages("vllm=a:1, sglang=b:2,trtllm=c@sha256:00")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]v1alpha1.RuntimeImage{"vllm": {Image: "a:1"}, "sglang": {Image: "b:2"}, "trtllm": {Image: "c@sha256:00"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"vllm", "foo=bar", "vllm=", `{"vllm":{"image":""}}`, `{"vllm":{"image":"a","x":1}}`, `{"tgi":{"image":"a"}}`} {
		if _, err := config.ParseRuntimeImages(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
