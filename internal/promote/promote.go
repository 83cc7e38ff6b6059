// Package promote turns a published Candidate into a DynamoGraphDeployment and creates or
// updates it: the one code path of `dgdrctl promote` and of autoApply
// (internal/controller/deployment; docs/design/results.md).
//
// Ownership is recorded on the DynamoGraphDeployment itself (annotations), not with an owner
// reference: a deployment serves traffic and must outlive the request that found it. An
// existing DynamoGraphDeployment is changed only when the same request created it, and never
// with the result of an older request generation.
package promote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// GVK is the DynamoGraphDeployment kind the Dynamo platform serves (nvidia.com/v1beta1).
var GVK = schema.GroupVersionKind{Group: "nvidia.com", Version: "v1beta1", Kind: "DynamoGraphDeployment"}

// Annotations of a promoted DynamoGraphDeployment.
const (
	// AnnotationPromotedFrom names the Candidate the deployment was rendered from.
	AnnotationPromotedFrom = "nvidia.com/dgdr-promoted-from"
	// AnnotationAppliedBy is the UID of the request whose autoApply created the deployment:
	// only that request may update it.
	AnnotationAppliedBy = "nvidia.com/dgdr-applied-by"
	// AnnotationGeneration is the request generation whose search produced the deployment: an
	// older generation never replaces it.
	AnnotationGeneration = "nvidia.com/dgdr-request-generation"
)

// Owner is the request on whose behalf autoApply writes a deployment. A nil Owner (dgdrctl
// promote) only ever creates.
type Owner struct {
	RequestUID types.UID
	// RequestName is the request's name (its namespace is the Candidate's).
	RequestName string
	Generation  int64
}

// Result says what Apply did.
type Result string

// Results of Apply.
const (
	Created   Result = "Created"
	Updated   Result = "Updated"
	Unchanged Result = "Unchanged"
)

// ConflictError is returned when a DynamoGraphDeployment of that name exists and the caller may
// not change it.
type ConflictError struct {
	Name, Reason string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("DynamoGraphDeployment %s already exists and %s; it was left unchanged", e.Name, e.Reason)
}

// ErrCRDMissing wraps the error when the cluster does not serve DynamoGraphDeployments.
var ErrCRDMissing = errors.New("the cluster does not serve " + GVK.Kind + " " + GVK.GroupVersion().String() + " (is the Dynamo platform installed?)")

// NotDeployableError is returned for a Candidate whose Deployable condition is False: its
// graphDeployment would not deploy what was predicted (reason NotRenderable), so nothing is
// promoted, even when forced.
type NotDeployableError struct {
	Candidate, Reason, Message string
}

func (e *NotDeployableError) Error() string {
	return fmt.Sprintf("candidate %s is not deployable (%s): %s", e.Candidate, e.Reason, e.Message)
}

// CheckDeployable returns a *NotDeployableError when the Candidate's Deployable condition is
// False.
func CheckDeployable(cand *v1beta2.DynamoGraphDeploymentCandidate) error {
	if c := meta.FindStatusCondition(cand.Status.Conditions, v1beta2.ConditionDeployable); c != nil && c.Status == metav1.ConditionFalse {
		return &NotDeployableError{Candidate: cand.Name, Reason: c.Reason, Message: c.Message}
	}
	return nil
}

// Render builds the DynamoGraphDeployment named name from the Candidate's
// spec.graphDeployment (a complete object, or for compatibility a bare spec), in the
// Candidate's namespace, labelled with its request and Run (v1beta2.LabelDeployedForName and
// LabelDeployedForNamespace: owner's request, else the Candidate's request label) and annotated
// with its origin (and with owner, when autoApply writes it). A Candidate that is not deployable
// (CheckDeployable) is refused.
func Render(cand *v1beta2.DynamoGraphDeploymentCandidate, name string, owner *Owner) (*unstructured.Unstructured, error) {
	if err := CheckDeployable(cand); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(cand.Spec.GraphDeployment.Raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("candidate %s: spec.graphDeployment is not an object", cand.Name)
	}
	if _, hasSpec := m["spec"]; !hasSpec {
		m = map[string]any{"spec": m}
	}
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("candidate %s: spec.graphDeployment.spec is not an object", cand.Name)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	obj.SetGroupVersionKind(GVK)
	obj.SetName(name)
	obj.SetNamespace(cand.Namespace)
	md, _ := m["metadata"].(map[string]any)
	// The nvidia.com/dgdr-* and dgdr.nvidia.com/* keys say who made and who owns a deployment
	// (AnnotationAppliedBy lets a request's autoApply update it): only promote sets them, never
	// the Candidate, whose content whoever wrote the Candidate chose.
	labels := withoutOwnKeys(stringMap(md, "labels"))
	for _, k := range []string{v1beta2.LabelRequestName, v1beta2.LabelRunName} {
		if v := cand.Labels[k]; v != "" {
			labels[k] = v
		}
	}
	request := cand.Labels[v1beta2.LabelRequestName]
	if owner != nil {
		request = owner.RequestName
		labels[v1beta2.LabelRequestName] = request
	}
	if request != "" {
		labels[v1beta2.LabelDeployedForName] = request
		labels[v1beta2.LabelDeployedForNamespace] = cand.Namespace
	}
	if len(labels) > 0 {
		obj.SetLabels(labels)
	}
	ann := withoutOwnKeys(stringMap(md, "annotations"))
	ann[AnnotationPromotedFrom] = cand.Name
	if owner != nil {
		ann[AnnotationAppliedBy] = string(owner.RequestUID)
		ann[AnnotationGeneration] = strconv.FormatInt(owner.Generation, 10)
	}
	obj.SetAnnotations(ann)
	return obj, nil
}

