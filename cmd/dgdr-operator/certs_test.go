package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestSelfSignedCertificates runs the operator's manager against a real API server in
// self-signed certificate mode: it must create its CA and serving certificate in a Secret, write
// them to certDir, inject the CA bundle into its webhook configurations and the request CRD's
// conversion webhook, and only then report ready.
func TestSelfSignedCertificates(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dgdr-system"}}); err != nil {
		t.Fatal(err)
	}
	// The webhook configurations, as the chart installs them (without a CA bundle).
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.Contains(doc, "kind: MutatingWebhookConfiguration") {
			m := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal([]byte(doc), m); err != nil {
				t.Fatal(err)
			}
			m.Name = "t-mutating"
			for i := range m.Webhooks {
				m.Webhooks[i].ClientConfig.Service.Namespace = "dgdr-system"
				m.Webhooks[i].ClientConfig.Service.Name = "t-webhook"
			}
			if err := c.Create(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Contains(doc, "kind: ValidatingWebhookConfiguration") {
			v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal([]byte(doc), v); err != nil {
				t.Fatal(err)
			}
			v.Name = "t-validating"
			for i := range v.Webhooks {
				v.Webhooks[i].ClientConfig.Service.Namespace = "dgdr-system"
				v.Webhooks[i].ClientConfig.Service.Name = "t-webhook"
			}
			if err := c.Create(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
	}

	dir := t.TempDir()
	useKubeconfig(t, env, dir)
	certDir := filepath.Join(dir, "certs")
	healthPort := freePort(t)
	configFile := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf(`apiVersion: config.dgdr.nvidia.com/v1alpha1
kind: OperatorConfiguration
featureGates: {DGDRV1Beta2: true}
planner: {image: example.com/planner:1}
reporter: {image: example.com/dgdr-operator:1}
metrics: {bindAddress: "0"}
health: {bindAddress: "127.0.0.1:%d"}
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
  selfSignedCertificates:
    secretName: t-webhook-cert
    namespace: dgdr-system
    serviceName: t-webhook
    mutatingWebhookConfigurationName: t-mutating
    validatingWebhookConfigurationName: t-validating
`, healthPort, freePort(t), certDir)
	if err := os.WriteFile(configFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- runManager(ctx, configFile) }()

	deadline := time.Now().Add(60 * time.Second)
	var last string
	for {
		select {
		case err := <-done:
			t.Fatalf("the manager stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready in time: %s", last)
		}
		time.Sleep(300 * time.Millisecond)
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "dgdr-system", Name: "t-webhook-cert"}, secret); err != nil {
			last = "secret: " + err.Error()
			continue
		}
		ca := secret.Data["ca.crt"]
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKey{Name: "t-validating"}, v); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "t-mutating"}, m); err != nil {
			t.Fatal(err)
		}
		if len(ca) == 0 || !bytes.Equal(v.Webhooks[0].ClientConfig.CABundle, ca) || !bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, ca) {
			last = "CA bundle not injected yet"
			continue
		}
		// The request CRD's conversion webhook is served by the same server: its CA too.
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := c.Get(ctx, client.ObjectKey{Name: requestCRDName}, crd); err != nil {
			t.Fatal(err)
		}
		if crdCA, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle"); crdCA != base64.StdEncoding.EncodeToString(ca) {
			last = "CA bundle not injected into the CRD's conversion webhook yet"
			continue
		}
		// Stand in for the kubelet, which projects the Secret volume into certDir.
		if len(secret.Data["tls.crt"]) == 0 {
			last = "certificate not in the Secret yet"
			continue
		}
		_ = os.MkdirAll(certDir, 0o755)
		for k, v := range secret.Data {
			if err := os.WriteFile(filepath.Join(certDir, k), v, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
		if err != nil {
			last = "readyz: " + err.Error()
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Sprintf("readyz: %d", resp.StatusCode)
			continue
		}
		break
	}
	cancel()
	<-done
}

// useKubeconfig points KUBECONFIG at a kubeconfig file (in dir) for env's API server, as the
// operator's main reads it.
func useKubeconfig(t *testing.T, env *testenv.Env, dir string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["t"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos["t"] = &clientcmdapi.AuthInfo{ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData}
	kc.Contexts["t"] = &clientcmdapi.Context{Cluster: "t", AuthInfo: "t"}
	kc.CurrentContext = "t"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
}
