// Package config loads, defaults and validates the operator configuration file.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/currency"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Default values of the configuration.
const (
	DefaultRunRetention   int32 = 5
	DefaultActiveDeadline int64 = 6 * 60 * 60
	// DefaultBaselineDeadline is job.baselineDeadlineSeconds when unset.
	DefaultBaselineDeadline int64 = 30 * 60
	DefaultMaxActiveRuns    int32 = 4
	DefaultMaxPendingRuns   int32 = 1000
	// DefaultMinObservations is calibration.minObservations when unset.
	DefaultMinObservations int32 = 3
	DefaultMaxTrials       int32 = 2000
	DefaultMaxParallelism  int32 = 64
	// DefaultMaxPodTemplateOverrideBytes caps each pod template override (32 KiB).
	DefaultMaxPodTemplateOverrideBytes int32 = 32 << 10
	DefaultWorkers                     int32 = 4
	DefaultSearchUID                   int64 = 65532
	DefaultStartFailureGrace           int32 = 120
	DefaultJobTTL                      int32 = 3600
	DefaultTokenExpiration             int64 = 600
	// extendedTokenExpiration is the token lifetime the API server extends to a year
	// (--service-account-extend-token-expiration, on by default).
	extendedTokenExpiration   int64 = 3607
	DefaultLeaseName                = "dgdr-operator.nvidia.com"
	DefaultMetricsBindAddress       = ":8080"
	DefaultHealthBindAddress        = ":8081"
	DefaultWebhookPort        int32 = 9443
	DefaultWebhookCertDir           = "/tmp/k8s-webhook-server/serving-certs"
	// DefaultWebhookMaxRequestBodySize is the webhook server's request body limit.
	DefaultWebhookMaxRequestBodySize = "3Mi"
	// DefaultWebhookRequestReadTimeout is the webhook server's body read timeout.
	DefaultWebhookRequestReadTimeout = 10 * time.Second
	// DefaultOutputSizeLimit is the sizeLimit of the search's output emptyDir.
	DefaultOutputSizeLimit = "256Mi"
	// DefaultTmpSizeLimit is the sizeLimit of the search container's /tmp emptyDir.
	DefaultTmpSizeLimit = "1Gi"
	// DefaultPlannerImage is the Planner image of the Dynamo release this operator is tested with.
	DefaultPlannerImage = "nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.6.1"
)

// DefaultRuntimeImages are the runtime images of the Dynamo release this operator is tested with
// (the release of DefaultPlannerImage) and the engine versions they run (the release's
// compatibility matrix; docs/operate/compatibility.md).
var DefaultRuntimeImages = map[string]v1alpha1.RuntimeImage{
	output.BackendVLLM:   {Image: "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1", EngineVersion: "0.31.0"},
	output.BackendSGLang: {Image: "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1", EngineVersion: "0.5.21"},
	output.BackendTRTLLM: {Image: "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.6.1", EngineVersion: "1.3.0rc29"},
}

// MaxEngineVersionLength bounds runtimeImages.<backend>.engineVersion (a Candidate's
// status.engineVersions.runtime has the same bound).
const MaxEngineVersionLength = 64

// RuntimeImageRefs are the image references of images, by backend: what the renderer needs.
func RuntimeImageRefs(images map[string]v1alpha1.RuntimeImage) map[string]string {
	out := make(map[string]string, len(images))
	for backend, img := range images {
		out[backend] = img.Image
	}
	return out
}

// DefaultVerificationResources are verification.resources when it sets neither requests nor
// limits: enough for AIPerf's worker processes and a tokenizer, and a bound on a load the
// request chooses.
func DefaultVerificationResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi")},
	}
}

// DefaultSearchCommand runs AISimulate's recommend command.
var DefaultSearchCommand = []string{"aisimulate", "recommend"}

// DefaultPredictCommand runs AISimulate's predict command (a re-search's baseline).
var DefaultPredictCommand = []string{"aisimulate", "predict"}

// DefaultResearchMinInterval is research.minInterval when unset.
const DefaultResearchMinInterval = time.Hour

// DefaultReconciliationTimeout is reconciliationTimeout when unset: far above what a reconcile
// takes (a few API calls, each answered in milliseconds; none waits for a Job or a pod), and
// short enough that a hung call frees its worker within minutes.
const DefaultReconciliationTimeout = 2 * time.Minute

// Bounds of reconciliationTimeout.
const (
	MinReconciliationTimeout = 10 * time.Second
	MaxReconciliationTimeout = time.Hour
)