// OwnKeyPrefixes start the labels and annotations that only the operator and promote set on a
// DynamoGraphDeployment.
var OwnKeyPrefixes = []string{"nvidia.com/dgdr-", "dgdr.nvidia.com/"}

// withoutOwnKeys drops every key of m that starts with one of OwnKeyPrefixes.
func withoutOwnKeys(m map[string]string) map[string]string {
	maps.DeleteFunc(m, func(k, _ string) bool {
		return slices.ContainsFunc(OwnKeyPrefixes, func(p string) bool { return strings.HasPrefix(k, p) })
	})
	return m
}

func stringMap(md map[string]any, key string) map[string]string {
	out := map[string]string{}
	if src, ok := md[key].(map[string]any); ok {
		for k, v := range src {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
	}
	return out
}

// Apply creates desired, or, with an owner, updates the deployment the same request created
// before, provided desired comes from a generation at least as new. Without an owner an
// existing deployment is never touched. A *ConflictError says why nothing was written;
// ErrCRDMissing (wrapped) that the kind is not served.
func Apply(ctx context.Context, c client.Client, desired *unstructured.Unstructured, owner *Owner) (Result, error) {
	err := c.Create(ctx, desired)
	switch {
	case err == nil:
		return Created, nil
	case meta.IsNoMatchError(err) || isResourceMissing(err):
		return "", fmt.Errorf("%w: %v", ErrCRDMissing, err)
	case !apierrors.IsAlreadyExists(err):
		return "", fmt.Errorf("creating DynamoGraphDeployment %s: %w", desired.GetName(), err)
	}
	if owner == nil {
		return "", &ConflictError{Name: desired.GetName(), Reason: "promote never modifies or replaces an existing one"}
	}
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(GVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
		return "", err
	}
	ann := existing.GetAnnotations()
	if ann[AnnotationAppliedBy] != string(owner.RequestUID) {
		return "", &ConflictError{Name: desired.GetName(), Reason: "was not created by this request"}
	}
	if gen, _ := strconv.ParseInt(ann[AnnotationGeneration], 10, 64); gen > owner.Generation {
		return Unchanged, nil // a newer generation's result is deployed: never go back
	}
	if ann[AnnotationPromotedFrom] == desired.GetAnnotations()[AnnotationPromotedFrom] &&
		ann[AnnotationGeneration] == desired.GetAnnotations()[AnnotationGeneration] {
		return Unchanged, nil
	}
	updated := existing.DeepCopy()
	updated.Object["spec"] = desired.Object["spec"]
	labels := existing.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	updated.SetLabels(labels)
	maps.Copy(ann, desired.GetAnnotations())
	updated.SetAnnotations(ann)
	if err := c.Update(ctx, updated); err != nil {
		return "", fmt.Errorf("updating DynamoGraphDeployment %s: %w", desired.GetName(), err)
	}
	return Updated, nil
}

// isResourceMissing tells a 404 for the resource itself (the API group is served but not this
// kind) from a 404 for an object.
func isResourceMissing(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 404 {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

// Readiness tells whether a DynamoGraphDeployment is ready, and why not: its Ready condition
// when it has one, otherwise its state ("successful" is ready); a status older than the
// deployment's generation is not ready yet.
func Readiness(dgd *unstructured.Unstructured) (bool, string) {
	if observed, found, _ := unstructured.NestedInt64(dgd.Object, "status", "observedGeneration"); found && observed < dgd.GetGeneration() {
		return false, fmt.Sprintf("the Dynamo operator has not observed generation %d yet", dgd.GetGeneration())
	}
	conds, _, _ := unstructured.NestedSlice(dgd.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] != "Ready" {
			continue
		}
		msg, _ := cm["message"].(string)
		reason, _ := cm["reason"].(string)
		if cm["status"] == string(metav1.ConditionTrue) {
			return true, nonEmpty(msg, "Ready")
		}
		return false, nonEmpty(msg, nonEmpty(reason, "not ready"))
	}
	state, _, _ := unstructured.NestedString(dgd.Object, "status", "state")
	if state == "successful" {
		return true, "state successful"
	}
	if state == "" {
		return false, "no status yet: is the Dynamo operator running?"
	}
	return false, "state " + state
}

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
