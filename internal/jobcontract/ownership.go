package jobcontract

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// OwnershipPolicyName names the ValidatingAdmissionPolicy (and its binding) that keeps the
// making of Runs, Candidates, the operator's Jobs and their pods, and search-identity tokens to
// the operator and the cluster components it relies on.
const OwnershipPolicyName = "dgdr-operator-ownership"

// DefaultJobControllerUsername is the user the cluster's Job controller creates pods as when
// kube-controller-manager runs with --use-service-account-credentials (kubeadm's default, and
// most distributions'): each controller on its own ServiceAccount in kube-system. Without that
// flag every controller is system:kube-controller-manager.
const DefaultJobControllerUsername = "system:serviceaccount:kube-system:job-controller"

// OwnershipOptions say who is who for the ownership policy.
type OwnershipOptions struct {
	// Username is the operator's user: system:serviceaccount:<namespace>:<name>.
	Username string
	// JobControllerUsername is the user the cluster's Job controller creates pods as
	// (DefaultJobControllerUsername by default).
	JobControllerUsername string
}

// ownershipMarks are the labels that mark what the operator makes, with the value each must have
// ("" for any): the managed-by label the operator's caches select on, and the UID labels its
// controllers find Jobs and pods by. The name labels are left out: promote puts them on
// DynamoGraphDeployments, whose platform may copy them to its own pods.
var ownershipMarks = []struct{ key, value string }{
	{LabelManagedBy, ManagedByValue},
	{v1beta2.LabelRunUID, ""},
	{v1beta2.LabelRequestUID, ""},
}

