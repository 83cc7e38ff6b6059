// Package jobcontract is the contract between the Jobs the Run controller builds (a Run's search
// Job and a re-search's baseline Job) and the reporter that runs inside them: container names,
// paths, environment variables, flags and what their pods may do. Both sides import them so that
// they cannot drift.
package jobcontract

import "k8s.io/apimachinery/pkg/types"

// Container names of the search and baseline pods. Both pods are: the init container
// InputContainer, the reporter as a sidecar (ReporterContainer, an init container with
// restartPolicy Always), then SearchContainer (search pod) or BaselineContainer (baseline pod)
// beside PublicationContainer.
const (
	// SearchContainer runs the configured Planner image (aisimulate recommend).
	SearchContainer = "search"
	// ReporterContainer runs `dgdr-operator report` with the reporter image, as a restartable
	// init container: the kubelet starts it again whenever it exits while the pod runs, and it
	// publishes (again, idempotently) from the output volume. It writes OutcomeFile once it
	// has published.
	ReporterContainer = "reporter"
	// InputContainer is the init container (reporter image, `dgdr-operator report
	// --write-input`) that writes the Run's recorded input into InputDir before the search
	// starts.
	InputContainer = "input"
	// BaselineContainer runs the configured Planner image's predict command (aisimulate
	// predict) on the deployed Candidate's parameters under a re-search's traffic, in the
	// re-search's baseline Job.
	BaselineContainer = "baseline"
	// PublicationContainer (reporter image, PublicationArgs) keeps the pod running until the
	// reporter has written OutcomeFile, and exits with the outcome's exit code: the kubelet
	// stops a sidecar once the main containers have ended and restarts it only while they run,
	// so without it a reporter killed after the search ended would not publish again, and the
	// Job would complete whether the result was published or not.
	PublicationContainer = "publication"
)

// Volumes and paths.
const (
	// InputVolume is the emptyDir the input init container fills from the Run's
	// status.aisimulate.input. The input comes from the Run itself, not from a separate object
	// (a per-Run ConfigMap was one more API write per request, and any object planted under its
	// name would have been read as the input).
	InputVolume = "input"
	// InputDir is where the input volume is mounted (read-only in the search container).
	InputDir = "/etc/dgdr/input"
	// InputFile is the effective input as YAML inside InputDir (what the search reads), rendered
	// from the canonical JSON whose hash is status.aisimulate.inputHash.
	InputFile = "input.yaml"
	// TraceWindowFile is the name of the trace window the input init container cuts out of a
	// capture (--trace-window-out): one gzip JSONL Dynamo request trace, ordered by arrival.
	TraceWindowFile = "window.jsonl.gz"
	// CaptureMountDir is where a re-search's input container mounts the capture claim,
	// read-only, to cut the window from it.
	CaptureMountDir = "/var/run/dgdr/capture"
	// BaselineInputFile is a re-search's baseline prediction input as YAML inside InputDir,
	// rendered from the canonical JSON whose hash is status.aisimulate.baseline.inputHash.
	BaselineInputFile = "baseline.yaml"
	// OutputVolume is the emptyDir shared by the search and the reporter.
	OutputVolume = "output"
	// OutputMountDir is where the output emptyDir is mounted in both containers.
	OutputMountDir = "/var/run/dgdr/output"
	// ResultDir is AISimulate's --output-dir: a subdirectory, because AISimulate wants an
	// empty or absent directory.
	ResultDir = OutputMountDir + "/result"
	// BaselineOutputDir is the baseline's --output-dir in the baseline pod's output volume.
	BaselineOutputDir = OutputMountDir + "/baseline"
	// PublicationVolume is the emptyDir of OutcomeFile, mounted only in the reporter and the
	// publication container: the search cannot write an outcome.
	PublicationVolume = "publication"
	// PublicationDir is where PublicationVolume is mounted.
	PublicationDir = "/var/run/dgdr/publication"
	// OutcomeFile is where the reporter writes how its publication ended (exit code and
	// message, JSON), which the publication container waits for.
	OutcomeFile = PublicationDir + "/outcome.json"
	// TmpVolume is the writable emptyDir mounted at TmpDir in the search and baseline
	// containers, whose root file systems are read-only.
	TmpVolume = "tmp"
	// TmpDir is where TmpVolume is mounted.
	TmpDir = "/tmp"
	// SearchTmpDir is where TmpVolume is mounted, read-only, in the reporter container: the real
	// AISimulate writes its live ledger there ($TMPDIR/aisimulate-monitor-XXXX/events.jsonl) and
	// copies it into the output directory only when the search ends (docs/design/results.md, "While
	// the search runs").
	SearchTmpDir = "/var/run/dgdr/search-tmp"
	// TokenVolume is the projected service-account token mounted only into the reporter and the
	// input init container; the pod sets automountServiceAccountToken: false so the search
	// container gets no token.
	TokenVolume = "reporter-token"
	// TokenDir is the standard in-cluster credentials directory.
	TokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// TraceVolume holds the trace of a trace workload, mounted read-only at
	// aisimulate.TraceMountDir in the search and baseline containers: the ConfigMap or claim the
	// request names, or, for a re-search, an emptyDir the input container cuts the window into
	// (each pod cuts its own).
	TraceVolume = "trace"
	// CaptureVolume is a re-search's capture claim, mounted at CaptureMountDir in the input
	// container only.
	CaptureVolume = "capture"
)

