package request

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// TestStatusOwnersCoverTheStatus: every field of a request's status has exactly one owner in
// the table (or is listed as written by none of the reconcilers here), every condition type of
// a request exactly one, and each owner is its controller's field manager. A field added to the
// status without an owner, or given to two, fails here.
func TestStatusOwnersCoverTheStatus(t *testing.T) {
	var fields []string
	st := reflect.TypeFor[v1beta2.DynamoGraphDeploymentRequestStatus]()
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	slices.Sort(fields)
	var owned, conditions, managers []string
	for _, o := range StatusOwners {
		owned = append(owned, o.Fields...)
		conditions = append(conditions, o.Conditions...)
		managers = append(managers, o.Manager)
	}
	// The conditions list is shared, each condition type owned once (below).
	owned = append(owned, "conditions")
	owned = append(owned, NotOwned...)
	slices.Sort(owned)
	if diff := cmp.Diff(fields, owned); diff != "" {
		t.Errorf("status fields (-the API's +the owner table's; a field twice has two owners):\n%s", diff)
	}
	slices.Sort(conditions)
	want := []string{v1beta2.ConditionAccepted, v1beta2.ConditionDeployed, v1beta2.ConditionImprovementAvailable, v1beta2.ConditionPredictionHeld}
	if diff := cmp.Diff(want, conditions); diff != "" {
		t.Errorf("condition types of a request (-want +the owner table's):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"dgdr-request", "dgdr-deployment", "dgdr-research"}, managers); diff != "" {
		t.Errorf("managers (-want +got):\n%s", diff)
	}
}
