package jobcontract

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// OperatorFencePolicyName names the ValidatingAdmissionPolicy (and its binding) that fences
// the operator's own ServiceAccount.
const OperatorFencePolicyName = "dgdr-operator-fence"

// AnnotationAppliedBy is the annotation autoApply puts on every DynamoGraphDeployment it writes
// (promote.AnnotationAppliedBy, repeated here so that this package stays free of promote).
const AnnotationAppliedBy = "nvidia.com/dgdr-applied-by"

// SystemNamespaces are the namespaces the operator never works in, whatever watchNamespaces
// says: the cluster's own.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// FenceOptions say whom the fence confines and what it lets through.
type FenceOptions struct {
	// Username is the operator's user: system:serviceaccount:<namespace>:<name>.
	Username string
	// Images are the only images the operator's Jobs may run (the operator configuration's
	// planner.image and reporter.image).
	Images []string
}

// OperatorFencePolicy returns the ValidatingAdmissionPolicy and its binding that confine the
// operator's own ServiceAccount to what the operator does, below what its RBAC allows (RBAC
// cannot say which Jobs or which names):
//
//   - nothing in SystemNamespaces;
//   - Jobs only with the configured images (every container and init container) and a search
//     identity (SearchIdentityPrefix) as their ServiceAccount;
//   - ServiceAccounts only named SearchIdentityPrefix*, Roles and RoleBindings only named dgdr-*;
//   - DynamoGraphDeployments only carrying AnnotationAppliedBy (autoApply's).
//
// It matches creates and updates by opts.Username only. The chart installs it (rendered by
// hack/chartgen from this function), and the operator holds no right on it: its RBAC names only
// the search-identity policy (docs/operate/security.md), so a compromised operator cannot lift its fence.
func OperatorFencePolicy(opts FenceOptions) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	rule := func(group string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources},
		}}
	}
	quoted := make([]string, 0, len(opts.Images))
	for _, img := range opts.Images {
		quoted = append(quoted, fmt.Sprintf("%q", img))
	}
	systemNS := make([]string, 0, len(SystemNamespaces))
	for _, ns := range SystemNamespaces {
		systemNS = append(systemNS, fmt.Sprintf("%q", ns))
	}
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	res := "request.resource.resource"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: OperatorFencePolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				rule("batch", "jobs"),
				rule("", "serviceaccounts", "configmaps", "pods"),
				rule("rbac.authorization.k8s.io", "roles", "rolebindings"),
				rule("nvidia.com", "*"),
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "operator", Expression: fmt.Sprintf("request.userInfo.username == %q", opts.Username),
			}},
			Variables: []admissionregistrationv1.Variable{{
				Name: "images", Expression: "[" + strings.Join(quoted, ", ") + "]",
			}},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression:        "!(request.namespace in [" + strings.Join(systemNS, ", ") + "])",
					MessageExpression: "'the dgdr-operator fence: the operator does not write in namespace ' + request.namespace",
					Reason:            forbidden,
				},
				{
					Expression: res + " != 'jobs' || (object.spec.template.spec.containers.all(c, c.image in variables.images) && " +
						"(!has(object.spec.template.spec.initContainers) || object.spec.template.spec.initContainers.all(c, c.image in variables.images)) && " +
						"has(object.spec.template.spec.serviceAccountName) && object.spec.template.spec.serviceAccountName.startsWith('" + SearchIdentityPrefix + "'))",
					MessageExpression: "'the dgdr-operator fence: the operator creates Jobs only with its configured images (' + variables.images.join(', ') + ') and a " + SearchIdentityPrefix + "* ServiceAccount'",
					Reason:            forbidden,
				},
				{
					Expression:        res + " != 'serviceaccounts' || request.name.startsWith('" + SearchIdentityPrefix + "')",
					MessageExpression: "'the dgdr-operator fence: the operator writes only ServiceAccounts named " + SearchIdentityPrefix + "*, not ' + request.name",
					Reason:            forbidden,
				},
				{
					Expression:        "!(" + res + " in ['roles', 'rolebindings']) || request.name.startsWith('dgdr-')",
					MessageExpression: "'the dgdr-operator fence: the operator writes only Roles and RoleBindings named dgdr-*, not ' + request.name",
					Reason:            forbidden,
				},
				{
					Expression: res + " != 'dynamographdeployments' || (has(object.metadata.annotations) && '" + AnnotationAppliedBy + "' in object.metadata.annotations && " +
						"object.metadata.annotations['" + AnnotationAppliedBy + "'] != '')",
					MessageExpression: "'the dgdr-operator fence: the operator writes only DynamoGraphDeployments carrying " + AnnotationAppliedBy + " (autoApply)'",
					Reason:            forbidden,
				},
			},
		},
	}
	return policy, denyBinding(OperatorFencePolicyName)
}
