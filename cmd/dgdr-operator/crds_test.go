package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// TestGateOffRemovesV1Beta2AndStarts runs the operator with the gate off and `crds` set over a
// cluster whose request CRD serves v1beta2: it removes v1beta2 (never stored), keeps the Run and
// Candidate CRDs, and still starts (its cache must not need the v1beta2 kinds).
func TestGateOffRemovesV1Beta2AndStarts(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	dir := t.TempDir()
	useKubeconfig(t, env, dir)
	healthPort := freePort(t)
	configFile := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf(`apiVersion: config.dgdr.nvidia.com/v1alpha1
kind: OperatorConfiguration
featureGates: {DGDRV1Beta2: false}
planner: {image: example.com/planner:1}
reporter: {image: example.com/dgdr-operator:1}
metrics: {bindAddress: "0"}
health: {bindAddress: "127.0.0.1:%d"}
webhook: {host: 127.0.0.1, port: %d, certDir: %s}
crds:
  conversionService: {name: t-webhook, namespace: dgdr-system}
`, healthPort, freePort(t), filepath.Join(dir, "certs"))
	if err := os.WriteFile(configFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- runManager(ctx, configFile) }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("the manager stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready in time")
		}
		time.Sleep(300 * time.Millisecond)
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
	}
	crd := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return u
	}
	versions, _, _ := unstructured.NestedSlice(crd(requestCRDName).Object, "spec", "versions")
	var names []string
	for _, v := range versions {
		names = append(names, v.(map[string]any)["name"].(string))
	}
	if !slices.Equal(names, []string{"v1beta1"}) {
		t.Errorf("request CRD versions with the gate off: %v", names)
	}
	crd("dynamographdeploymentruns.nvidia.com")
	crd("dynamographdeploymentcandidates.nvidia.com")
	cancel()
	<-done
}
