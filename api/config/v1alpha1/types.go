// Package v1alpha1 is the versioned configuration file of dgdr-operator
// (apiVersion: config.dgdr.nvidia.com/v1alpha1, kind: OperatorConfiguration).
//
// The file is decoded strictly: unknown fields are errors. Helm values map onto this file, not
// onto flags; flags are only for process-level things (the file path, logging).
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=config.dgdr.nvidia.com
package v1alpha1

import (
	"bytes"
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, version and kind of the configuration file.
const (
	GroupVersion = "config.dgdr.nvidia.com/v1alpha1"
	Kind         = "OperatorConfiguration"
)

// OperatorConfiguration configures dgdr-operator. The operator and its configured Planner image
// form one tested release bundle: nothing in a request can choose the search image.
//
// +kubebuilder:object:root=true
type OperatorConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// planner configures the search container of every search Job.
	// +required
	Planner PlannerConfig `json:"planner"`

	// reporter configures the reporter container of every search Job.
	// +optional
	Reporter ReporterConfig `json:"reporter,omitempty"`

	// job configures the search Job.
	// +optional
	Job JobConfig `json:"job,omitempty"`

	// verification configures the Job that measures a deployed candidate
	// (spec.deployment.verification of a request).
	// +optional
	Verification VerificationConfig `json:"verification,omitempty"`

	// defaults are applied by admission.
	// +optional
	Defaults DefaultsConfig `json:"defaults,omitempty"`

	// runRetention is how many terminal Runs are kept per request (newest first); older Runs
	// are deleted with their Jobs and Candidates. Defaults to 5. Minimum 1, maximum 100.
	// +optional
	RunRetention *int32 `json:"runRetention,omitempty"`

	// limits bound what requests may consume.
	// +optional
	Limits LimitsConfig `json:"limits,omitempty"`

	// autoApply says whether requests may ask the operator to deploy their best candidate
	// (spec.deployment.autoApply). Off by default: autoApply makes the operator create pods for
	// the request's author (docs/operate/security.md).
	// +optional
	AutoApply AutoApplyConfig `json:"autoApply,omitempty"`

	// models says which model names requests may use.
	// +optional
	Models ModelsConfig `json:"models,omitempty"`

	// runtimeImages are the Dynamo runtime images per backend (vllm, sglang, trtllm) used when
	// rendering candidate DynamoGraphDeployments, each with the version of the engine it runs
	// ({image, engineVersion}; a plain string is the image alone, its engine version then
	// unknown unless it is the default image). Unset, they are the runtime images of the
	// Dynamo release this operator is tested with and their engine versions
	// (docs/operate/compatibility.md).
	// +optional
	RuntimeImages map[string]RuntimeImage `json:"runtimeImages,omitempty"`

	// concurrency sets how many objects each controller reconciles at once.
	// +optional
	Concurrency ConcurrencyConfig `json:"concurrency,omitempty"`

	// reconciliationTimeout bounds every reconcile of every controller: its context ends after
	// this long, so an API call that never returns fails the reconcile (which is retried with
	// backoff) instead of holding one of the controller's workers for good. Defaults to 2m.
	// Minimum 10s, maximum 1h.
	// +optional
	ReconciliationTimeout *metav1.Duration `json:"reconciliationTimeout,omitempty"`

	// featureGates turns feature gates on or off, e.g. {DGDRV1Beta2: true}.
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`

	// namespaces restricts the operator to these namespaces. Empty means all namespaces.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// leaderElection configures leader election.
	// +optional
	LeaderElection LeaderElectionConfig `json:"leaderElection,omitempty"`

	// metrics configures the Prometheus metrics endpoint.
	// +optional
	Metrics MetricsConfig `json:"metrics,omitempty"`

	// health configures the health and readiness probes endpoint.
	// +optional
	Health HealthConfig `json:"health,omitempty"`

	// webhook configures the admission webhook server.
	// +optional
	Webhook WebhookConfig `json:"webhook,omitempty"`

	// pricing is the price list cost figures are computed from: each Candidate's
	// status.metrics.cost and the limit of objective.maxCostPerHour. Without it no cost is
	// computed and requests that set maxCostPerHour are refused.
	// +optional
	Pricing *PricingConfig `json:"pricing,omitempty"`

	// calibration configures the calibration profiles, the corrections learned from verified
	// deployments that new searches apply to their Candidates' predictions: one profile per
	// namespace, and the cluster profile of the namespaces trusted here
	// (docs/design/candidates.md, "Calibration").
	// +optional
	Calibration CalibrationConfig `json:"calibration,omitzero"`

	// research bounds the scheduled re-searches of spec.research.
	// +optional
	Research ResearchConfig `json:"research,omitzero"`

	// crds makes the operator, when set, install and upgrade its CRDs at startup by server-side
	// apply, merged over a DynamoGraphDeploymentRequest CRD another installer (a Dynamo platform)
	// created: v1beta1 stays the storage version, v1beta2 and the conversion webhook are added
	// with the DGDRV1Beta2 gate on (and removed with it off, unless stored), the Run and
	// Candidate CRDs are installed with the gate on. A version is never removed once stored and
	// no CRD is ever deleted (docs/operate/coexistence.md).
	// +optional
	CRDs *CRDInstallConfig `json:"crds,omitempty"`
}

// ResearchConfig bounds scheduled re-searches.
type ResearchConfig struct {
	// minInterval is the shortest spec.research.intervalMinutes admission accepts. Defaults to 1h;
	// at least 1m. A shorter minimum is for test clusters, where a re-search every hour is too
	// slow to watch.
	// +optional
	MinInterval *metav1.Duration `json:"minInterval,omitempty"`
}

// CalibrationConfig says which calibration profiles a Run uses and when their corrections are
// used.
type CalibrationConfig struct {
	// trustedNamespaces lists the namespaces whose profiles (each the ConfigMap
	// dgdr-operator-calibration of its namespace) make up the cluster profile, which every Run
	// uses for a key and metric its own namespace's profile has fewer than minObservations
	// observations of. List only namespaces whose tenants you trust with every namespace's
	// predictions: a tenant decides what its own verifications measure. Defaults to none: each
	// namespace's Runs use its own profile only. At most 32 namespace names, without duplicates;
	// with namespaces set, each must be one of them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	TrustedNamespaces []string `json:"trustedNamespaces,omitempty"`

	// minObservations is the number of observations a correction needs before searches use it.
	// Defaults to 3. Minimum 1, maximum 100.
	// +optional
	MinObservations *int32 `json:"minObservations,omitempty"`
}

// PricingConfig is a price list of GPU-hours in one currency: one currency for the whole list,
// so that the costs of candidates on different GPU systems compare directly.
type PricingConfig struct {
	// currency is the ISO 4217 code of every price, three upper-case letters (USD, EUR, JPY).
	// +required
	Currency string `json:"currency"`

	// pricePerGPUHour maps an AISimulate GPU system id (h200_sxm, h100_sxm, ...) to the price
	// of one GPU for one hour, in currency: a plain decimal (no exponent) greater than 0 and at
	// most 100000, written as a number or a string (2.5, "3.10").
	// +required
	PricePerGPUHour map[string]Decimal `json:"pricePerGPUHour"`
}

// RuntimeImage is a Dynamo runtime image and the version of the inference engine it runs.
type RuntimeImage struct {
	// image is the image reference. Required.
	// +required
	Image string `json:"image"`

	// engineVersion is the version of the engine the image runs (vLLM, SGLang or TensorRT-LLM,
	// as its backend): every Candidate records it and compares it with the engine version of
	// the performance data its prediction used (the VersionSkew condition). Empty: unknown. At
	// most 64 characters.
	// +optional
	EngineVersion string `json:"engineVersion,omitempty"`
}

// UnmarshalJSON takes an object {image, engineVersion} (strictly: another key is an error), or
// a JSON string, the image alone.
func (r *RuntimeImage) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		*r = RuntimeImage{}
		return json.Unmarshal(data, &r.Image)
	}
	type plain RuntimeImage // without this method
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*r = RuntimeImage(p)
	return nil
}

// Decimal is a decimal number as written in the file, as a JSON number or a JSON string. Its
// form is checked by validation (with the field's path), not by decoding.
type Decimal string

// UnmarshalJSON takes the text of a JSON number, or the content of a JSON string.
func (d *Decimal) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*d = Decimal(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(data, &n); err != nil || n == "" {
		return &json.UnmarshalTypeError{Value: string(data), Type: reflect.TypeFor[Decimal]()}
	}
	*d = Decimal(n)
	return nil
}

// CRDInstallConfig says where the DynamoGraphDeploymentRequest CRD's conversion webhook is.
type CRDInstallConfig struct {
	// conversionService is the Service in front of the operator's webhook server (port 443,
	// path /convert). Its CA bundle is injected by selfSignedCertificates or by cert-manager.
	// +required
	ConversionService ServiceReference `json:"conversionService"`

	// annotations are added to the DynamoGraphDeploymentRequest CRD, e.g.
	// cert-manager.io/inject-ca-from for cert-manager's CA injection.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ServiceReference names a Service.
type ServiceReference struct {
	// name of the Service.
	// +required
	Name string `json:"name"`
	// namespace of the Service. Defaults to the POD_NAMESPACE environment variable.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// PlannerConfig is the search container. Its image is the only source of the search image.
type PlannerConfig struct {
	// image is the Dynamo Planner image that contains AISimulate. Required.
	// +required
	Image string `json:"image"`

	// command runs the search. Defaults to ["aisimulate", "recommend"].
	// +optional
	Command []string `json:"command,omitempty"`

	// predictCommand evaluates one fixed configuration: a re-search's baseline, the deployed
	// candidate under the re-search's traffic. Defaults to ["aisimulate", "predict"]; it gets
	// --config <input> --output-dir <dir> --format json.
	// +optional
	PredictCommand []string `json:"predictCommand,omitempty"`

	// args are appended after the operator's own arguments
	// (--config <input> --output-dir <dir> --format json).
	// +optional
	Args []string `json:"args,omitempty"`

	// imagePullPolicy of the search container. Defaults to IfNotPresent.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// resources of the search container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// VerificationConfig is the container of the verification Job.
type VerificationConfig struct {
	// image contains NVIDIA AIPerf (the aiperf command) and python3. Unset (the default), no
	// verification runs: a request asking for one gets status.verification phase Failed,
	// reason NotConfigured. When set, a container image reference without whitespace, at
	// most 512 characters.
	// +optional
	Image string `json:"image,omitempty"`

	// imagePullPolicy of the verification container. Defaults to IfNotPresent.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// resources of the verification container. Defaults, when it sets neither requests nor
	// limits, to requests cpu 1 and memory 1Gi and limits cpu 4 and memory 4Gi: a request
	// chooses the load (up to 10,000 concurrent requests), so the pod is never BestEffort.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// nodeSelector of the verification pod. The search pod's job.nodeSelector does not apply
	// to it: searches and verifications may belong on different nodes.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the verification pod (job.tolerations does not apply).
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// priorityClassName of the verification pod (job.priorityClassName does not apply).
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// ReporterConfig is the reporter container.
type ReporterConfig struct {
	// image of the reporter. Defaults to the operator's own image (OPERATOR_IMAGE environment
	// variable of the operator process).
	// +optional
	Image string `json:"image,omitempty"`

	// resources of the reporter container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// JobConfig shapes the search Job.
type JobConfig struct {
	// activeDeadlineSeconds bounds a search. Defaults to 21600 (6 h).
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// baselineDeadlineSeconds bounds a re-search's baseline Job (one prediction of the deployed
	// candidate under the window): a baseline that has not published by then ends with
	// status.baseline.error, and the Run, whose search succeeded, ends without waiting longer.
	// Defaults to 1800 (30 min); at least 1.
	// +optional
	BaselineDeadlineSeconds *int64 `json:"baselineDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished lets the Job controller delete finished Jobs and their pods this
	// many seconds after they end (the Run keeps everything the search produced). Defaults to
	// 3600; 0 deletes them at once.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// tokenExpirationSeconds is the lifetime of the search pod's projected ServiceAccount token,
	// which only the input init container and the reporter mount (the kubelet renews it at 80% of
	// its life; the reporter rereads it). Defaults to 600; at least 600; 3607 is refused because
	// the API server extends tokens of exactly that lifetime to a year.
	// +optional
	TokenExpirationSeconds *int64 `json:"tokenExpirationSeconds,omitempty"`

	// tokenAudience is the audience of that token. Empty (the default) is the API server's own
	// audience; set it to another value only if the API server accepts it (--api-audiences), so
	// the token is refused everywhere else.
	// +optional
	TokenAudience string `json:"tokenAudience,omitempty"`

	// nodeSelector of the search pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the search pod.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// priorityClassName of the search pod.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// outputSizeLimit is the sizeLimit of the output emptyDir the search writes its result into
	// (the kubelet evicts a pod whose volume grows beyond it). Defaults to 256Mi. The reporter
	// also reads each output file through a fixed cap (docs/operate/security.md).
	// +optional
	OutputSizeLimit *resource.Quantity `json:"outputSizeLimit,omitempty"`

	// tmpSizeLimit is the sizeLimit of the writable /tmp emptyDir of the search container (its
	// root file system is read-only). Defaults to 1Gi.
	// +optional
	TmpSizeLimit *resource.Quantity `json:"tmpSizeLimit,omitempty"`

	// runAsUser is the UID every container of the search pod runs as (pod securityContext).
	// Defaults to 65532. Must not be 0.
	// +optional
	RunAsUser *int64 `json:"runAsUser,omitempty"`

	// runAsGroup is the primary GID of the search pod's containers. Defaults to 65532.
	// +optional
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`

	// fsGroup owns the search pod's volumes, so the search and the reporter can share the output
	// volume. Defaults to 65532.
	// +optional
	FSGroup *int64 `json:"fsGroup,omitempty"`

	// startFailureGraceSeconds is how long a container of the search pod may stay unable to
	// start (ErrImagePull, ImagePullBackOff, InvalidImageName, CreateContainerConfigError,
	// CreateContainerError, RunContainerError, CrashLoopBackOff) before the Run ends with reason
	// SearchPodFailedToStart and its Job is deleted. A failed init container or a container that
	// could not be started ends the Run at once. Defaults to 120.
	// +optional
	StartFailureGraceSeconds *int32 `json:"startFailureGraceSeconds,omitempty"`
}

// DefaultsConfig are admission defaults.
//
// A request that names no GPU SKU gets the one GPU product the cluster's Nodes agree on
// (gpuDiscovery), else gpuSKU; when neither gives a SKU, admission refuses it at
// spec.hardware.gpu.sku. Nothing else is assumed (docs/operate/operator.md).
type DefaultsConfig struct {
	// gpuSKU is written into requests that name no GPU SKU when discovery is off, finds no
	// GPU Nodes, or finds several products of which this is one. Unset (the default) means no
	// default: such a request is refused.
	// +optional
	GPUSKU string `json:"gpuSKU,omitempty"`

	// gpuDiscovery reads the nvidia.com/gpu.product label of the cluster's Nodes: a request that
	// names no SKU gets the product's AISimulate system when all labelled Nodes agree on one,
	// gpuSKU when they do not and it is one of theirs, and is refused, naming the products,
	// otherwise or when a product has no AISimulate system. Defaults to true.
	// +optional
	GPUDiscovery *bool `json:"gpuDiscovery,omitempty"`
}

// AutoApplyConfig governs spec.deployment.autoApply.
type AutoApplyConfig struct {
	// enabled lets requests set spec.deployment.autoApply (and model.remoteCode AlwaysTrust, which
	// only matters once something deploys). When false (the default), admission refuses a request
	// that sets autoApply: true, at spec.deployment.autoApply. When true, the requesting user
	// must still hold create and update on dynamographdeployments and create on pods in the
	// namespace (checked by SubjectAccessReview at admission): autoApply is equivalent to
	// creating pods.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// ModelsConfig governs spec.model.name.
type ModelsConfig struct {
	// allowLocalPaths lets spec.model.name be an absolute, clean local path (a model directory
	// in the search image and the runtime images, e.g. /models/llama) besides a Hugging Face id.
	// Defaults to false: only Hugging Face ids (org/name) are admitted.
	// +optional
	AllowLocalPaths bool `json:"allowLocalPaths,omitempty"`
}

// LimitsConfig bounds what requests may consume.
type LimitsConfig struct {
	// maxActiveRunsPerNamespace is the number of searches that may run at once in a namespace;
	// further Runs wait. 0 means unlimited. Defaults to 4.
	// +optional
	MaxActiveRunsPerNamespace *int32 `json:"maxActiveRunsPerNamespace,omitempty"`

	// maxPendingRunsPerNamespace caps the Runs that may wait for a slot in a namespace. A new
	// Run that finds this many Runs already waiting ahead of it is not queued: it ends at once
	// with Completed=True, reason PendingLimitExceeded (edit the request, creating a new
	// generation, once the backlog has drained). Runs with a Kueue queue label are Kueue's and
	// do not count. 0 means unlimited. Defaults to 1000.
	// +optional
	MaxPendingRunsPerNamespace *int32 `json:"maxPendingRunsPerNamespace,omitempty"`

	// maxTrials caps optimizer.max_trials in the effective input. 0 means no cap. Defaults to 2000.
	// +optional
	MaxTrials *int32 `json:"maxTrials,omitempty"`

	// maxParallelism caps optimizer.parallelism in the effective input. 0 means no cap.
	// Defaults to 64.
	// +optional
	MaxParallelism *int32 `json:"maxParallelism,omitempty"`

	// maxPodTemplateOverrideBytes caps the size of each of spec.deployment.podTemplateOverrides
	// (its JSON encoding), checked before any strategic merge patching. Defaults to 32768
	// (32 KiB); minimum 1024, maximum 1048576.
	// +optional
	MaxPodTemplateOverrideBytes *int32 `json:"maxPodTemplateOverrideBytes,omitempty"`
}

// ConcurrencyConfig sets the number of concurrent reconciles per controller. Different objects
// are reconciled in parallel; one object is never reconciled twice at the same time.
type ConcurrencyConfig struct {
	// requests is the number of DynamoGraphDeploymentRequests reconciled at once. Defaults to 4.
	// Minimum 1, maximum 64.
	// +optional
	Requests *int32 `json:"requests,omitempty"`
	// runs is the number of DynamoGraphDeploymentRuns reconciled at once. Defaults to 4.
	// Minimum 1, maximum 64.
	// +optional
	Runs *int32 `json:"runs,omitempty"`
}

// LeaderElectionConfig configures leader election.
type LeaderElectionConfig struct {
	// enabled turns leader election on. Defaults to false; enable it for more than one replica.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// namespace of the lease. Defaults to the operator's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// leaseName is the name of the Lease. Defaults to dgdr-operator.nvidia.com.
	// +optional
	LeaseName string `json:"leaseName,omitempty"`
	// leaseDuration is how long a lease is valid. Defaults to 15s.
	// +optional
	LeaseDuration *metav1.Duration `json:"leaseDuration,omitempty"`
	// renewDeadline is how long the leader keeps trying to renew. Defaults to 10s.
	// +optional
	RenewDeadline *metav1.Duration `json:"renewDeadline,omitempty"`
	// retryPeriod is the time between attempts. Defaults to 2s.
	// +optional
	RetryPeriod *metav1.Duration `json:"retryPeriod,omitempty"`
}

// MetricsConfig configures the metrics endpoint. It is served over HTTPS only, to callers the
// API server authenticates (TokenReview) and authorizes for get on the non-resource URL
// /metrics (SubjectAccessReview); anyone else gets 401 or 403.
type MetricsConfig struct {
	// bindAddress of the metrics endpoint. Defaults to ":8080"; "0" disables it.
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`

	// certDir holds tls.crt and tls.key, the metrics endpoint's serving certificate (reloaded
	// when they change). Empty (the default), or without those files, the endpoint serves a
	// self-signed certificate generated at start.
	// +optional
	CertDir string `json:"certDir,omitempty"`
}

