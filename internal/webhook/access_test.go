package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// accessNamespace creates a namespace with two users bound by RBAC: "tenant" may only edit
// requests; "deployer" may also create and update DynamoGraphDeployments, create pods and get
// Secrets. It returns the namespace and clients impersonating each.
func accessNamespace(t *testing.T) (ns string, tenant, deployer client.Client) {
	t.Helper()
	ns = testenv.Namespace(t, k8s, "access-review")
	dgdr := rbacv1.PolicyRule{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeploymentrequests"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
	tenant = testenv.UserClient(t, k8s, env.Config, ns, "tenant", []rbacv1.PolicyRule{dgdr})
	deployer = testenv.UserClient(t, k8s, env.Config, ns, "deployer", []rbacv1.PolicyRule{dgdr,
		{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeployments"}, Verbs: []string{"create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}})
	return ns, tenant, deployer
}

func accessRequest(ns, name string, mut func(*v1beta2.DynamoGraphDeploymentRequest)) *v1beta2.DynamoGraphDeploymentRequest {
	d := builders.Request(ns, name).Obj()
	mut(d)
	return d
}

func overrideWorkers(patch string) func(*v1beta2.DynamoGraphDeploymentRequest) {
	return func(d *v1beta2.DynamoGraphDeploymentRequest) {
		d.Spec.Deployment = &v1beta2.DeploymentSpec{PodTemplateOverrides: &v1beta2.PodTemplateOverrides{
			Workers: &runtime.RawExtension{Raw: []byte(patch)}}}
	}
}

func withAutoApply(d *v1beta2.DynamoGraphDeploymentRequest) {
	d.Spec.Deployment = &v1beta2.DeploymentSpec{AutoApply: ptr.To(true)}
}

// TestAccessReview: the validating webhook checks the requesting user's rights with
// SubjectAccessReviews on the real API server (RBAC). A user who may only edit requests gets
// 403 naming each missing right for autoApply, remoteCode AlwaysTrust and a Secret it cannot
// read, may still search, and may override only the allowlist (422 at each refused field); a
// user with the rights gets all of it.
func TestAccessReview(t *testing.T) {
	ctx := context.Background()
	ns, tenant, deployer := accessNamespace(t)
	const (
		createPods = "create pods"
		createDGD  = "create dynamographdeployments.nvidia.com"
		updateDGD  = "update dynamographdeployments.nvidia.com"
	)
	denied := []struct {
		name     string
		mut      func(*v1beta2.DynamoGraphDeploymentRequest)
		wantCode int32
		want     []string // in the message (403) or the causes' fields (422)
	}{
		{"autoapply", withAutoApply, http.StatusForbidden, []string{createPods, createDGD, updateDGD, "spec.deployment.autoApply"}},
		{"always-trust", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.RemoteCode = v1beta2.RemoteCodeAlwaysTrust },
			http.StatusForbidden, []string{createPods, createDGD, "spec.model.remoteCode"}},
		{"token-secret", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: "someone-elses-token"}
		}, http.StatusForbidden, []string{"get secrets/someone-elses-token", "spec.model.tokenSecretRef.name"}},
		{"cache-claim", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.Cache = &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "models"}}
		}, http.StatusForbidden, []string{"get persistentvolumeclaims/models"}},
		{"trace-configmap", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{Source: &v1beta2.TraceSource{
				ConfigMap: &v1beta2.TraceConfigMapSource{Name: "traffic", Key: "t.jsonl"}}}}
		}, http.StatusForbidden, []string{"get configmaps/traffic", "spec.workload.trace.source.configMap.name"}},
		{"service-account", overrideWorkers(`{"spec":{"serviceAccountName":"admin"}}`), http.StatusUnprocessableEntity,
			[]string{"spec.deployment.podTemplateOverrides.workers.spec.serviceAccountName"}},
		{"host-path", overrideWorkers(`{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`), http.StatusUnprocessableEntity,
			[]string{"spec.deployment.podTemplateOverrides.workers.spec.volumes"}},
		{"privileged", overrideWorkers(`{"spec":{"containers":[{"name":"main","securityContext":{"privileged":true}}]}}`), http.StatusUnprocessableEntity,
			[]string{"spec.deployment.podTemplateOverrides.workers.spec.containers[0].securityContext"}},
		{"sidecar", overrideWorkers(`{"spec":{"containers":[{"name":"side","image":"evil"}]}}`), http.StatusUnprocessableEntity,
			[]string{"spec.deployment.podTemplateOverrides.workers.spec.containers[0].name"}},
		{"secret-key-ref", overrideWorkers(`{"spec":{"containers":[{"name":"main","env":[{"name":"T","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}]}}`),
			http.StatusUnprocessableEntity, []string{"spec.deployment.podTemplateOverrides.workers.spec.containers[0].env[0].valueFrom"}},
	}
	for _, tc := range denied {
		t.Run("tenant-refused-"+tc.name, func(t *testing.T) {
			d := accessRequest(ns, "t-"+tc.name, tc.mut)
			err := tenant.Create(ctx, d)
			status, ok := err.(apierrors.APIStatus)
			if !ok || status.Status().Code != tc.wantCode {
				t.Fatalf("create as tenant: %v, want code %d", err, tc.wantCode)
			}
			if tc.wantCode == http.StatusForbidden {
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the 403 does not name %q: %v", w, err)
					}
				}
			} else {
				var fields []string
				for _, c := range status.Status().Details.Causes {
					fields = append(fields, c.Field)
				}
				for _, w := range tc.want {
					if !contains(fields, w) {
						t.Errorf("the 422 names fields %v, want %s: %v", fields, w, err)
					}
				}
			}
			assertNotStored(t, d)
		})
		t.Run("deployer-admitted-"+tc.name, func(t *testing.T) {
			if tc.name == "cache-claim" || tc.name == "trace-configmap" {
				return // the deployer holds no rights on claims or ConfigMaps
			}
			if err := deployer.Create(ctx, accessRequest(ns, "d-"+tc.name, tc.mut)); err != nil {
				t.Fatalf("create as deployer: %v", err)
			}
		})
	}
	// A plain search, and the allowlisted overrides, need no rights beyond requests.
	for name, mut := range map[string]func(*v1beta2.DynamoGraphDeploymentRequest){
		"search": func(*v1beta2.DynamoGraphDeploymentRequest) {},
		"allowlisted-overrides": overrideWorkers(`{"metadata":{"labels":{"team":"a"}},"spec":{"tolerations":[{"key":"gpu","operator":"Exists"}],` +
			`"nodeSelector":{"pool":"a"},"containers":[{"name":"main","resources":{"limits":{"memory":"1Gi"}},"env":[{"name":"TZ","value":"UTC"}]}]}}`),
	} {
		if err := tenant.Create(ctx, accessRequest(ns, "t-"+name, mut)); err != nil {
			t.Errorf("%s as tenant: %v", name, err)
		}
	}

	// The tenant may not edit the deployer's autoApply request: its next generation would be
	// deployed with the deployer's overrides and Secret.
	victim := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "d-autoapply"}, victim); err != nil {
		t.Fatal(err)
	}
	victim.Spec.SLA = &v1beta2.SLASpec{TTFTMs: ptr.To(150.0)}
	if err := tenant.Update(ctx, victim); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), createPods) {
		t.Errorf("the tenant's edit of an autoApply request: %v, want 403 naming %q", err, createPods)
	}
	// Metadata edits stay possible (dgdrctl cancel).
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "d-autoapply"}, victim); err != nil {
		t.Fatal(err)
	}
	victim.Annotations = map[string]string{v1beta2.AnnotationCancel: "true"}
	if err := tenant.Update(ctx, victim); err != nil {
		t.Errorf("the tenant's metadata edit: %v", err)
	}
}

