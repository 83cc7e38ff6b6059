package candidates

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// TruncatedMarker starts the line that ends a file of the artifacts that was cut to fit
// jobcontract.MaxArtifactsBytes. It is not JSON, so nobody parses a cut recommendation.json as
// whole, and readers of the events ledger skip it.
const TruncatedMarker = "#dgdr-operator:truncated"

// MaxArtifactBytes bounds what one kept file may decompress to: the reporter keeps at most the
// output's caps of a file, so anything larger was not written by it.
const MaxArtifactBytes = max(searchoutput.MaxRecommendationBytes, searchoutput.MaxEventsBytes)

// ErrNotKept is File's error for a file the Run's artifacts do not hold.
var ErrNotKept = errors.New("not kept")

// ArtifactsName is the name of the Run's artifacts ConfigMap: the one its status names, else the
// one the reporter gives it (jobcontract.ArtifactsName).
func ArtifactsName(run *v1beta2.DynamoGraphDeploymentRun) string {
	if a := run.Status.Artifacts; a != nil && a.ConfigMapName != "" {
		return a.ConfigMapName
	}
	return jobcontract.ArtifactsName(run.UID)
}

// Artifacts are a Run's kept search output (the ConfigMap the reporter writes), once trusted.
type Artifacts struct {
	cm *corev1.ConfigMap
}

// ReadArtifacts takes cm as run's artifacts only when run controls it (a controller reference to
// the Run's kind and UID) and it carries the Run's UID label, as the reporter writes it: any
// other ConfigMap of that name could be anyone's, and is never read.
func ReadArtifacts(run *v1beta2.DynamoGraphDeploymentRun, cm *corev1.ConfigMap) (*Artifacts, error) {
	ref := metav1.GetControllerOfNoCopy(cm)
	if ref == nil || ref.UID != run.UID || ref.Kind != "DynamoGraphDeploymentRun" || cm.Labels[v1beta2.LabelRunUID] != string(run.UID) {
		return nil, fmt.Errorf("ConfigMap %s is not the artifacts of run %s (not controlled by it)", cm.Name, run.Name)
	}
	return &Artifacts{cm: cm}, nil
}

// File returns the kept file key (jobcontract.ArtifactRecommendationKey or ArtifactEventsKey)
// decompressed, at most MaxArtifactBytes; ErrNotKept when the search did not write it.
func (a *Artifacts) File(key string) ([]byte, error) {
	z, ok := a.cm.BinaryData[key]
	if !ok {
		return nil, ErrNotKept
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	data, err := io.ReadAll(io.LimitReader(zr, MaxArtifactBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > MaxArtifactBytes {
		return nil, fmt.Errorf("decompresses to more than %d bytes", MaxArtifactBytes)
	}
	return data, nil
}

// Truncated tells whether the reporter cut the kept file named file (recommendation.json,
// execution-events.jsonl) to fit, or any file when file is "".
func (a *Artifacts) Truncated(file string) bool {
	cut := a.cm.Annotations[jobcontract.AnnotationArtifactsTruncated]
	if file == "" {
		return cut != ""
	}
	return slices.Contains(strings.Split(cut, ","), file)
}
