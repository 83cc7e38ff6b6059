package chart_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// TestFenceFollowsTheConfiguration: the fence the chart renders is jobcontract.OperatorFencePolicy
// for the chart's ServiceAccount and the operator configuration the same chart renders, for the
// default values and for values full of characters CEL, YAML and Helm treat specially: the fence
// admits exactly the Jobs the configured operator builds (internal/controller/run
// TestOperatorFenceAdmitsItsOwnJobs proves those against the API server). TestServerDryRun
// has the API server compile the rendered policy.
func TestFenceFollowsTheConfiguration(t *testing.T) {
	for _, name := range []string{"default", "fence"} {
		t.Run(name, func(t *testing.T) {
			var got *admissionregistrationv1.ValidatingAdmissionPolicy
			var cm *corev1.ConfigMap
			for _, o := range objects(t, template(t, name)) {
				data, _ := yaml.Marshal(o)
				switch o["kind"] {
				case "ValidatingAdmissionPolicy":
					got = &admissionregistrationv1.ValidatingAdmissionPolicy{}
					if err := yaml.UnmarshalStrict(data, got); err != nil {
						t.Fatal(err)
					}
				case "ConfigMap":
					cm = &corev1.ConfigMap{}
					if err := yaml.Unmarshal(data, cm); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got == nil || cm == nil {
				t.Fatalf("the chart renders no fence or no configuration")
			}
			t.Setenv("POD_NAMESPACE", "dgdr-system")
			cfg, err := config.Decode([]byte(cm.Data["config.yaml"]))
			if err != nil {
				t.Fatal(err)
			}
			if name == "fence" && cfg.Planner.Args[3] != `a\b {x} <&> 'q'` {
				t.Fatalf("the configuration's planner.args %q are not the values'", cfg.Planner.Args)
			}
			want, _ := jobcontract.OperatorFencePolicy(jobcontract.FenceOptionsFor("system:serviceaccount:dgdr-system:dgdr-operator", cfg))
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
				t.Errorf("the chart's fence differs from the configuration's (-want +got):\n%s", diff)
			}
		})
	}
}