// Load reads, strictly decodes, defaults and validates a configuration file.
func Load(path string) (*v1alpha1.OperatorConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Decode strictly decodes, defaults and validates configuration file content. Unknown or
// duplicate fields are errors.
func Decode(data []byte) (*v1alpha1.OperatorConfiguration, error) {
	cfg := &v1alpha1.OperatorConfiguration{}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("configuration is empty")
	}
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("decoding configuration: %w", err)
	}
	// sigs.k8s.io/json reports unknown and duplicate fields with their full path.
	strictErrs, err := kjson.UnmarshalStrict(jsonData, cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding configuration: %w", err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("decoding configuration: %w", errors.Join(strictErrs...))
	}
	SetDefaults(cfg)
	if errs := Validate(cfg); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return cfg, nil
}

// Default returns the shipped default configuration (what dgdrctl uses without --config).
func Default() *v1alpha1.OperatorConfiguration {
	cfg := &v1alpha1.OperatorConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion, Kind: v1alpha1.Kind},
		Planner:  v1alpha1.PlannerConfig{Image: DefaultPlannerImage},
	}
	SetDefaults(cfg)
	return cfg
}

// GPUDiscoveryEnabled tells whether the operator reads the cluster's GPU Nodes
// (defaults.gpuDiscovery, on unless set false): SKU discovery and the budget warning at
// admission, and Candidates' status.fitsCluster.
func GPUDiscoveryEnabled(cfg *v1alpha1.OperatorConfiguration) bool {
	return cfg.Defaults.GPUDiscovery == nil || *cfg.Defaults.GPUDiscovery
}

