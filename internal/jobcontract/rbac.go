package jobcontract

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// ReporterRules are the namespaced Role rules of the reporter's service account
// (ReporterServiceAccount): everything the search pod may do, and nothing else. No Jobs, no
// Secrets, no ConfigMaps, no writes to Run specs.
//
//   - runs: get (read the Run: UID, labels, maxCandidates, model revision);
//   - runs/status: patch (progress, lastProgressTime, candidateRefs, recommendation);
//   - candidates: get, list, create, delete (idempotent creation, convergence after restarts);
//   - candidates/status: update (rank, metrics, Evaluated);
//   - pods: get, list, watch (its own pod, by a field selector on metadata.name, to learn that
//     the search container ended; resourceNames cannot be used because Job pod names are
//     generated).
func ReporterRules() []rbacv1.PolicyRule {
	g := v1beta2.GroupVersion.Group
	return []rbacv1.PolicyRule{
		{APIGroups: []string{g}, Resources: []string{"dynamographdeploymentruns"}, Verbs: []string{"get"}},
		{APIGroups: []string{g}, Resources: []string{"dynamographdeploymentruns/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{g}, Resources: []string{"dynamographdeploymentcandidates"}, Verbs: []string{"get", "list", "create", "delete"}},
		{APIGroups: []string{g}, Resources: []string{"dynamographdeploymentcandidates/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
	}
}
