package podpatch_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/internal/podpatch"
)

func base() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Image: "img", Args: []string{"--model", "m"},
		Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
	}}}}
}

func TestApply(t *testing.T) {
	cases := []struct {
		name    string
		patches []string
		want    func(*corev1.PodTemplateSpec)
	}{
		{"empty patches are no-ops", []string{"", "null", "{}"}, func(*corev1.PodTemplateSpec) {}},
		{"containers merge by name, env by name", []string{`{"spec":{"containers":[{"name":"main","env":[{"name":"B","value":"2"},{"name":"A","value":"3"}]}]}}`},
			func(p *corev1.PodTemplateSpec) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "3"}}
			}},
		{"a sidecar is added", []string{`{"spec":{"containers":[{"name":"side","image":"s"}]}}`},
			func(p *corev1.PodTemplateSpec) {
				p.Spec.Containers = append([]corev1.Container{{Name: "side", Image: "s"}}, p.Spec.Containers...)
			}},
		{"patches apply in order", []string{`{"spec":{"nodeSelector":{"pool":"a"}}}`, `{"metadata":{"labels":{"team":"x"}},"spec":{"nodeSelector":{"pool":"b"}}}`},
			func(p *corev1.PodTemplateSpec) {
				p.Labels = map[string]string{"team": "x"}
				p.Spec.NodeSelector = map[string]string{"pool": "b"}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var patches [][]byte
			for _, p := range tc.patches {
				patches = append(patches, []byte(p))
			}
			got, err := podpatch.Apply(base(), patches...)
			if err != nil {
				t.Fatal(err)
			}
			want := base()
			tc.want(want)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	p := field.NewPath("spec", "deployment", "podTemplateOverrides", "workers")
	ignore := cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue")
	cases := []struct {
		name, patch string
		want        field.ErrorList
	}{
		{"empty", "", nil},
		{"empty object", "{}", nil},
		{"valid", `{"spec":{"tolerations":[{"key":"gpu","operator":"Exists"}],"containers":[{"name":"main","env":[{"name":"X","value":"1"}]}]}}`, nil},
		{"not an object", `[1]`, field.ErrorList{field.Invalid(p, nil, "")}},
		{"unknown field", `{"spec":{"nodeSelektor":{"a":"b"}}}`, field.ErrorList{field.Invalid(p, nil, "")}},
		{"wrong type", `{"spec":{"containers":"main"}}`, field.ErrorList{field.Invalid(p, nil, "")}},
		{"container without name", `{"spec":{"containers":[{"image":"x"}]}}`, field.ErrorList{field.Invalid(p, nil, "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, podpatch.Validate([]byte(tc.patch), p), ignore); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