// SetDefaults fills every unset field with its default.
func SetDefaults(cfg *v1alpha1.OperatorConfiguration) {
	if len(cfg.Planner.PredictCommand) == 0 {
		cfg.Planner.PredictCommand = append([]string(nil), DefaultPredictCommand...)
	}
	if cfg.Research.MinInterval == nil {
		cfg.Research.MinInterval = &metav1.Duration{Duration: DefaultResearchMinInterval}
	}
	if len(cfg.Planner.Command) == 0 {
		cfg.Planner.Command = append([]string(nil), DefaultSearchCommand...)
	}
	if cfg.Planner.ImagePullPolicy == "" {
		cfg.Planner.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if cfg.Reporter.Image == "" {
		cfg.Reporter.Image = os.Getenv("OPERATOR_IMAGE")
	}
	if cfg.Verification.ImagePullPolicy == "" {
		cfg.Verification.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if r := &cfg.Verification.Resources; len(r.Requests) == 0 && len(r.Limits) == 0 {
		*r = DefaultVerificationResources()
	}
	defaultJob(&cfg.Job)
	if cfg.Defaults.GPUDiscovery == nil {
		cfg.Defaults.GPUDiscovery = ptr.To(true)
	}
	if len(cfg.RuntimeImages) == 0 {
		cfg.RuntimeImages = maps.Clone(DefaultRuntimeImages)
	}
	for backend, img := range cfg.RuntimeImages {
		// A default image named alone runs the default engine version.
		if def, ok := DefaultRuntimeImages[backend]; ok && img.EngineVersion == "" && img.Image == def.Image {
			cfg.RuntimeImages[backend] = def
		}
	}
	if cfg.RunRetention == nil {
		cfg.RunRetention = ptr.To(DefaultRunRetention)
	}
	defaultLimits(cfg)
	defaultServing(cfg)
	if cfg.Calibration.MinObservations == nil {
		cfg.Calibration.MinObservations = ptr.To(DefaultMinObservations)
	}
	if c := cfg.CRDs; c != nil && c.ConversionService.Namespace == "" {
		c.ConversionService.Namespace = os.Getenv("POD_NAMESPACE")
	}
}

// defaultJob sets the search Job's defaults.
func defaultJob(j *v1alpha1.JobConfig) {
	if j.ActiveDeadlineSeconds == nil {
		j.ActiveDeadlineSeconds = ptr.To(DefaultActiveDeadline)
	}
	if j.BaselineDeadlineSeconds == nil {
		j.BaselineDeadlineSeconds = ptr.To(DefaultBaselineDeadline)
	}
	if j.OutputSizeLimit == nil {
		j.OutputSizeLimit = ptr.To(resource.MustParse(DefaultOutputSizeLimit))
	}
	if j.TmpSizeLimit == nil {
		j.TmpSizeLimit = ptr.To(resource.MustParse(DefaultTmpSizeLimit))
	}
	for _, id := range []**int64{&j.RunAsUser, &j.RunAsGroup, &j.FSGroup} {
		if *id == nil {
			*id = ptr.To(DefaultSearchUID)
		}
	}
	if j.TTLSecondsAfterFinished == nil {
		j.TTLSecondsAfterFinished = ptr.To(DefaultJobTTL)
	}
	if j.TokenExpirationSeconds == nil {
		j.TokenExpirationSeconds = ptr.To(DefaultTokenExpiration)
	}
	if j.StartFailureGraceSeconds == nil {
		j.StartFailureGraceSeconds = ptr.To(DefaultStartFailureGrace)
	}
}

// defaultLimits sets the per-namespace limits, the input caps and the workers' concurrency.
func defaultLimits(cfg *v1alpha1.OperatorConfiguration) {
	if cfg.Limits.MaxActiveRunsPerNamespace == nil {
		cfg.Limits.MaxActiveRunsPerNamespace = ptr.To(DefaultMaxActiveRuns)
	}
	if cfg.Limits.MaxPendingRunsPerNamespace == nil {
		cfg.Limits.MaxPendingRunsPerNamespace = ptr.To(DefaultMaxPendingRuns)
	}
	if cfg.Limits.MaxTrials == nil {
		cfg.Limits.MaxTrials = ptr.To(DefaultMaxTrials)
	}
	if cfg.Limits.MaxParallelism == nil {
		cfg.Limits.MaxParallelism = ptr.To(DefaultMaxParallelism)
	}
	if cfg.Limits.MaxPodTemplateOverrideBytes == nil {
		cfg.Limits.MaxPodTemplateOverrideBytes = ptr.To(DefaultMaxPodTemplateOverrideBytes)
	}
	if cfg.Concurrency.Requests == nil {
		cfg.Concurrency.Requests = ptr.To(DefaultWorkers)
	}
	if cfg.Concurrency.Runs == nil {
		cfg.Concurrency.Runs = ptr.To(DefaultWorkers)
	}
	if cfg.ReconciliationTimeout == nil {
		cfg.ReconciliationTimeout = &metav1.Duration{Duration: DefaultReconciliationTimeout}
	}
}

// defaultServing sets leader election and the metrics, health and webhook servers.
func defaultServing(cfg *v1alpha1.OperatorConfiguration) {
	le := &cfg.LeaderElection
	if le.LeaseName == "" {
		le.LeaseName = DefaultLeaseName
	}
	if le.LeaseDuration == nil {
		le.LeaseDuration = &metav1.Duration{Duration: 15 * time.Second}
	}
	if le.RenewDeadline == nil {
		le.RenewDeadline = &metav1.Duration{Duration: 10 * time.Second}
	}
	if le.RetryPeriod == nil {
		le.RetryPeriod = &metav1.Duration{Duration: 2 * time.Second}
	}
	if cfg.Metrics.BindAddress == "" {
		cfg.Metrics.BindAddress = DefaultMetricsBindAddress
	}
	if cfg.Health.BindAddress == "" {
		cfg.Health.BindAddress = DefaultHealthBindAddress
	}
	if cfg.Webhook.Port == nil {
		cfg.Webhook.Port = ptr.To(DefaultWebhookPort)
	}
	if cfg.Webhook.CertDir == "" {
		cfg.Webhook.CertDir = DefaultWebhookCertDir
	}
	if cfg.Webhook.MaxRequestBodySize == nil {
		cfg.Webhook.MaxRequestBodySize = ptr.To(resource.MustParse(DefaultWebhookMaxRequestBodySize))
	}
	if cfg.Webhook.RequestReadTimeout == nil {
		cfg.Webhook.RequestReadTimeout = &metav1.Duration{Duration: DefaultWebhookRequestReadTimeout}
	}
	if ss := cfg.Webhook.SelfSignedCertificates; ss != nil && ss.Namespace == "" {
		ss.Namespace = os.Getenv("POD_NAMESPACE")
	}
}

// Validate checks a defaulted configuration; errors carry field paths.
func Validate(cfg *v1alpha1.OperatorConfiguration) field.ErrorList {
	var errs field.ErrorList
	if cfg.APIVersion != v1alpha1.GroupVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), cfg.APIVersion, []string{v1alpha1.GroupVersion}))
	}
	if cfg.Kind != v1alpha1.Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), cfg.Kind, []string{v1alpha1.Kind}))
	}
	errs = append(errs, validateImages(cfg)...)
	if sku := cfg.Defaults.GPUSKU; sku != "" && !aisimulate.KnownSKU(sku) {
		errs = append(errs, field.NotSupported(field.NewPath("defaults", "gpuSKU"), sku, aisimulate.KnownSKUs()))
	}
	if r := *cfg.RunRetention; r < 1 || r > 100 {
		errs = append(errs, field.Invalid(field.NewPath("runRetention"), r, "must be between 1 and 100"))
	}
	errs = append(errs, validateJob(&cfg.Job, field.NewPath("job"))...)
	errs = append(errs, validateLimits(cfg)...)
	for backend, img := range cfg.RuntimeImages {
		p := field.NewPath("runtimeImages").Key(backend)
		if _, known := output.LookupBackend(backend); !known {
			errs = append(errs, field.NotSupported(p, backend, output.BackendNames()))
		}
		if strings.TrimSpace(img.Image) == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
		if len(img.EngineVersion) > MaxEngineVersionLength {
			errs = append(errs, field.TooLong(p.Child("engineVersion"), img.EngineVersion, MaxEngineVersionLength))
		}
	}
	errs = append(errs, validateWebhook(cfg, field.NewPath("webhook"))...)
	if c := cfg.CRDs; c != nil {
		sp := field.NewPath("crds", "conversionService")
		if c.ConversionService.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		}
		if c.ConversionService.Namespace == "" {
			errs = append(errs, field.Required(sp.Child("namespace"), "set it, or POD_NAMESPACE"))
		}
	}
	errs = append(errs, validatePricing(cfg.Pricing, field.NewPath("pricing"))...)
	if n := *cfg.Calibration.MinObservations; n < 1 || n > 100 {
		errs = append(errs, field.Invalid(field.NewPath("calibration", "minObservations"), n, "must be between 1 and 100"))
	}
	errs = append(errs, validateTrustedNamespaces(cfg, field.NewPath("calibration", "trustedNamespaces"))...)
	if d := cfg.ReconciliationTimeout.Duration; d < MinReconciliationTimeout || d > MaxReconciliationTimeout {
		errs = append(errs, field.Invalid(field.NewPath("reconciliationTimeout"), d.String(),
			fmt.Sprintf("must be between %s and %s", MinReconciliationTimeout, MaxReconciliationTimeout)))
	}
	if d := cfg.Research.MinInterval.Duration; d < time.Minute || d > 720*time.Hour {
		errs = append(errs, field.Invalid(field.NewPath("research", "minInterval"), d.String(), "must be between 1m and 720h"))
	}
	return errs
}

