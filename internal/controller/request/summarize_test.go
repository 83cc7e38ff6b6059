package request

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
)

// TestSummarizeKeepsARunTheCacheHasNotSeen: a Run created a moment ago and not yet in the cache
// stays the active Run, for a re-search too, with a request name long enough to be shortened;
// a Run of another generation does not.
func TestSummarizeKeepsARunTheCacheHasNotSeen(t *testing.T) {
	r := &Reconciler{Config: &v1alpha1.OperatorConfiguration{RunRetention: ptr.To[int32](3)}}
	end := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, name := range []string{"llama", strings.Repeat("l", 60)} {
		cases := []struct {
			desc, active string
			kept         bool
		}{
			{"the generation's own Run", naming.RunName(name, 2), true},
			{"a re-search", research.RunName(name, 2, end), true},
			{"a Run of the last generation", naming.RunName(name, 1), false},
			{"a re-search of the last generation", research.RunName(name, 1, end), false},
		}
		for _, c := range cases {
			t.Run(name[:5]+"/"+c.desc, func(t *testing.T) {
				d := &v1beta2.DynamoGraphDeploymentRequest{}
				d.Name = name
				d.Status.ObservedGeneration = 2
				d.Status.ActiveRunRef = &v1beta2.RunReference{Name: c.active}
				r.summarize(d, nil)
				var want *v1beta2.RunReference
				if c.kept {
					want = &v1beta2.RunReference{Name: c.active}
				}
				if diff := cmp.Diff(want, d.Status.ActiveRunRef); diff != "" {
					t.Errorf("activeRunRef (-want +got):\n%s", diff)
				}
			})
		}
	}
}
