package crdinstall_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/config/crd"
	"github.com/dgdr-operator/dgdr-operator/internal/crdinstall"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

var conversion = &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
	Namespace: "dgdr-system", Name: "dgdr-operator-webhook", Path: ptr.To("/convert"), Port: ptr.To[int32](443)}}

func versionNames(c *apiextensionsv1.CustomResourceDefinition) (names []string, storage string) {
	for _, v := range c.Spec.Versions {
		names = append(names, v.Name)
		if v.Storage {
			storage = v.Name
		}
	}
	return names, storage
}

func crdNames(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, c := range crds {
		out = append(out, c.Name)
	}
	return out
}

func TestDesired(t *testing.T) {
	off, err := crdinstall.Desired(crd.Files, crdinstall.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{crdinstall.RequestCRD}, crdNames(off)); diff != "" {
		t.Errorf("gate off installs (-want +got):\n%s", diff)
	}
	if names, storage := versionNames(off[0]); !cmp.Equal(names, []string{"v1beta1"}) || storage != "v1beta1" || off[0].Spec.Conversion != nil {
		t.Errorf("gate off: versions %v, storage %s, conversion %v", names, storage, off[0].Spec.Conversion)
	}

	on, err := crdinstall.Desired(crd.Files, crdinstall.Options{V1Beta2: true, Conversion: conversion, Annotations: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dynamographdeploymentcandidates.nvidia.com", crdinstall.RequestCRD, "dynamographdeploymentruns.nvidia.com"}
	if diff := cmp.Diff(want, crdNames(on)); diff != "" {
		t.Errorf("gate on installs (-want +got):\n%s", diff)
	}
	req := on[1]
	if names, storage := versionNames(req); !cmp.Equal(names, []string{"v1beta1", "v1beta2"}) || storage != "v1beta1" {
		t.Errorf("gate on: versions %v, storage %s", names, storage)
	}
	if req.Spec.Conversion == nil || req.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		t.Fatalf("conversion: %+v", req.Spec.Conversion)
	}
	if diff := cmp.Diff(conversion, req.Spec.Conversion.Webhook.ClientConfig); diff != "" {
		t.Errorf("conversion client (-want +got):\n%s", diff)
	}
	if req.Annotations["a"] != "b" {
		t.Errorf("annotations: %v", req.Annotations)
	}

	if _, err := crdinstall.Desired(crd.Files, crdinstall.Options{V1Beta2: true}); err == nil {
		t.Error("v1beta2 without a conversion webhook was accepted")
	}
}

func version(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage}
}

// alphaUnserved is the Dynamo platform's v1alpha1 as our install leaves it with the gate on.
var alphaUnserved = apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1"}

func TestMerge(t *testing.T) {
	dynamoConversion := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "dynamo", Name: "dynamo-operator"}}}}
	ours := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}, ClientConfig: conversion}}
	crd := func(conv *apiextensionsv1.CustomResourceConversion, stored []string, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: crdinstall.RequestCRD},
			Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Versions: versions, Conversion: conv},
			Status:     apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored},
		}
	}
	gateOn := crd(ours, nil, version("v1beta1", true), version("v1beta2", false))
	gateOff := crd(nil, nil, version("v1beta1", true))
	cases := []struct {
		name              string
		existing, desired *apiextensionsv1.CustomResourceDefinition
		want              *apiextensionsv1.CustomResourceDefinition
	}{
		{"fresh cluster", nil, gateOn, gateOn},
		{"over the Dynamo platform's v1beta1", crd(dynamoConversion, []string{"v1beta1"}, version("v1beta1", true)), gateOn, gateOn},
		// Our webhook does not convert v1alpha1: served, every v1alpha1 read would fail.
		{"a served, unstored v1alpha1 stays, unserved", crd(dynamoConversion, []string{"v1beta1"}, version("v1alpha1", false), version("v1beta1", true)), gateOn,
			crd(ours, nil, alphaUnserved, version("v1beta1", true), version("v1beta2", false))},
		{"an unserved v1alpha1 stays unserved", crd(ours, []string{"v1beta1"}, alphaUnserved, version("v1beta1", true), version("v1beta2", false)), gateOn,
			crd(ours, nil, alphaUnserved, version("v1beta1", true), version("v1beta2", false))},
		{"gate off drops an unstored v1beta2 and keeps the conversion", crd(ours, []string{"v1beta1"}, version("v1beta1", true), version("v1beta2", false)), gateOff,
			crd(ours, nil, version("v1beta1", true))},
		{"gate off never drops a stored v1beta2", crd(ours, []string{"v1beta1", "v1beta2"}, version("v1beta1", true), version("v1beta2", false)), gateOff,
			crd(ours, nil, version("v1beta1", true), version("v1beta2", false))},
		{"gate off leaves the Dynamo platform's conversion and its served v1alpha1",
			crd(dynamoConversion, []string{"v1alpha1", "v1beta1"}, version("v1alpha1", false), version("v1beta1", true)), gateOff,
			crd(dynamoConversion, nil, version("v1alpha1", false), version("v1beta1", true))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := crdinstall.Merge(tc.existing, tc.desired)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("merged (-want +got):\n%s", diff)
			}
		})
	}

	// A v1alpha1 in status.storedVersions: objects may still be stored as v1alpha1, which our
	// webhook cannot read back (every list would fail). Refused with the gate on, whether
	// v1alpha1 is still the storage version or was once.
	for name, existing := range map[string]*apiextensionsv1.CustomResourceDefinition{
		"stored once":         crd(dynamoConversion, []string{"v1alpha1", "v1beta1"}, version("v1alpha1", false), version("v1beta1", true)),
		"the storage version": crd(dynamoConversion, []string{"v1alpha1"}, version("v1alpha1", true)),
		"stored and unserved": crd(dynamoConversion, []string{"v1alpha1", "v1beta1"}, alphaUnserved, version("v1beta1", true)),
	} {
		t.Run("refused: a v1alpha1 "+name, func(t *testing.T) {
			got, err := crdinstall.Merge(existing, gateOn)
			if err == nil {
				t.Fatalf("merged: %+v", got.Spec.Versions)
			}
			for _, want := range []string{"status.storedVersions lists v1alpha1", "kubectl replace", "storedVersions\":[\"v1beta1\"]", "docs/operate/coexistence.md"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
		})
	}
}