// MaxTrustedNamespaces bounds calibration.trustedNamespaces: a Run's start reads each one's profile.
const MaxTrustedNamespaces = 32

// validateTrustedNamespaces checks calibration.trustedNamespaces: namespace names, no duplicates,
// at most MaxTrustedNamespaces, and watched ones when the operator watches a list (it reads and
// records profiles only where it reconciles).
func validateTrustedNamespaces(cfg *v1alpha1.OperatorConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	trusted := cfg.Calibration.TrustedNamespaces
	if len(trusted) > MaxTrustedNamespaces {
		errs = append(errs, field.TooMany(p, len(trusted), MaxTrustedNamespaces))
	}
	seen := map[string]bool{}
	for i, ns := range trusted {
		switch {
		case len(validation.IsDNS1123Label(ns)) > 0:
			errs = append(errs, field.Invalid(p.Index(i), ns, "must be a namespace name: "+strings.Join(validation.IsDNS1123Label(ns), "; ")))
		case seen[ns]:
			errs = append(errs, field.Duplicate(p.Index(i), ns))
		case len(cfg.Namespaces) > 0 && !slices.Contains(cfg.Namespaces, ns):
			errs = append(errs, field.Invalid(p.Index(i), ns, "must be one of namespaces (the operator reads profiles only where it reconciles): "+strings.Join(cfg.Namespaces, ", ")))
		}
		seen[ns] = true
	}
	return errs
}

