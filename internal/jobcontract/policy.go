package jobcontract

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// SearchIdentityPolicyName names the ValidatingAdmissionPolicy (and its binding) that scopes each
// search identity to its own Run.
const SearchIdentityPolicyName = "dgdr-search-identity"

// The operator applies the policy and its binding at startup (server-side apply, which
// authorizes the creation of a missing object by its name): it may create and patch these two
// objects and no other admission policy, so it can neither weaken another policy nor write one
// (its own fence, OperatorFencePolicy, is the chart's, not the operator's to change):
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;create;patch,resourceNames=dgdr-search-identity

// SearchIdentityPolicy returns the ValidatingAdmissionPolicy and its binding that confine a Run's
// search identity (the ServiceAccount SearchIdentity(run.UID), which RBAC lets patch Run status
// and write Candidates anywhere in its namespace) to its own Run:
//
//   - a Run's status may be written only when the Run's UID is the one in the identity's name,
//     only while the Run is not terminal (Completed is not True), and never in the fields the
//     operator owns (OperatorOwnedRunStatus: conditions, phase, aisimulate...), compared between
//     object and oldObject;
//   - a Candidate may be created, updated or deleted only when both its old and new versions are
//     controlled by that Run (controller owner reference) and labelled with its UID, and its
//     status.fitsCluster (the operator's) is kept as it is;
//   - a ConfigMap may be created or deleted only when it is the Run's artifacts ConfigMap
//     (ArtifactsName of the identity's Run) and both its old and new versions are controlled by
//     that Run and labelled with its UID.
//
// Anything else from a search identity is denied with 403 Forbidden. The policy matches only
// users named system:serviceaccount:<ns>:dgdr-search-<uid>, so nothing else is slowed down or
// affected. The operator installs both objects at startup (docs/operate/security.md).
func SearchIdentityPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	g := v1beta2.GroupVersion.Group
	owned := func(obj string) string {
		return fmt.Sprintf("%[1]s == null || (has(%[1]s.metadata.ownerReferences) && %[1]s.metadata.ownerReferences.exists(r, "+
			"has(r.controller) && r.controller && r.uid == variables.runUID) && has(%[1]s.metadata.labels) && "+
			"%[2]q in %[1]s.metadata.labels && %[1]s.metadata.labels[%[2]q] == variables.runUID)", obj, v1beta2.LabelRunUID)
	}
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: SearchIdentityPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{g},
							APIVersions: []string{"*"},
							Resources: []string{
								"dynamographdeploymentruns", "dynamographdeploymentruns/status",
								"dynamographdeploymentcandidates", "dynamographdeploymentcandidates/status",
							},
						},
					},
				}, {
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					},
				}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "search-identity",
				Expression: "request.userInfo.username.startsWith('system:serviceaccount:') && " +
					"request.userInfo.username.substring(request.userInfo.username.lastIndexOf(':') + 1).startsWith('" + SearchIdentityPrefix + "')",
			}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "runUID", Expression: "request.userInfo.username.substring(request.userInfo.username.lastIndexOf(':') + 1 + " +
					strconv.Itoa(len(SearchIdentityPrefix)) + ")"},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: "request.resource.resource != 'dynamographdeploymentruns' || " +
						"((object == null || object.metadata.uid == variables.runUID) && (oldObject == null || oldObject.metadata.uid == variables.runUID))",
					MessageExpression: "'the search identity of Run ' + variables.runUID + ' may write only its own Run'",
					Reason:            forbidden,
				},
				{
					// The operator owns these fields of the Run's status (the Run controller derives
					// them); the reporter writes only progress, lastProgressTime, candidateRefs,
					// recommendation and artifacts. A search identity that rewrote conditions or
					// phase could end its Run Succeeded, and one that rewrote aisimulate could change
					// the input it searches.
					Expression: "request.resource.resource != 'dynamographdeploymentruns' || request.subResource != 'status' || " +
						"object == null || oldObject == null || (" + statusKept() + ")",
					MessageExpression: "'the search identity of Run ' + variables.runUID + ' may not write the operator-owned status fields of its Run (" +
						strings.Join(OperatorOwnedRunStatus, ", ") + ")'",
					Reason: forbidden,
				},
				{
					// Once the Run is terminal its results are final, whoever still holds a token.
					Expression: "request.resource.resource != 'dynamographdeploymentruns' || oldObject == null || !has(oldObject.status) || " +
						"!has(oldObject.status.conditions) || !oldObject.status.conditions.exists(c, c.type == '" + v1beta2.ConditionCompleted + "' && c.status == 'True')",
					MessageExpression: "'Run ' + variables.runUID + ' has completed: its search identity may no longer write it'",
					Reason:            forbidden,
				},
				{
					Expression:        "request.resource.resource != 'dynamographdeploymentcandidates' || ((" + owned("object") + ") && (" + owned("oldObject") + "))",
					MessageExpression: "'the search identity of Run ' + variables.runUID + ' may write only Candidates controlled by and labelled with its own Run'",
					Reason:            forbidden,
				},
				{
					// The operator judges whether a Candidate fits the cluster (internal/controller/fit);
					// autoApply never trusts the field, but people do.
					Expression: "request.resource.resource != 'dynamographdeploymentcandidates' || object == null || (" +
						fitsCluster("object") + " == " + fitsCluster("oldObject") + " && (!" + fitsCluster("object") +
						" || object.status.fitsCluster == oldObject.status.fitsCluster))",
					MessageExpression: "'the search identity of Run ' + variables.runUID + ' may not write status.fitsCluster of a Candidate (the operator owns it)'",
					Reason:            forbidden,
				},
				{
					Expression: "request.resource.resource != 'configmaps' || (request.name == '" + ArtifactsPrefix + "' + variables.runUID && (" +
						owned("object") + ") && (" + owned("oldObject") + "))",
					MessageExpression: "'the search identity of Run ' + variables.runUID + ' may write only the artifacts ConfigMap of its own Run (" + ArtifactsPrefix + "' + variables.runUID + ', controlled by and labelled with the Run)'",
					Reason:            forbidden,
				},
			},
		},
	}
	return policy, denyBinding(SearchIdentityPolicyName)
}

