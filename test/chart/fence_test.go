package chart_test

import (
	"encoding/json"
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
					policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
					if err := yaml.UnmarshalStrict(data, policy); err != nil {
						t.Fatal(err)
					}
					if policy.Name == jobcontract.OperatorFencePolicyName {
						got = policy
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

// TestOwnershipPolicyFollowsTheValues: the ownership policy the chart renders is
// jobcontract.OwnershipPolicy for the chart's ServiceAccount and the Job controller's user of
// the values (the default, and one with characters CEL, YAML and Helm treat specially), and
// ownershipPolicy.enabled false renders none.
func TestOwnershipPolicyFollowsTheValues(t *testing.T) {
	rendered := func(t *testing.T, set ...string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		t.Helper()
		args := append([]string{"template", "dgdr-operator", chart, "--namespace", "dgdr-system"}, variants["default"]...)
		for _, v := range set {
			args = append(args, "--set-json", v)
		}
		for _, o := range objects(t, tool(t, nil, "helm", args...)) {
			if o["kind"] != "ValidatingAdmissionPolicy" {
				continue
			}
			data, _ := yaml.Marshal(o)
			policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict(data, policy); err != nil {
				t.Fatal(err)
			}
			if policy.Name == jobcontract.OwnershipPolicyName {
				return policy
			}
		}
		return nil
	}
	for name, user := range map[string]string{
		"default": jobcontract.DefaultJobControllerUsername,
		"quoted":  `system:kube-controller-manager: "q" 'x' #c`,
	} {
		t.Run(name, func(t *testing.T) {
			var set []string
			if name != "default" {
				quoted, _ := json.Marshal(user)
				set = append(set, "ownershipPolicy.jobControllerUser="+string(quoted))
			}
			got := rendered(t, set...)
			if got == nil {
				t.Fatal("the chart renders no ownership policy")
			}
			want, _ := jobcontract.OwnershipPolicy(jobcontract.OwnershipOptions{Username: "system:serviceaccount:dgdr-system:dgdr-operator", JobControllerUsername: user})
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
				t.Errorf("the chart's ownership policy differs (-want +got):\n%s", diff)
			}
		})
	}
	if got := rendered(t, "ownershipPolicy.enabled=false"); got != nil {
		t.Errorf("ownershipPolicy.enabled=false renders %s", got.Name)
	}
}