// validateImages checks the images the operator runs: the Planner's, the reporter's and the
// verification's.
func validateImages(cfg *v1alpha1.OperatorConfiguration) field.ErrorList {
	var errs field.ErrorList
	if cfg.Planner.Image == "" {
		errs = append(errs, field.Required(field.NewPath("planner", "image"), "the Planner image that runs the search"))
	}
	if cfg.Reporter.Image == "" {
		errs = append(errs, field.Required(field.NewPath("reporter", "image"),
			"the reporter image (normally the operator's own image): set it, or set the OPERATOR_IMAGE environment variable of the operator"))
	}
	if img := cfg.Verification.Image; img != "" && (len(img) > 512 || strings.ContainsFunc(img, unicode.IsSpace)) {
		errs = append(errs, field.Invalid(field.NewPath("verification", "image"), img, "must be a container image reference without whitespace, at most 512 characters"))
	}
	switch p := cfg.Verification.ImagePullPolicy; p {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("verification", "imagePullPolicy"), p,
			[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	return errs
}

// validateJob checks the search Job's settings.
func validateJob(j *v1alpha1.JobConfig, jp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := *j.ActiveDeadlineSeconds; d < 1 {
		errs = append(errs, field.Invalid(jp.Child("activeDeadlineSeconds"), d, "must be at least 1"))
	}
	if d := *j.BaselineDeadlineSeconds; d < 1 {
		errs = append(errs, field.Invalid(jp.Child("baselineDeadlineSeconds"), d, "must be at least 1"))
	}
	for name, q := range map[string]*resource.Quantity{"outputSizeLimit": j.OutputSizeLimit, "tmpSizeLimit": j.TmpSizeLimit} {
		if q.Sign() <= 0 {
			errs = append(errs, field.Invalid(jp.Child(name), q.String(), "must be positive"))
		}
	}
	if u := *j.RunAsUser; u < 1 {
		errs = append(errs, field.Invalid(jp.Child("runAsUser"), u, "must be a non-root UID (at least 1)"))
	}
	for name, v := range map[string]int64{"runAsGroup": *j.RunAsGroup, "fsGroup": *j.FSGroup} {
		if v < 0 {
			errs = append(errs, field.Invalid(jp.Child(name), v, "must not be negative"))
		}
	}
	if g := *j.StartFailureGraceSeconds; g < 1 {
		errs = append(errs, field.Invalid(jp.Child("startFailureGraceSeconds"), g, "must be at least 1"))
	}
	if ttl := *j.TTLSecondsAfterFinished; ttl < 0 {
		errs = append(errs, field.Invalid(jp.Child("ttlSecondsAfterFinished"), ttl, "must not be negative"))
	}
	if exp := *j.TokenExpirationSeconds; exp < 600 || exp == extendedTokenExpiration {
		errs = append(errs, field.Invalid(jp.Child("tokenExpirationSeconds"), exp,
			"must be at least 600 and not 3607 (the API server extends tokens of that lifetime to a year)"))
	}
	return errs
}

// validateLimits checks the per-namespace limits, the input caps and the workers' concurrency.
func validateLimits(cfg *v1alpha1.OperatorConfiguration) field.ErrorList {
	var errs field.ErrorList
	lp := field.NewPath("limits")
	l := &cfg.Limits
	for name, v := range map[string]int32{"maxActiveRunsPerNamespace": *l.MaxActiveRunsPerNamespace,
		"maxPendingRunsPerNamespace": *l.MaxPendingRunsPerNamespace,
		"maxTrials":                  *l.MaxTrials, "maxParallelism": *l.MaxParallelism} {
		if v < 0 {
			errs = append(errs, field.Invalid(lp.Child(name), v, "must not be negative (0 means unlimited)"))
		}
	}
	if v := *l.MaxPodTemplateOverrideBytes; v < 1024 || v > 1<<20 {
		errs = append(errs, field.Invalid(lp.Child("maxPodTemplateOverrideBytes"), v, "must be between 1024 and 1048576"))
	}
	cp := field.NewPath("concurrency")
	for name, v := range map[string]int32{"requests": *cfg.Concurrency.Requests, "runs": *cfg.Concurrency.Runs} {
		if v < 1 || v > 64 {
			errs = append(errs, field.Invalid(cp.Child(name), v, "must be between 1 and 64"))
		}
	}
	return errs
}

// validateWebhook checks the webhook server's settings and its self-signed certificates.
func validateWebhook(cfg *v1alpha1.OperatorConfiguration, wp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ss := cfg.Webhook.SelfSignedCertificates; ss != nil {
		sp := wp.Child("selfSignedCertificates")
		for name, v := range map[string]string{"secretName": ss.SecretName, "serviceName": ss.ServiceName,
			"mutatingWebhookConfigurationName":   ss.MutatingWebhookConfigurationName,
			"validatingWebhookConfigurationName": ss.ValidatingWebhookConfigurationName} {
			if v == "" {
				errs = append(errs, field.Required(sp.Child(name), ""))
			}
		}
	}
	if p := *cfg.Webhook.Port; p < 1 || p > 65535 {
		errs = append(errs, field.Invalid(wp.Child("port"), p, "must be a TCP port"))
	}
	if q := cfg.Webhook.MaxRequestBodySize; q.Cmp(resource.MustParse("1Mi")) < 0 || q.Cmp(resource.MustParse("64Mi")) > 0 {
		errs = append(errs, field.Invalid(wp.Child("maxRequestBodySize"), q.String(), "must be between 1Mi and 64Mi"))
	}
	if d := cfg.Webhook.RequestReadTimeout.Duration; d < time.Second || d > 30*time.Second {
		errs = append(errs, field.Invalid(wp.Child("requestReadTimeout"), d.String(), "must be between 1s and 30s"))
	}
	return errs
}

// MaxPricePerGPUHour bounds a price per GPU-hour (in any currency, so generously).
const MaxPricePerGPUHour = "100000"

var (
	currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)
	// plainDecimal is a price as written: digits and an optional fraction, no sign or exponent.
	plainDecimal = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,12})?$`)
)

// validatePricing checks the price list: a recognized ISO 4217 currency, at least one price,
// each for a known GPU system, greater than 0 and at most MaxPricePerGPUHour.
func validatePricing(p *v1alpha1.PricingConfig, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	if !currencyCode.MatchString(p.Currency) {
		errs = append(errs, field.Invalid(path.Child("currency"), p.Currency, "must be an ISO 4217 code: three upper-case letters, e.g. USD"))
	} else if _, err := currency.ParseISO(p.Currency); err != nil {
		errs = append(errs, field.Invalid(path.Child("currency"), p.Currency, "is not an ISO 4217 currency code"))
	}
	pp := path.Child("pricePerGPUHour")
	if len(p.PricePerGPUHour) == 0 {
		errs = append(errs, field.Required(pp, "a price per GPU-hour for at least one GPU system"))
	}
	maxPrice, _ := new(big.Rat).SetString(MaxPricePerGPUHour)
	for _, system := range slices.Sorted(maps.Keys(p.PricePerGPUHour)) {
		price := string(p.PricePerGPUHour[system])
		if !aisimulate.KnownSKU(system) {
			errs = append(errs, field.NotSupported(pp.Key(system), system, aisimulate.KnownSKUs()))
		}
		v, ok := new(big.Rat).SetString(price)
		if !plainDecimal.MatchString(price) || !ok {
			errs = append(errs, field.Invalid(pp.Key(system), price, "must be a decimal number without sign or exponent, e.g. 2.5"))
		} else if v.Sign() <= 0 || v.Cmp(maxPrice) > 0 {
			errs = append(errs, field.Invalid(pp.Key(system), price, "must be greater than 0 and at most "+MaxPricePerGPUHour))
		}
	}
	return errs
}

// FormatRuntimeImages encodes images as the reporter's --runtime-images (DGDR_RUNTIME_IMAGES):
// a JSON object of {image, engineVersion} by backend, keys sorted.
func FormatRuntimeImages(images map[string]v1alpha1.RuntimeImage) string {
	data, err := json.Marshal(images)
	if err != nil {
		panic(err) // strings only
	}
	return string(data)
}

// ParseRuntimeImages decodes the reporter's --runtime-images: FormatRuntimeImages's JSON object,
// or "backend=image,..." (images alone, as operators before engine versions wrote it).
func ParseRuntimeImages(s string) (map[string]v1alpha1.RuntimeImage, error) {
	out := map[string]v1alpha1.RuntimeImage{}
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
		dec := json.NewDecoder(strings.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out); err != nil {
			return nil, fmt.Errorf("runtime images: %w", err)
		}
	} else {
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			k, v, ok := strings.Cut(part, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || v == "" {
				return nil, fmt.Errorf("runtime images: %q is not backend=image", part)
			}
			out[k] = v1alpha1.RuntimeImage{Image: v}
		}
	}
	for k, img := range out {
		if _, known := output.LookupBackend(k); !known {
			return nil, fmt.Errorf("runtime images: unknown backend %q", k)
		}
		if img.Image == "" {
			return nil, fmt.Errorf("runtime images: %s has no image", k)
		}
	}
	return out, nil
}