// TestOverrideCapRefusesAHugeOverride: a 2 MB pod template override is refused by the real API
// server and webhook with 422 at its path, naming the size cap. That the refusal is fast (before
// any strategic merge validation) is a timing, proven by the attack suite's
// TestHugeOverrideIsRefusedFast rather than asserted here.
func TestOverrideCapRefusesAHugeOverride(t *testing.T) {
	ctx := context.Background()
	var env strings.Builder
	env.WriteString(`{"spec":{"containers":[{"name":"main","env":[`)
	for i := 0; env.Len() < 2<<20; i++ {
		if i > 0 {
			env.WriteString(",")
		}
		fmt.Fprintf(&env, `{"name":"E%d","value":"v"}`, i)
	}
	env.WriteString(`]}]}}`)
	d := accessRequest("default", "override-2mb", overrideWorkers(env.String()))
	err := k8s.Create(ctx, d)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.deployment.podTemplateOverrides.workers") {
		t.Fatalf("a 2 MB override: %v, want 422 at spec.deployment.podTemplateOverrides.workers", err)
	}
	if want := strconv.Itoa(int(config.DefaultMaxPodTemplateOverrideBytes)); !strings.Contains(err.Error(), want) {
		t.Errorf("a 2 MB override: %v, want the size cap (%s bytes) named", err, want)
	}
}

// TestAutoApplyDisabled: with autoApply.enabled false (the default), autoApply is refused at
// its path, whatever the user's rights.
func TestAutoApplyDisabled(t *testing.T) {
	w := &webhook.RequestWebhook{Config: config.Default()}
	d := accessRequest("default", "disabled", withAutoApply)
	_, err := w.ValidateCreate(context.Background(), d)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.deployment.autoApply") || !strings.Contains(err.Error(), "autoApply.enabled") {
		t.Errorf("autoApply with the feature disabled: %v, want Invalid at spec.deployment.autoApply naming autoApply.enabled", err)
	}
}
