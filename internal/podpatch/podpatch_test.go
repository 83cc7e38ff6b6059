package podpatch_test

import (
	"os"
	"path/filepath"
	"strings"
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

// TestRestricted: what a user without create on pods may put into an override, and what is
// refused, at its field path.
func TestRestricted(t *testing.T) {
	p := field.NewPath("spec", "deployment", "podTemplateOverrides", "workers")
	ignore := cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue")
	forbidden := func(path *field.Path) *field.Error { return field.Forbidden(path, "") }
	spec, c0 := p.Child("spec"), p.Child("spec", "containers").Index(0)
	env, res, ann := c0.Child("env"), c0.Child("resources"), p.Child("metadata", "annotations")
	cases := []struct {
		name, patch string
		want        field.ErrorList
	}{
		{"empty", "", nil},
		{"null", "null", nil},
		{"not an object is Validate's", "[1]", nil},
		{"the allowlist", `{"metadata":{"labels":{"team":"a"},"annotations":{"note":"x","prometheus.io/scrape":"true","karpenter.sh/do-not-disrupt":"true"}},"spec":{` +
			`"tolerations":[{"key":"gpu","operator":"Exists"}],"nodeSelector":{"pool":"a"},` +
			`"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Exists"}]}]}}},` +
			`"containers":[{"name":"main","resources":{"limits":{"memory":"1Gi","nvidia.com/gpu":"2"},"requests":{"cpu":"4","ephemeral-storage":"10Gi"}},` +
			`"env":[{"name":"VLLM_LOGGING_LEVEL","value":"DEBUG"},{"name":"NCCL_DEBUG"}]}]}}`, nil},
		{"code-loading and redirecting env names", `{"spec":{"containers":[{"name":"main","env":[{"name":"VLLM_LOGGING_LEVEL","value":"INFO"},` +
			`{"name":"LD_PRELOAD","value":"/tmp/x.so"},{"name":"LD_LIBRARY_PATH","value":"/tmp"},{"name":"PYTHONPATH","value":"/tmp"},` +
			`{"name":"PYTHONSTARTUP","value":"/tmp/s.py"},{"name":"HF_ENDPOINT","value":"https://evil.example"},{"name":"HTTPS_PROXY","value":"http://evil:3128"},` +
			`{"name":"http_proxy","value":"http://evil:3128"},{"name":"NCCL_NET_PLUGIN","value":"/tmp/x.so"},{"name":"DYN_NAMESPACE","value":"other"},` +
			`{"name":"ld_preload","value":"x"}]}]}}`,
			field.ErrorList{forbidden(env.Index(1).Child("name")), forbidden(env.Index(2).Child("name")), forbidden(env.Index(3).Child("name")),
				forbidden(env.Index(4).Child("name")), forbidden(env.Index(5).Child("name")), forbidden(env.Index(6).Child("name")),
				forbidden(env.Index(7).Child("name")), forbidden(env.Index(8).Child("name")), forbidden(env.Index(9).Child("name")),
				forbidden(env.Index(10).Child("name"))}},
		{"network, mesh and secret-injection annotations", `{"metadata":{"annotations":{"k8s.v1.cni.cncf.io/networks":"macvlan","cni.projectcalico.org/ipAddrs":"[\"10.0.0.9\"]",` +
			`"sidecar.istio.io/inject":"false","vault.hashicorp.com/agent-inject":"true","prometheus.io.evil.example/x":"y","karpenter.sh/do-not-disrupt-x":"y"}}}`,
			field.ErrorList{forbidden(ann.Key("cni.projectcalico.org/ipAddrs")), forbidden(ann.Key("k8s.v1.cni.cncf.io/networks")),
				forbidden(ann.Key("karpenter.sh/do-not-disrupt-x")), forbidden(ann.Key("prometheus.io.evil.example/x")),
				forbidden(ann.Key("sidecar.istio.io/inject")), forbidden(ann.Key("vault.hashicorp.com/agent-inject"))}},
		{"device-plugin resources and claims", `{"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"1","rdma/hca":"1","nvidia.com/mig-1g.10gb":"1"},` +
			`"requests":{"hugepages-2Mi":"1Gi"},"claims":[{"name":"gpu"}]}}]}}`,
			field.ErrorList{forbidden(res.Child("claims")), forbidden(res.Child("limits").Key("nvidia.com/mig-1g.10gb")),
				forbidden(res.Child("limits").Key("rdma/hca")), forbidden(res.Child("requests").Key("hugepages-2Mi"))}},
		{"serviceAccountName", `{"spec":{"serviceAccountName":"admin"}}`, field.ErrorList{forbidden(spec.Child("serviceAccountName"))}},
		{"hostPath volume", `{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`, field.ErrorList{forbidden(spec.Child("volumes"))}},
		{"pod securityContext", `{"spec":{"securityContext":{"runAsUser":0}}}`, field.ErrorList{forbidden(spec.Child("securityContext"))}},
		{"privileged container", `{"spec":{"containers":[{"name":"main","securityContext":{"privileged":true}}]}}`,
			field.ErrorList{forbidden(c0.Child("securityContext"))}},
		{"sidecar", `{"spec":{"containers":[{"name":"side","image":"evil"}]}}`, field.ErrorList{forbidden(c0.Child("name"))}},
		{"init container", `{"spec":{"initContainers":[{"name":"init","image":"evil"}]}}`, field.ErrorList{forbidden(spec.Child("initContainers"))}},
		{"secretKeyRef", `{"spec":{"containers":[{"name":"main","env":[{"name":"TZ","value":"UTC"},{"name":"LANG","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}]}}`,
			field.ErrorList{forbidden(c0.Child("env").Index(1).Child("valueFrom"))}},
		{"envFrom", `{"spec":{"containers":[{"name":"main","envFrom":[{"secretRef":{"name":"s"}}]}]}}`, field.ErrorList{forbidden(c0.Child("envFrom"))}},
		{"volumeMounts", `{"spec":{"containers":[{"name":"main","volumeMounts":[{"name":"x","mountPath":"/x"}]}]}}`, field.ErrorList{forbidden(c0.Child("volumeMounts"))}},
		{"image", `{"spec":{"containers":[{"name":"main","image":"evil"}]}}`, field.ErrorList{forbidden(c0.Child("image"))}},
		{"hostNetwork and hostPID", `{"spec":{"hostPID":true,"hostNetwork":true}}`,
			field.ErrorList{forbidden(spec.Child("hostNetwork")), forbidden(spec.Child("hostPID"))}},
		{"strategic merge directive", `{"spec":{"$setElementOrder/containers":[{"name":"main"}],"containers":[{"name":"main","$patch":"delete"}]}}`,
			field.ErrorList{forbidden(spec.Child("$setElementOrder/containers")), forbidden(c0.Child("$patch"))}},
		{"top-level directive", `{"$patch":"replace","spec":{}}`, field.ErrorList{forbidden(p.Child("$patch"))}},
		{"metadata name", `{"metadata":{"name":"x","namespace":"y"}}`,
			field.ErrorList{forbidden(p.Child("metadata", "name")), forbidden(p.Child("metadata", "namespace"))}},
		{"AppArmor annotation", `{"metadata":{"annotations":{"container.apparmor.security.beta.kubernetes.io/main":"unconfined"}}}`,
			field.ErrorList{forbidden(p.Child("metadata", "annotations").Key("container.apparmor.security.beta.kubernetes.io/main"))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, podpatch.Restricted([]byte(tc.patch), p), ignore); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRestrictedAllowlistsAreDocumented: docs/operate/security.md names every environment
// variable, annotation and resource a user without create on pods may set, so the page says
// exactly what the allowlists admit.
func TestRestrictedAllowlistsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operate", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, list := range [][]string{podpatch.RestrictedEnvNames, podpatch.RestrictedAnnotations, podpatch.RestrictedResourceNames} {
		for _, name := range list {
			if want := "`" + name; !strings.Contains(string(doc), want) {
				t.Errorf("docs/operate/security.md does not name %s", name)
			}
		}
	}
}
