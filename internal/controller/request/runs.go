package request

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	"github.com/dgdr-operator/dgdr-operator/internal/version"
)

// BuildRun returns the Run of the request's current generation: deterministic name, controller
// owner reference, labels and annotations identifying the request, and spec = exact copy.
func BuildRun(dgdr *v1beta2.DynamoGraphDeploymentRequest, inputHash string) (*v1beta2.DynamoGraphDeploymentRun, error) {
	specHash, err := SpecHash(&dgdr.Spec)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		v1beta2.LabelRequestName:       dgdr.Name,
		v1beta2.LabelRequestUID:        string(dgdr.UID),
		v1beta2.LabelRequestGeneration: strconv.FormatInt(dgdr.Generation, 10),
	}
	if q := dgdr.Labels[v1beta2.LabelKueueQueueName]; q != "" {
		labels[v1beta2.LabelKueueQueueName] = q
	}
	return &v1beta2.DynamoGraphDeploymentRun{
		ObjectMeta: metav1.ObjectMeta{
			Name:      naming.RunName(dgdr.Name, dgdr.Generation),
			Namespace: dgdr.Namespace,
			Labels:    labels,
			Annotations: map[string]string{
				v1beta2.AnnotationSpecHash:        specHash,
				v1beta2.AnnotationInputHash:       inputHash,
				v1beta2.AnnotationOperatorVersion: version.Get().Version,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dgdr, v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRequest"))},
		},
		Spec: *dgdr.Spec.DeepCopy(),
	}, nil
}

// SpecHash is "sha256:<hex>" of the JSON encoding of an accepted spec.
func SpecHash(spec *v1beta2.DynamoGraphDeploymentRequestSpec) (string, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// BelongsTo tells whether r is a Run of the request's generation (by the request's UID: a Run
// of a deleted request of the same name is not).
func BelongsTo(r *v1beta2.DynamoGraphDeploymentRun, dgdr *v1beta2.DynamoGraphDeploymentRequest, generation int64) bool {
	return r.Labels[v1beta2.LabelRequestUID] == string(dgdr.UID) &&
		r.Labels[v1beta2.LabelRequestGeneration] == strconv.FormatInt(generation, 10)
}

// GenerationOf is the request generation a Run was created for.
func GenerationOf(r *v1beta2.DynamoGraphDeploymentRun) int64 {
	g, _ := strconv.ParseInt(r.Labels[v1beta2.LabelRequestGeneration], 10, 64)
	return g
}

// OwnedRuns reads the request's Runs from c (the manager's cache), newest generation first;
// within a generation its re-search Runs come first, newest window first, then the generation's
// own Run. Only Runs the request's status records (Recorded) count: a controller reference and
// labels are what anyone who may create Runs can write. So the Runs are read by the names the
// status records, a few reads by key, rather than by listing the namespace's Runs (filtered by a
// label selector, a burst of n requests in one namespace cost O(n²); docs/develop/performance.md,
// P3) or through an index of every cached Run by owner (two index entries per Run; P5).
func OwnedRuns(ctx context.Context, c client.Reader, dgdr *v1beta2.DynamoGraphDeploymentRequest) ([]*v1beta2.DynamoGraphDeploymentRun, error) {
	refs := recordedRefs(dgdr)
	runs := make([]*v1beta2.DynamoGraphDeploymentRun, 0, len(refs))
	read := make(map[string]bool, len(refs))
	for _, ref := range refs {
		if read[ref.Name] {
			continue
		}
		read[ref.Name] = true
		rn := &v1beta2.DynamoGraphDeploymentRun{}
		err := c.Get(ctx, types.NamespacedName{Namespace: dgdr.Namespace, Name: ref.Name}, rn)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if metav1.IsControlledBy(rn, dgdr) && Recorded(dgdr, rn) {
			runs = append(runs, rn)
		}
	}
	slices.SortFunc(runs, func(a, b *v1beta2.DynamoGraphDeploymentRun) int {
		if c := cmp.Compare(GenerationOf(b), GenerationOf(a)); c != 0 {
			return c
		}
		ea, _ := research.WindowEnd(a)
		eb, _ := research.WindowEnd(b)
		return eb.Compare(ea)
	})
	return runs, nil
}

// Recorded tells whether the request's status records rn as a Run the operator created for it:
// by name and UID in status.activeRunRef or status.recentRunRefs (the request reconciler
// records the generation's Run when it creates it, and keeps what it summarizes), or in
// status.research.runRefs (the research reconciler records each re-search Run it creates). A
// reference without a UID, recorded by an operator that kept none, matches by name; the request
// reconciler rewrites it with the UID.
func Recorded(dgdr *v1beta2.DynamoGraphDeploymentRequest, rn *v1beta2.DynamoGraphDeploymentRun) bool {
	return slices.ContainsFunc(recordedRefs(dgdr), func(ref v1beta2.RunReference) bool {
		return ref.Name == rn.Name && (ref.UID == rn.UID || ref.UID == "")
	})
}

// recordedRefs are the Run references of the request's status (Recorded).
func recordedRefs(dgdr *v1beta2.DynamoGraphDeploymentRequest) []v1beta2.RunReference {
	var refs []v1beta2.RunReference
	if a := dgdr.Status.ActiveRunRef; a != nil {
		refs = append(refs, *a)
	}
	refs = append(refs, dgdr.Status.RecentRunRefs...)
	if r := dgdr.Status.Research; r != nil {
		refs = append(refs, r.RunRefs...)
	}
	return refs
}

// FindRun is the Run of runs named name, or nil.
func FindRun(runs []*v1beta2.DynamoGraphDeploymentRun, name string) *v1beta2.DynamoGraphDeploymentRun {
	for _, rn := range runs {
		if rn.Name == name {
			return rn
		}
	}
	return nil
}

// ActiveRun is the request's active Run: the newest Run of its current generation that has not
// ended, or the one status.activeRunRef names while runs (the cache) do not show it yet (created
// a moment ago); nil when there is none. The request reconciler records it in
// status.activeRunRef; the research reconciler asks it of the Runs, which show a Run's end
// before that status does.
func ActiveRun(dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun) *v1beta2.RunReference {
	for _, rn := range runs { // newest generation first
		if !run.IsTerminal(rn) && GenerationOf(rn) == dgdr.Status.ObservedGeneration {
			return &v1beta2.RunReference{Name: rn.Name, UID: rn.UID}
		}
	}
	ref := dgdr.Status.ActiveRunRef
	if ref == nil || FindRun(runs, ref.Name) != nil {
		return nil
	}
	if ref.Name == naming.RunName(dgdr.Name, dgdr.Status.ObservedGeneration) || naming.IsResearchRunName(ref.Name, dgdr.Name, dgdr.Status.ObservedGeneration) {
		return ref
	}
	return nil
}
