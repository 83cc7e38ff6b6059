package jobcontract

import (
	"context"
	"fmt"
	"strconv"

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

// The operator applies the policy and its binding at startup (server-side apply):
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;patch,resourceNames=dgdr-search-identity

// SearchIdentityPolicy returns the ValidatingAdmissionPolicy and its binding that confine a Run's
// search identity (the ServiceAccount SearchIdentity(run.UID), which RBAC lets patch Run status
// and write Candidates anywhere in its namespace) to its own Run:
//
//   - a Run's status may be written only when the Run's UID is the one in the identity's name;
//   - a Candidate may be created, updated or deleted only when both its old and new versions are
//     controlled by that Run (controller owner reference) and labelled with its UID;
//   - a ConfigMap may be created or deleted only when it is the Run's artifacts ConfigMap
//     (ArtifactsName of the identity's Run) and both its old and new versions are controlled by
//     that Run and labelled with its UID.
//
// Anything else from a search identity is denied with 403 Forbidden. The policy matches only
// users named system:serviceaccount:<ns>:dgdr-search-<uid>, so nothing else is slowed down or
// affected. The operator installs both objects at startup (docs/security.md).
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
					Expression:        "request.resource.resource != 'dynamographdeploymentcandidates' || ((" + owned("object") + ") && (" + owned("oldObject") + "))",
					MessageExpression: "'the search identity of Run ' + variables.runUID + ' may write only Candidates controlled by and labelled with its own Run'",
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
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: SearchIdentityPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        SearchIdentityPolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
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