// The label that marks what the operator creates (Jobs, search identities, the reporter Role).
// The operator caches only objects carrying it, and its fence lets it delete only those.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "dgdr-operator"
)

// CalibrationConfigMap is the name of a namespace's calibration profile (internal/calibration),
// the one ConfigMap the operator writes; the fence admits its writes only of that name, labelled
// LabelManagedBy=ManagedByValue.
const CalibrationConfigMap = "dgdr-operator-calibration"

// Environment variables of the reporter and input containers.
const (
	EnvRunName      = "DGDR_RUN_NAME"
	EnvRunNamespace = "DGDR_RUN_NAMESPACE" // downward API: metadata.namespace
	EnvPodName      = "DGDR_POD_NAME"      // downward API: metadata.name
	EnvOutputDir    = "DGDR_OUTPUT_DIR"
	// EnvSearchTmpDir is where the reporter finds the search's /tmp (SearchTmpDir).
	EnvSearchTmpDir = "DGDR_SEARCH_TMP_DIR"
	// EnvInputDir is where the input init container writes InputFile.
	EnvInputDir = "DGDR_INPUT_DIR"
	// EnvInputHash is the hash of the Run's effective input as the operator recorded it when it
	// created the Job (downward API: the pod's v1beta2.AnnotationInputHash annotation). The input
	// init container refuses a recorded input that does not hash to it.
	EnvInputHash = "DGDR_INPUT_HASH"
	// EnvBaselineInputHash is the hash of the baseline input the operator recorded (downward
	// API: the pod's v1beta2.AnnotationBaselineInputHash annotation), set only in the baseline
	// pod, instead of EnvInputHash. The input init container refuses a baseline input that does
	// not hash to it.
	EnvBaselineInputHash = "DGDR_BASELINE_INPUT_HASH"
	// EnvRuntimeImages is the operator configuration's runtimeImages as a JSON object
	// {backend: {image, engineVersion}} (config.FormatRuntimeImages), used
	// to render candidate DynamoGraphDeployments.
	EnvRuntimeImages = "DGDR_RUNTIME_IMAGES"
	// EnvPlannerImage is the operator configuration's Planner image, used to render the Planner
	// component (spec.deployment.planner.enabled).
	EnvPlannerImage = "DGDR_PLANNER_IMAGE"
)

// ReporterRole is the per-namespace Role holding ReporterRules; each Run's search identity is
// bound to it by a RoleBinding of its own.
const ReporterRole = "dgdr-reporter"

// SearchIdentityPrefix starts the name of every Run's search ServiceAccount and RoleBinding; the
// rest of the name is the Run's UID. The search-identity admission policy (SearchIdentityPolicy)
// reads the UID back from the requesting user name, so the name is exactly prefix + UID: a UID
// is 36 characters, so the name always fits, and a UID is unique in the cluster, so no Run can
// be named into another's identity.
const SearchIdentityPrefix = "dgdr-search-"

// SearchIdentity is the name of a Run's search ServiceAccount and RoleBinding.
func SearchIdentity(runUID types.UID) string { return SearchIdentityPrefix + string(runUID) }

// ReporterArgs are the reporter container's arguments in the search pod (the command is the
// reporter image's entrypoint, dgdr-operator).
var ReporterArgs = []string{"report", "--outcome-file", OutcomeFile}

// BaselineReporterArgs are the reporter container's arguments in the baseline pod: it publishes
// the baseline's prediction as the Run's status.baseline.
var BaselineReporterArgs = []string{"report", "--baseline", "--outcome-file", OutcomeFile}

// PublicationArgs are the publication container's arguments (the reporter image's entrypoint).
var PublicationArgs = []string{"report", "--await-outcome", OutcomeFile}

// InputArgs are the input init container's arguments (same image and entrypoint as the
// reporter): read the Run, check the recorded input against its hash, write InputFile, exit.
var InputArgs = []string{"report", "--write-input"}

// SearchArgs are the operator's arguments to the search command; configured args follow.
var SearchArgs = []string{"--config", InputDir + "/" + InputFile, "--output-dir", ResultDir, "--format", "json"}

// BaselineArgs are the operator's arguments to the predict command of the baseline container.
// The search's configured args are not appended: they are recommend's flags.
var BaselineArgs = []string{"--config", InputDir + "/" + BaselineInputFile, "--output-dir", BaselineOutputDir, "--format", "json"}