// Against a real API server: our CRDs applied over an upstream-shaped v1beta1-only DGDR CRD that
// has stored objects; then the gate turned off.
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start(testenv.Options{NoProjectCRDs: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	return m.Run()
}

func TestApplyOverExistingThenGateOff(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	// Gate off on a cluster without the CRD: nothing is created.
	off, err := crdinstall.Desired(crd.Files, crdinstall.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := crdinstall.Apply(ctx, c, off); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: crdinstall.RequestCRD}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Fatalf("gate off created the request CRD: %v", err)
	}

	// The Dynamo platform's CRD of a release that stored v1alpha1, applied by its own installer.
	upstream := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crdinstall.RequestCRD, Annotations: map[string]string{"dynamo.nvidia.com/operator-version": "1.1.0"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "nvidia.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "DynamoGraphDeploymentRequest", ListKind: "DynamoGraphDeploymentRequestList",
				Plural: "dynamographdeploymentrequests", Singular: "dynamographdeploymentrequest", ShortNames: []string{"dgdr"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}},
			},
		},
	}
	if err := c.Create(ctx, upstream); err != nil {
		t.Fatal(err)
	}
	var got apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: crdinstall.RequestCRD}, &got); err != nil {
		t.Fatal(err)
	}

	on, err := crdinstall.Desired(crd.Files, crdinstall.Options{V1Beta2: true, Conversion: conversion})
	if err != nil {
		t.Fatal(err)
	}
	// v1alpha1 is stored: our webhook could not read those objects back. Refused, nothing
	// applied.
	if err := crdinstall.Apply(ctx, c, on); err == nil || !strings.Contains(err.Error(), "status.storedVersions lists v1alpha1") {
		t.Fatalf("installing over a stored v1alpha1: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: crdinstall.RequestCRD}, &got); err != nil {
		t.Fatal(err)
	}
	if names, storage := versionNames(&got); !cmp.Equal(names, []string{"v1alpha1"}) || storage != "v1alpha1" || got.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Fatalf("the refused install changed the CRD: versions %v, storage %s, conversion %+v", names, storage, got.Spec.Conversion)
	}

	// The Dynamo platform's upgrade stores v1beta1 (v1alpha1 stays served), and its objects are
	// migrated: the API server keeps v1alpha1 in status.storedVersions until it is removed there.
	got.Spec.Versions = append(got.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}})
	got.Spec.Versions[0].Storage = false
	if err := c.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: crdinstall.RequestCRD}, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1alpha1", "v1beta1"}, got.Status.StoredVersions); diff != "" {
		t.Fatalf("storedVersions (-want +got):\n%s", diff)
	}
	if err := crdinstall.Apply(ctx, c, on); err == nil {
		t.Fatal("installed over a v1alpha1 that is no longer the storage version but still in status.storedVersions")
	}
	got.Status.StoredVersions = []string{"v1beta1"}
	if err := c.Status().Update(ctx, &got); err != nil {
		t.Fatal(err)
	}

	if err := crdinstall.Apply(ctx, c, on); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: crdinstall.RequestCRD}, &got); err != nil {
		t.Fatal(err)
	}
	names, storage := versionNames(&got)
	if diff := cmp.Diff([]string{"v1alpha1", "v1beta1", "v1beta2"}, names); diff != "" || storage != "v1beta1" {
		t.Errorf("versions after install (-want +got):\n%s storage %s", diff, storage)
	}
	if got.Spec.Versions[0].Served {
		t.Errorf("v1alpha1 is served, but our conversion webhook does not convert it")
	}
	if got.Spec.Conversion == nil || got.Spec.Conversion.Webhook == nil || !cmp.Equal(got.Spec.Conversion.Webhook.ClientConfig.Service, conversion.Service) {
		t.Errorf("conversion: %+v", got.Spec.Conversion)
	}
	if got.Annotations["dynamo.nvidia.com/operator-version"] != "1.1.0" {
		t.Errorf("the other installer's annotation is gone: %v", got.Annotations)
	}
	for _, name := range []string{"dynamographdeploymentruns.nvidia.com", "dynamographdeploymentcandidates.nvidia.com"} {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// Gate off: v1beta2 goes (never stored), v1alpha1 stays (unserved), Runs and Candidates stay.
	if err := crdinstall.Apply(ctx, c, off); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: crdinstall.RequestCRD}, &got); err != nil {
		t.Fatal(err)
	}
	names, storage = versionNames(&got)
	if diff := cmp.Diff([]string{"v1alpha1", "v1beta1"}, names); diff != "" || storage != "v1beta1" {
		t.Errorf("versions with the gate off (-want +got):\n%s storage %s", diff, storage)
	}
	for _, name := range []string{"dynamographdeploymentruns.nvidia.com", "dynamographdeploymentcandidates.nvidia.com"} {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("%s deleted with the gate off: %v", name, err)
		}
	}
}