// markedMeta is the CEL expression saying that the metadata meta carries a mark of
// ownershipMarks.
func markedMeta(meta string) string {
	parts := make([]string, 0, len(ownershipMarks))
	for _, m := range ownershipMarks {
		p := fmt.Sprintf("%q in %s.labels", m.key, meta)
		if m.value != "" {
			p = fmt.Sprintf("(%s && %s.labels[%q] == %q)", p, meta, m.key, m.value)
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("(has(%s.labels) && (%s))", meta, strings.Join(parts, " || "))
}

// keptMarks is the CEL expression saying that the metadata now and before carry the same marks
// (each mark absent from both, or present in both with the same value).
func keptMarks(now, before string) string {
	parts := make([]string, 0, len(ownershipMarks))
	for _, m := range ownershipMarks {
		of := func(meta string) string {
			return fmt.Sprintf("(has(%[1]s.labels) && %[2]q in %[1]s.labels ? [%[1]s.labels[%[2]q]] : [])", meta, m.key)
		}
		parts = append(parts, of(now)+" == "+of(before))
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// searchAccount is the CEL expression saying that the pod spec spec runs as a search identity.
func searchAccount(spec string) string {
	return fmt.Sprintf("((has(%[1]s.serviceAccountName) && %[1]s.serviceAccountName.startsWith(%[2]q)) || "+
		"(has(%[1]s.serviceAccount) && %[1]s.serviceAccount.startsWith(%[2]q)))", spec, SearchIdentityPrefix)
}

// keptAccount is the CEL expression saying that the pod specs now and before name the same
// ServiceAccount.
func keptAccount(now, before string) string {
	of := func(spec string) string {
		return fmt.Sprintf("(has(%[1]s.serviceAccountName) ? %[1]s.serviceAccountName : '') + '/' + (has(%[1]s.serviceAccount) ? %[1]s.serviceAccount : '')", spec)
	}
	return "(" + of(now) + " == " + of(before) + ")"
}

// markedJob is the CEL expression saying that the Job obj is marked as the operator's: a mark on
// it or on its pod template, or a search identity as its pods' ServiceAccount (what its pods
// would carry).
func markedJob(obj string) string {
	return fmt.Sprintf("(%s || (has(%[2]s.spec.template.metadata) && %s) || %s)",
		markedMeta(obj+".metadata"), obj, markedMeta(obj+".spec.template.metadata"), searchAccount(obj+".spec.template.spec"))
}

// markedPod is the CEL expression saying that the pod obj is marked as one of the operator's
// Jobs'.
func markedPod(obj string) string {
	return fmt.Sprintf("(%s || %s)", markedMeta(obj+".metadata"), searchAccount(obj+".spec"))
}

// keptJob and keptPod are the CEL expressions saying that an update leaves the marks of a Job
// (its own and its template's, and the template's ServiceAccount) or a pod as they were.
func keptJob() string {
	tmpl := func(obj string) string {
		return fmt.Sprintf("(has(%[1]s.spec.template.metadata) ? [%[1]s.spec.template.metadata] : [])", obj)
	}
	return fmt.Sprintf("(%s && %s.all(n, %s.all(o, %s)) && size(%s) == size(%s) && %s)",
		keptMarks("object.metadata", "oldObject.metadata"), tmpl("object"), tmpl("oldObject"), keptMarks("n", "o"),
		tmpl("object"), tmpl("oldObject"), keptAccount("object.spec.template.spec", "oldObject.spec.template.spec"))
}

func keptPod() string {
	return fmt.Sprintf("(%s && %s)", keptMarks("object.metadata", "oldObject.metadata"), keptAccount("object.spec", "oldObject.spec"))
}

// housekeeping is the CEL expression of an update of a Run or a Candidate that anyone may make:
// the labels and annotations kept (but AnnotationCancel, with which a user stops a Run) and
// owner references only removed (the garbage collector orphaning it, or removing a finalizer).
// Their specs are immutable (the CRDs' own rules).
func housekeeping() string {
	const n, o = "object.metadata", "oldObject.metadata"
	labels := fmt.Sprintf("has(%[1]s.labels) == has(%[2]s.labels) && (!has(%[1]s.labels) || %[1]s.labels == %[2]s.labels)", n, o)
	annotations := fmt.Sprintf("(!has(%[1]s.annotations) || %[1]s.annotations.all(k, k == %[3]q || (has(%[2]s.annotations) && k in %[2]s.annotations && %[2]s.annotations[k] == %[1]s.annotations[k]))) && "+
		"(!has(%[2]s.annotations) || %[2]s.annotations.all(k, k == %[3]q || (has(%[1]s.annotations) && k in %[1]s.annotations)))", n, o, v1beta2.AnnotationCancel)
	owners := fmt.Sprintf("(!has(%[1]s.ownerReferences) || %[1]s.ownerReferences.all(r, has(%[2]s.ownerReferences) && %[2]s.ownerReferences.exists(x, "+
		"x.uid == r.uid && x.kind == r.kind && x.name == r.name && x.apiVersion == r.apiVersion && "+
		"(has(x.controller) && x.controller) == (has(r.controller) && r.controller))))", n, o)
	return "(" + labels + " && " + annotations + " && " + owners + ")"
}

// OwnershipPolicy returns the ValidatingAdmissionPolicy and its binding that keep to the operator
// the making of what it trusts because it made it (the RBAC of a cluster cannot: whoever may
// create Jobs, pods or nvidia.com objects in a namespace may create them with any name, labels
// and owner references):
//
//   - Runs: created and updated only by the operator (opts.Username); their status written only
//     by the operator and search identities (SearchIdentityPolicy confines each to its own Run);
//   - Candidates: created, updated and their status written only by the operator and search
//     identities;
//   - anyone else's update of a Run or a Candidate only as housekeeping: labels and annotations
//     kept (a Run's AnnotationCancel aside) and owner references only removed (the garbage
//     collector);
//   - Jobs carrying the operator's marks (ownershipMarks on the Job or its pod template, or a
//     search identity as its pods' ServiceAccount) created only by the operator; nobody else's
//     update may add, change or remove a mark;
//   - pods carrying those marks created only by the Job controller
//     (opts.JobControllerUsername); no update may add, change or remove a mark, and no
//     ephemeral container may join one (it could mount the search identity's token);
//   - a token of a search identity (serviceaccounts/token of SearchIdentityPrefix*) minted only
//     by a node (system:node:*, group system:nodes): the kubelet, for the projected volume of a
//     search pod bound to it (the Node authorizer limits a node to its pods' ServiceAccounts).
//
// Deletes are not matched. Everyone else, cluster admins included, gets 403 Forbidden naming the
// rule. The chart installs it (rendered by hack/chartgen from this function), and the operator
// holds no right on it (docs/operate/security.md, "Ownership policy").
func OwnershipPolicy(opts OwnershipOptions) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	g := v1beta2.GroupVersion.Group
	const (
		runs       = "dynamographdeploymentruns"
		candidates = "dynamographdeploymentcandidates"
		prefix     = "'the dgdr-operator ownership policy: "
	)
	res := "request.resource.resource"
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	rule := func(group string, ops []admissionregistrationv1.OperationType, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources},
		}}
	}
	write := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	main := func(resource string) string {
		return fmt.Sprintf("(request.resource.group == %q && %s == %q && variables.subResource == '')", g, res, resource)
	}
	status := func(resource string) string {
		return fmt.Sprintf("(request.resource.group == %q && %s == %q && variables.subResource == 'status')", g, res, resource)
	}
	isPod := "(request.resource.group == '' && " + res + " == 'pods')"
	isJob := "(request.resource.group == 'batch' && " + res + " == 'jobs')"
	// request.subResource is absent (not "") for the resource itself.
	isToken := "(request.resource.group == '' && " + res + " == 'serviceaccounts' && has(request.subResource) && request.subResource == 'token')"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: OwnershipPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				rule(g, write, runs, runs+"/status", candidates, candidates+"/status"),
				rule("batch", write, "jobs"),
				rule("", write, "pods", "pods/ephemeralcontainers"),
				rule("", []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, "serviceaccounts/token"),
			}},
			// Everything but the operator's kinds, marked Jobs and pods and search-identity tokens
			// skips the policy at once.
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "dgdr-objects",
				Expression: "request.resource.group == " + celLiteral(g) + " || " +
					"(" + isToken + " && request.name.startsWith(" + celLiteral(SearchIdentityPrefix) + ")) || " +
					"(" + isJob + " && (" + markedJob("object") + " || (oldObject != null && " + markedJob("oldObject") + "))) || " +
					"(" + isPod + " && (" + markedPod("object") + " || (oldObject != null && " + markedPod("oldObject") + ")))",
			}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "operator", Expression: "request.userInfo.username == " + celLiteral(opts.Username)},
				{Name: "jobController", Expression: celLiteral(opts.JobControllerUsername) + " == request.userInfo.username"},
				{Name: "searchIdentity", Expression: "request.userInfo.username.startsWith('system:serviceaccount:') && " +
					"request.userInfo.username.substring(request.userInfo.username.lastIndexOf(':') + 1).startsWith(" + celLiteral(SearchIdentityPrefix) + ")"},
				{Name: "node", Expression: "request.userInfo.username.startsWith('system:node:') && has(request.userInfo.groups) && 'system:nodes' in request.userInfo.groups"},
				{Name: "update", Expression: "request.operation == 'UPDATE'"},
				{Name: "subResource", Expression: "has(request.subResource) ? request.subResource : ''"},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: "!" + main(runs) + " || variables.operator || (variables.update && " + housekeeping() + ")",
					MessageExpression: prefix + "only the operator creates and changes Runs (anyone else may only remove owner references or set " +
						v1beta2.AnnotationCancel + "), not ' + request.userInfo.username",
					Reason: forbidden,
				},
				{
					Expression:        "!(" + status(runs) + " || " + status(candidates) + ") || variables.operator || variables.searchIdentity",
					MessageExpression: prefix + "only the operator and search identities write the status of Runs and Candidates, not ' + request.userInfo.username",
					Reason:            forbidden,
				},
				{
					Expression:        "!" + main(candidates) + " || variables.operator || variables.searchIdentity || (variables.update && " + housekeeping() + ")",
					MessageExpression: prefix + "only the operator and search identities create and change Candidates (anyone else may only remove owner references), not ' + request.userInfo.username",
					Reason:            forbidden,
				},
				{
					Expression: "!" + isJob + " || variables.operator || (variables.update && " + keptJob() + ")",
					MessageExpression: prefix + "only the operator creates Jobs labelled " + describeMarks() + " (on the Job or its pod template) or running as a " +
						SearchIdentityPrefix + "* ServiceAccount, and nobody else adds, changes or removes those marks, not ' + request.userInfo.username",
					Reason: forbidden,
				},
				{
					Expression: "!" + isPod + " || variables.subResource != '' || (variables.update ? " + keptPod() + " : variables.jobController)",
					MessageExpression: prefix + "only the Job controller creates pods labelled " + describeMarks() +
						" or running as a " + SearchIdentityPrefix + "* ServiceAccount, and no update adds, changes or removes those marks, not ' + request.userInfo.username",
					Reason: forbidden,
				},
				{
					Expression:        "!" + isPod + " || variables.subResource != 'ephemeralcontainers'",
					MessageExpression: prefix + "no ephemeral container joins a pod of the operator\\'s Jobs (it could read the search identity\\'s token), not from ' + request.userInfo.username",
					Reason:            forbidden,
				},
				{
					Expression:        "!" + isToken + " || variables.node",
					MessageExpression: prefix + "only a node (the kubelet of a search pod) mints a token of a search identity (" + SearchIdentityPrefix + "*), not ' + request.userInfo.username",
					Reason:            forbidden,
				},
			},
		},
	}
	return policy, denyBinding(OwnershipPolicyName)
}

// describeMarks names ownershipMarks for messages.
func describeMarks() string {
	parts := make([]string, 0, len(ownershipMarks))
	for _, m := range ownershipMarks {
		if m.value != "" {
			parts = append(parts, m.key+"="+m.value)
		} else {
			parts = append(parts, m.key)
		}
	}
	return strings.Join(parts, ", ")
}