// fitsCluster is the CEL expression saying that obj (object or oldObject) has status.fitsCluster.
func fitsCluster(obj string) string {
	return fmt.Sprintf("(%[1]s != null && has(%[1]s.status) && has(%[1]s.status.fitsCluster))", obj)
}

// OperatorOwnedRunStatus are the fields of a Run's status that only the operator writes: the
// search-identity policy denies any change of them by a search identity.
var OperatorOwnedRunStatus = []string{"conditions", "phase", "message", "aisimulate", "pricing", "calibration", "jobRef", "baselineJobRef", "startTime", "completionTime"}

// statusKept is the CEL expression saying that no field of OperatorOwnedRunStatus differs
// between oldObject and object (present in both with equal values, or absent from both).
func statusKept() string {
	parts := make([]string, 0, len(OperatorOwnedRunStatus))
	for _, f := range OperatorOwnedRunStatus {
		in := func(o string) string { return fmt.Sprintf("(has(%[1]s.status) && has(%[1]s.status.%[2]s))", o, f) }
		parts = append(parts, fmt.Sprintf("(%s == %s && (!%s || object.status.%s == oldObject.status.%s))",
			in("object"), in("oldObject"), in("object"), f, f))
	}
	return strings.Join(parts, " && ")
}

// ApplySearchIdentityPolicy server-side applies the policy and its binding with c (whose scheme
// must know admissionregistration.k8s.io/v1, as client-go's does).
func ApplySearchIdentityPolicy(ctx context.Context, c client.Client) error {
	policy, binding := SearchIdentityPolicy()
	for _, obj := range []client.Object{policy, binding} {
		gvks, _, err := c.Scheme().ObjectKinds(obj)
		if err != nil {
			return err
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(gvks[0])
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("dgdr-operator"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvks[0].Kind, obj.GetName(), err)
		}
	}
	return nil
}

// denyBinding binds the named policy cluster-wide with the Deny action, under the policy's name.
func denyBinding(policyName string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}