// HealthConfig configures the probes endpoint.
type HealthConfig struct {
	// bindAddress of /healthz and /readyz. Defaults to ":8081".
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`
}

// WebhookConfig configures the admission webhook server.
type WebhookConfig struct {
	// port of the webhook server. Defaults to 9443.
	// +optional
	Port *int32 `json:"port,omitempty"`
	// host the webhook server binds. Defaults to all addresses.
	// +optional
	Host string `json:"host,omitempty"`
	// certDir holds tls.crt and tls.key. Defaults to /tmp/k8s-webhook-server/serving-certs.
	// +optional
	CertDir string `json:"certDir,omitempty"`

	// maxRequestBodySize is the largest request body the webhook server reads, on every path it
	// serves (the admission webhooks and the CRD conversion webhook /convert). A larger body is
	// answered 413 Request Entity Too Large after at most this many bytes plus one were read; the
	// rest is never read. Defaults to 3Mi: an object is at most about 1.5 MiB in etcd and an
	// admission review carries the old and the new object. Minimum 1Mi, maximum 64Mi.
	// +optional
	MaxRequestBodySize *resource.Quantity `json:"maxRequestBodySize,omitempty"`

	// requestReadTimeout bounds the time the webhook server waits for a request body, counted
	// from the end of its headers (which controller-runtime bounds to 32 s). A body still
	// arriving then is answered 408 Request Timeout and its connection closed. Defaults to 10s.
	// Minimum 1s, maximum 30s (the API server's own webhook timeouts are at most 30 s).
	// +optional
	RequestReadTimeout *metav1.Duration `json:"requestReadTimeout,omitempty"`

	// selfSignedCertificates makes the operator, when set, create and rotate its own CA and
	// serving certificate (kept in a Secret), write them to certDir, and inject the CA bundle
	// into its webhook configurations. Leave it unset when cert-manager (or anything else)
	// provides the certificate in certDir and injects the CA.
	// +optional
	SelfSignedCertificates *SelfSignedCertificatesConfig `json:"selfSignedCertificates,omitempty"`
}

// SelfSignedCertificatesConfig names what the operator's own certificate management touches.
type SelfSignedCertificatesConfig struct {
	// secretName is the Secret holding the CA and serving certificate.
	// +required
	SecretName string `json:"secretName"`
	// namespace of the Secret and the webhook Service. Defaults to the POD_NAMESPACE environment
	// variable of the operator.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// serviceName is the webhook Service; the certificate is valid for <serviceName>.<namespace>.svc.
	// +required
	ServiceName string `json:"serviceName"`
	// mutatingWebhookConfigurationName receives the CA bundle.
	// +required
	MutatingWebhookConfigurationName string `json:"mutatingWebhookConfigurationName"`
	// validatingWebhookConfigurationName receives the CA bundle.
	// +required
	ValidatingWebhookConfigurationName string `json:"validatingWebhookConfigurationName"`
}
