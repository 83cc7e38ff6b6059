// Package jobcontract is the contract between the search Job the Run controller builds and the
// reporter that runs inside it: container names, paths, environment variables, flags and what the
// search pod may do (ReporterRules). Both sides import them so that they cannot drift.
package jobcontract

// Container names of the search pod.
const (
	// SearchContainer runs the configured Planner image (aisimulate recommend).
	SearchContainer = "search"
	// ReporterContainer runs `dgdr-operator report` with the reporter image.
	ReporterContainer = "reporter"
)

// Volumes and paths.
const (
	// InputVolume is the Run's input ConfigMap.
	InputVolume = "input"
	// InputDir is where the input ConfigMap is mounted.
	InputDir = "/etc/dgdr/input"
	// InputYAMLKey holds the effective input as YAML (what the search reads).
	InputYAMLKey = "input.yaml"
	// InputJSONKey holds the canonical JSON (what status.aisimulate.inputHash hashes).
	InputJSONKey = "input.json"
	// OutputVolume is the emptyDir shared by the search and the reporter.
	OutputVolume = "output"
	// OutputMountDir is where the output emptyDir is mounted in both containers.
	OutputMountDir = "/var/run/dgdr/output"
	// ResultDir is AISimulate's --output-dir: a subdirectory, because AISimulate wants an
	// empty or absent directory.
	ResultDir = OutputMountDir + "/result"
	// TokenVolume is the projected service-account token mounted only into the reporter; the
	// pod sets automountServiceAccountToken: false so the search container gets no token.
	TokenVolume = "reporter-token"
	// TokenDir is the standard in-cluster credentials directory.
	TokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// Environment variables of the reporter container.
const (
	EnvRunName      = "DGDR_RUN_NAME"
	EnvRunNamespace = "DGDR_RUN_NAMESPACE" // downward API: metadata.namespace
	EnvPodName      = "DGDR_POD_NAME"      // downward API: metadata.name
	EnvOutputDir    = "DGDR_OUTPUT_DIR"
	// EnvRuntimeImages is "backend=image,backend=image" from the operator configuration, used
	// to render candidate DynamoGraphDeployments.
	EnvRuntimeImages = "DGDR_RUNTIME_IMAGES"
)

// ReporterServiceAccount is the per-namespace service account (and Role and RoleBinding name)
// the operator manages for reporters.
const ReporterServiceAccount = "dgdr-reporter"

// ReporterArgs are the reporter container's arguments (the command is the reporter image's
// entrypoint, dgdr-operator).
var ReporterArgs = []string{"report"}

// SearchArgs are the operator's arguments to the search command; configured args follow.
var SearchArgs = []string{"--config", InputDir + "/" + InputYAMLKey, "--output-dir", ResultDir, "--format", "json"}
