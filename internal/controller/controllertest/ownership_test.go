package controllertest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
)

// TestStatusPaths: a managedFields entry as the API server writes it for a status patch names
// its status fields and condition types, and only the owner's pass.
func TestStatusPaths(t *testing.T) {
	raw := []byte(`{"f:status":{".":{},"f:activeRunRef":{".":{},"f:name":{}},"f:research":{"f:nextTime":{}},` +
		`"f:conditions":{".":{},"k:{\"type\":\"ImprovementAvailable\"}":{".":{},"f:status":{}},"k:{\"type\":\"Accepted\"}":{"f:reason":{}}}}}`)
	paths := statusPaths(raw)
	want := []string{"status.activeRunRef", "status.conditions[type=Accepted]", "status.conditions[type=ImprovementAvailable]", "status.research"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Fatalf("paths (-want +got):\n%s", diff)
	}
	var ownedByResearch []string
	for _, p := range paths {
		if owned(request.ResearchOwner, p) {
			ownedByResearch = append(ownedByResearch, p)
		}
	}
	if diff := cmp.Diff([]string{"status.conditions[type=ImprovementAvailable]", "status.research"}, ownedByResearch); diff != "" {
		t.Errorf("the research reconciler's (-want +got):\n%s", diff)
	}
}
