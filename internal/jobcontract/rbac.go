package jobcontract

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// ReporterRules are the rules of the namespaced reporter Role (ReporterRole): everything the
// search pod may do, and nothing else. No Jobs, no Secrets, no reads of ConfigMaps, no writes to
// Run specs.
//
//   - runs: get (read the Run: UID, labels, maxCandidates, model revision);
//   - runs/status: patch (progress, lastProgressTime, candidateRefs, recommendation);
//   - candidates: get, list, create, delete (idempotent creation, convergence after restarts);
//     patch (the rank label a provisional Candidate gets when the final ranking is published);
//   - configmaps: create, delete (the Run's artifacts ConfigMap, ArtifactsName; delete replaces
//     one written by an earlier attempt). The admission policy allows only the one named after
//     the identity's Run, controlled by and labelled with it; there is no get, list or watch;
//   - candidates/status: update (rank, metrics, Evaluated);
//   - runs/finalizers: update (no such endpoint exists for custom resources: this only lets the
//     reporter set blockOwnerDeletion on the owner reference of the Candidates it creates, which
//     the OwnerReferencesPermissionEnforcement admission plugin requires);
//   - pods: get, list, watch (its own pod, by a field selector on metadata.name, to learn that
//     the search container ended; resourceNames cannot be used because Job pod names are
//     generated).
//
// The rules are bound per Run (a RoleBinding of the Run's search identity), and they name no
// objects because RBAC cannot (created names are unknown); the search-identity admission policy
// (SearchIdentityPolicy) confines every write to the identity's own Run.
func ReporterRules() []rbacv1.PolicyRule {
	g := v1beta2.GroupVersion.Group
	return []rbacv1.PolicyRule{
		{APIGroups: []string{g}, Resources: []string{"dynamographdeploymentruns"}, Verbs: []string{"get"}},
		{APIGroups: []string{g}, Resources: []string{"dynamographdeploymentruns/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{g}, Resources: []string{"dynamographdeploymentruns/finalizers"}, Verbs: []string{"update"}},
		{APIGroups: []string{g}, Resources: []string{"dynamographdeploymentcandidates"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
		{APIGroups: []string{g}, Resources: []string{"dynamographdeploymentcandidates/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete"}},
	}
}
