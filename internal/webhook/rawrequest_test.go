package webhook

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRawRequest: what the defaulting webhook reads of a raw request before decoding it, in one
// pass: whether it is a v1beta1 request (a field of a wrong type elsewhere does not hide the
// envelope; a spec that is no object does), and which pod template overrides are over the limit
// (none when the request does not decode whole: the schema validation reports why).
func TestRawRequest(t *testing.T) {
	const limit = 16
	long := `{"spec":{"containers":[{"name":"x"}]}}`
	cases := []struct {
		name       string
		raw        string
		wantNative bool
		wantName   string
		wantFields []string
	}{
		{"v1beta2", `{"metadata":{"name":"a"},"spec":{"model":{"name":"m"}}}`, false, "a", nil},
		{"v1beta1 envelope", `{"metadata":{"name":"a"},"spec":{"v1beta1":{"model":"m"}}}`, true, "a", nil},
		{"v1beta1 envelope of null", `{"spec":{"v1beta1":null}}`, true, "", nil},
		{"v1beta1 envelope, deployment of a wrong type", `{"spec":{"v1beta1":{},"deployment":5}}`, true, "", nil},
		{"spec not an object", `{"spec":"v1beta1"}`, false, "", nil},
		{"not JSON", `{"spec":`, false, "", nil},
		{"an override over the limit", `{"metadata":{"name":"a"},"spec":{"deployment":{"podTemplateOverrides":{"b":{},"a":` + long + `}}}}`, false, "a",
			[]string{"spec.deployment.podTemplateOverrides.a"}},
		{"an override over the limit, name of a wrong type", `{"metadata":{"name":5},"spec":{"deployment":{"podTemplateOverrides":{"a":` + long + `}}}}`, false, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := readRawRequest([]byte(tc.raw))
			name, errs := r.oversizedOverrides(limit)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			type result struct {
				Native bool
				Name   string
				Fields []string
			}
			want := result{tc.wantNative, tc.wantName, tc.wantFields}
			if diff := cmp.Diff(want, result{r.v1beta1Native(), name, fields}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
