package jobcontract

import "k8s.io/apimachinery/pkg/types"

// The Run's artifacts: the reporter keeps the search's raw output in a ConfigMap controlled by
// the Run (docs/design/results.md, "Artifacts"), because the output emptyDir goes away with the pod.
const (
	// ArtifactsPrefix starts the name of a Run's artifacts ConfigMap; the Run's UID follows, so
	// nobody can create the object under that name before the Run exists, and the search
	// identity's admission policy can check the name from the identity alone.
	ArtifactsPrefix = "dgdr-artifacts-"
	// ArtifactRecommendationKey and ArtifactEventsKey are the binaryData keys: gzip of
	// recommendation.json and of execution-events.jsonl.
	ArtifactRecommendationKey = "recommendation.json.gz"
	ArtifactEventsKey         = "execution-events.jsonl.gz"
	// AnnotationArtifactsTruncated lists (comma-separated) the files that were cut to fit
	// MaxArtifactsBytes.
	AnnotationArtifactsTruncated = "nvidia.com/dgdr-artifacts-truncated"
	// MaxArtifactsBytes caps the compressed bytes of all files in the artifacts ConfigMap. The
	// API server refuses a ConfigMap whose data and binaryData hold more than 1 MiB
	// (corev1.MaxSecretSize, the same limit as Secrets, chosen to keep etcd objects small);
	// 24 KiB are left for keys, metadata and the truncation markers. recommendation.json gets
	// three quarters of the cap and the events ledger the rest; the real AISimulate's output
	// compresses to about 3.3 KB per evaluated candidate (both files), so searches of more than
	// about 300 evaluated candidates are cut at a line break, with a marker.
	MaxArtifactsBytes = 1<<20 - 24<<10
)

// ArtifactsName is the name of a Run's artifacts ConfigMap.
func ArtifactsName(runUID types.UID) string { return ArtifactsPrefix + string(runUID) }
