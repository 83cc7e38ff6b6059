//go:build chartinstall

package chartinstall

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

const (
	webhookService = fullname + "-webhook"
	certSecret     = fullname + "-webhook-cert"
	searchTimeout  = 3 * time.Minute
)

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string { t.Helper(); return sandboxtest.Namespace(t, k8s, "chart") }

// exampleRequest reads examples/model-only.yaml into namespace ns.
func exampleRequest(t *testing.T, ns string) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	const file = "model-only.yaml"
	b, err := os.ReadFile(filepath.Join(root, "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	var d v1beta2.DynamoGraphDeploymentRequest
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	d.Namespace = ns
	return &d
}

// webhookUnreachable says whether an error is the API server failing to call a webhook (the
// operator is not serving yet), as opposed to an admission decision.
func webhookUnreachable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "failed calling webhook")
}

// waitAdmissionServing waits until the installed operator answers admission reviews: a
// server-side dry-run create of a request goes through its webhooks.
func waitAdmissionServing(t *testing.T) {
	t.Helper()
	ns := newNamespace(t)
	waitFor(t, 2*time.Minute, "the chart's webhooks to serve admission", func(ctx context.Context) (bool, string, error) {
		d := exampleRequest(t, ns)
		err := k8s.Create(ctx, d, client.DryRunAll)
		if webhookUnreachable(err) {
			return false, err.Error(), nil
		}
		if err != nil {
			t.Fatalf("dry-run create rejected: %v", err)
		}
		return true, "", nil
	})
}

// TestWebhookCertificateIssuedAndInjected: in self-signed mode the operator creates its CA and
// serving certificate (cert-controller), injects the CA into both webhook configurations, and
// the webhook Service (reached at its endpoint, as the API server does) presents that
// certificate for its DNS name.
func TestWebhookCertificateIssuedAndInjected(t *testing.T) {
	var secret corev1.Secret
	waitFor(t, 2*time.Minute, "Secret "+certSecret+" to hold the certificate", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: certSecret}, &secret); err != nil {
			return false, "", err
		}
		return len(secret.Data["tls.crt"]) > 0 && len(secret.Data["ca.crt"]) > 0, fmt.Sprintf("%d keys", len(secret.Data)), nil
	})
	ca := secret.Data["ca.crt"]
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("ca.crt of %s is not a PEM certificate", certSecret)
	}
	dnsName := webhookService + "." + namespace + ".svc"
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatal("tls.crt is not PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: dnsName}); err != nil {
		t.Errorf("the serving certificate does not verify for %s against ca.crt: %v", dnsName, err)
	}

	waitFor(t, time.Minute, "caBundle injection into both webhook configurations", func(ctx context.Context) (bool, string, error) {
		var m admissionregistrationv1.MutatingWebhookConfiguration
		if err := k8s.Get(ctx, client.ObjectKey{Name: fullname + "-mutating"}, &m); err != nil {
			return false, "", err
		}
		var v admissionregistrationv1.ValidatingWebhookConfiguration
		if err := k8s.Get(ctx, client.ObjectKey{Name: fullname + "-validating"}, &v); err != nil {
			return false, "", err
		}
		var bundles [][]byte
		for _, w := range m.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		for _, w := range v.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		for i, b := range bundles {
			if !bytes.Equal(b, ca) {
				return false, fmt.Sprintf("webhook %d of %d has a caBundle of %d bytes, not ca.crt", i+1, len(bundles), len(b)), nil
			}
		}
		// The request's defaulting and validating webhooks (Runs and Candidates have none: CEL
		// keeps their specs immutable).
		return len(m.Webhooks) > 0 && len(v.Webhooks) > 0, fmt.Sprintf("%d webhooks", len(bundles)), nil
	})

	// The Service's endpoint presents the issued certificate for the Service's DNS name.
	addr := serviceEndpoint(t, webhookService)
	waitFor(t, time.Minute, "a TLS handshake with "+dnsName+" at "+addr, func(ctx context.Context) (bool, string, error) {
		d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: dnsName, MinVersion: tls.VersionTLS12}}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, "", err
		}
		return true, "", c.Close()
	})
}

// serviceEndpoint waits for a ready endpoint of a Service of the release and returns its
// host:port (what the API server dials with aggregator routing).
func serviceEndpoint(t *testing.T, service string) string {
	t.Helper()
	var addr string
	waitFor(t, time.Minute, "a ready endpoint of Service "+service, func(ctx context.Context) (bool, string, error) {
		var slices discoveryv1.EndpointSliceList
		if err := k8s.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
			return false, "", err
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if len(e.Addresses) > 0 && ptr.Deref(e.Conditions.Ready, false) && len(s.Ports) > 0 && s.Ports[0].Port != nil {
					addr = net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*s.Ports[0].Port)))
					return true, "", nil
				}
			}
		}
		return false, fmt.Sprintf("%d EndpointSlices", len(slices.Items)), nil
	})
	return addr
}

// TestAdmission: the installed chart's mutating webhook materializes defaults from the chart's
// values and the cluster's GPU Node, and its validating webhook enforces the chart's limits with a field path; a rejected
// request is not stored.
func TestAdmission(t *testing.T) {
	waitAdmissionServing(t)
	ns := newNamespace(t)
	ctx := context.Background()

	d := exampleRequest(t, ns)
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatalf("creating %s: %v", d.Name, err)
	}
	var stored v1beta2.DynamoGraphDeploymentRequest
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), &stored); err != nil {
		t.Fatal(err)
	}
	s := stored.Spec
	if s.Hardware == nil || s.Hardware.GPU == nil || s.Hardware.GPU.SKU != "h200_sxm" {
		// GPU discovery (on in the chart) finds the sandbox's two products; the values'
		// defaults.gpuSKU is one of them.
		t.Errorf("spec.hardware.gpu.sku was not materialized to defaults.gpuSKU, one of the discovered products: %+v", s.Hardware)
	}
	if s.Recommendation == nil || ptr.Deref(s.Recommendation.MaxCandidates, 0) != 5 {
		t.Errorf("spec.recommendation.maxCandidates was not materialized to 5: %+v", s.Recommendation)
	}
	if s.Workload == nil || s.Workload.Static == nil {
		t.Errorf("spec.workload.static was not materialized: %+v", s.Workload)
	}

	// Above the chart's limits.maxTrials (2000): only the validating webhook knows the limit.
	over := exampleRequest(t, ns)
	over.Name = "too-many-trials"
	over.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: rawJSON(`{"optimizer": {"max_trials": 5000}}`)}
	err := k8s.Create(ctx, over)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("creating a request with max_trials 5000: got %v, want Invalid from the validating webhook", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("no status details in %v", err)
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	const want = "spec.aisimulate.inputOverrides.optimizer.max_trials"
	if !slices.Contains(fields, want) {
		t.Errorf("rejection names fields %q, want %s", fields, want)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(over), &v1beta2.DynamoGraphDeploymentRequest{}); !apierrors.IsNotFound(err) {
		t.Errorf("the rejected request was stored (get: %v)", err)
	}
}

// TestRequestReconciled: a request applied with kubectl is searched by a Job that runs the
// Planner image the chart's values name, with the reporter from the operator image, and its
// candidates are published.
func TestRequestReconciled(t *testing.T) {
	waitAdmissionServing(t)
	ns := newNamespace(t)
	if out, err := tool("kubectl", "apply", "--server-side", "-n", ns, "-f", filepath.Join(root, "examples", "model-only.yaml")); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	name := exampleRequest(t, ns).Name

	var runName string
	waitFor(t, searchTimeout, "request "+name+" to finish its search", func(ctx context.Context) (bool, string, error) {
		var d v1beta2.DynamoGraphDeploymentRequest
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return false, "", err
		}
		st := d.Status
		desc := fmt.Sprintf("observed=%d active=%v latest=%+v", st.ObservedGeneration, st.ActiveRunRef, st.LatestRun)
		if st.ObservedGeneration != d.Generation || st.ActiveRunRef != nil || st.LatestRun == nil || st.LatestRun.Phase == "" {
			return false, desc, nil
		}
		runName = st.LatestRun.Name
		return true, desc, nil
	})

	ctx := context.Background()
	var run v1beta2.DynamoGraphDeploymentRun
	waitFor(t, 30*time.Second, "Run "+runName+" to complete", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: runName}, &run); err != nil {
			return false, "", err
		}
		return meta.IsStatusConditionTrue(run.Status.Conditions, v1beta2.ConditionCompleted), fmt.Sprintf("%v", run.Status.Conditions), nil
	})
	done := meta.FindStatusCondition(run.Status.Conditions, v1beta2.ConditionCompleted)
	if done.Reason != v1beta2.ReasonSucceeded {
		t.Fatalf("Run %s ended %s: %s", runName, done.Reason, done.Message)
	}
	var cands v1beta2.DynamoGraphDeploymentCandidateList
	if err := k8s.List(ctx, &cands, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: runName}); err != nil {
		t.Fatal(err)
	}
	if len(cands.Items) == 0 || len(cands.Items) != len(run.Status.CandidateRefs) {
		t.Fatalf("Run %s: %d candidateRefs, %d Candidates; want the same, more than 0", runName, len(run.Status.CandidateRefs), len(cands.Items))
	}

	var jobs batchv1.JobList
	if err := k8s.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: runName}); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 {
		t.Fatalf("Run %s has %d Jobs, want 1", runName, len(jobs.Items))
	}
	images := map[string]string{}
	for _, c := range append(jobs.Items[0].Spec.Template.Spec.InitContainers, jobs.Items[0].Spec.Template.Spec.Containers...) {
		images[c.Name] = c.Image
	}
	wantImages := map[string]string{jobcontract.SearchContainer: manager.PlannerImage, jobcontract.ReporterContainer: operatorImage,
		jobcontract.PublicationContainer: operatorImage}
	for c, img := range wantImages {
		if images[c] != img {
			t.Errorf("container %s of the search Job runs %q, want %q (from the chart's values)", c, images[c], img)
		}
	}

	// The metrics Service reaches the operator, which counted the succeeded Run, for a scraper
	// bound to the chart's metrics-reader ClusterRole (over HTTPS with the operator's self-signed
	// certificate).
	url := "https://" + serviceEndpoint(t, fullname+"-metrics") + "/metrics"
	token := env.MetricsReader(t, fullname+"-metrics-reader")
	selfSigned := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the operator's self-signed certificate; the test checks who may read
	const succeeded = `dgdr_operator_runs_completed_total{reason="Succeeded"} `
	waitFor(t, 30*time.Second, "a succeeded Run in the operator's metrics at "+url, func(ctx context.Context) (bool, string, error) {
		code, body, err := sandboxtest.Scrape(ctx, url, token, selfSigned)
		if err != nil {
			return false, "", err
		}
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, succeeded); ok {
				n, err := strconv.ParseFloat(v, 64)
				return err == nil && n >= 1, line, err
			}
		}
		return false, fmt.Sprintf("HTTP %d, no %s line", code, strings.TrimSpace(succeeded)), nil
	})
	// Without a token the endpoint answers 401.
	if code, _, err := sandboxtest.Scrape(context.Background(), url, "", selfSigned); err != nil || code != http.StatusUnauthorized {
		t.Errorf("an anonymous scrape of %s: HTTP %d (%v), want 401", url, code, err)
	}
}

// TestInstalledOverDynamoPlatformCRD: the operator installed its request CRD over the Dynamo
// platform's (the real one, test/crds/upstream/dynamo) by server-side apply: the platform's
// v1alpha1 stays in the CRD but is no longer served (our conversion webhook does not convert it;
// docs/operate/coexistence.md), v1beta1 stays the storage version, v1beta2 is added with the
// conversion webhook on the chart's Service (CA injected), and the Dynamo platform's request is
// still readable as v1beta1 unchanged and as v1beta2 through spec.v1beta1, and never searched.
func TestInstalledOverDynamoPlatformCRD(t *testing.T) {
	ctx := context.Background()
	waitFor(t, time.Minute, "the request CRD to serve v1beta2 with the CA injected", func(ctx context.Context) (bool, string, error) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := k8s.Get(ctx, client.ObjectKey{Name: "dynamographdeploymentrequests.nvidia.com"}, &crd); err != nil {
			return false, "", err
		}
		var versions []string
		storage := ""
		for _, v := range crd.Spec.Versions {
			name := v.Name
			if !v.Served {
				name += " (unserved)"
			}
			versions = append(versions, name)
			if v.Storage {
				storage = v.Name
			}
		}
		conv := crd.Spec.Conversion
		// v1alpha1 is the Dynamo platform's (served, never stored): the install keeps it,
		// unserved.
		if !slices.Equal(versions, []string{"v1alpha1 (unserved)", "v1beta1", "v1beta2"}) || storage != "v1beta1" || conv == nil || conv.Webhook == nil ||
			conv.Webhook.ClientConfig.Service == nil || conv.Webhook.ClientConfig.Service.Name != webhookService || len(conv.Webhook.ClientConfig.CABundle) == 0 {
			return false, fmt.Sprintf("versions %v, storage %s, conversion %+v", versions, storage, conv), nil
		}
		return true, "", nil
	})
	v1 := &v1beta1.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: dynamoNamespace, Name: dynamoRequest}, v1); err != nil {
		t.Fatal(err)
	}
	if v1.Spec.Model != "Qwen/Qwen3-0.6B" || v1.Spec.Backend != v1beta1.BackendVLLM || v1.Spec.V1Beta2 != nil {
		t.Errorf("the v1beta1 request changed: %+v", v1.Spec)
	}
	v2 := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: dynamoNamespace, Name: dynamoRequest}, v2); err != nil {
		t.Fatalf("reading the v1beta1 request as v1beta2: %v", err)
	}
	if !v2.IsV1Beta1Native() || !strings.Contains(string(v2.Spec.V1Beta1.Raw), "Qwen/Qwen3-0.6B") {
		t.Errorf("v1beta2 view: %+v", v2.Spec)
	}
	var runs v1beta2.DynamoGraphDeploymentRunList
	if err := k8s.List(ctx, &runs, client.InNamespace(dynamoNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(runs.Items) != 0 {
		t.Errorf("Runs for the Dynamo platform's request: %d", len(runs.Items))
	}
}

// TestUpgradeGateOffKeepsCRDsAndRequests: `helm upgrade` with the DGDRV1Beta2 gate off drops the
// webhook configurations from the release and the operator removes v1beta2 from the request CRD
// (never stored), but the CRDs stay with every request (read through v1beta1), and the operator rolls to a pod with the new configuration. New
// ports: the old and the new pod share the host's network while the Deployment rolls.
func TestUpgradeGateOffKeepsCRDsAndRequests(t *testing.T) {
	ctx := context.Background()
	// The upgrade takes rights away (the webhook CA role, v1beta2) while the old replica still
	// runs: its last requests are refused until it stops.
	sandboxtest.ExpectDenials(t)
	before := requestNames(t)
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	out, err := helm("upgrade", release, chartPackage, "--namespace", namespace, "--reuse-values",
		"--set", "featureGates.DGDRV1Beta2=false",
		"--set", "metrics.port="+strconv.Itoa(ports[0]), "--set", "health.port="+strconv.Itoa(ports[1]), "--set", "webhook.port="+strconv.Itoa(ports[2]),
		"--wait", "--timeout", "3m")
	if err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	requireCRDs(t)
	waitFor(t, time.Minute, "the operator to remove v1beta2 from the request CRD", func(ctx context.Context) (bool, string, error) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := k8s.Get(ctx, client.ObjectKey{Name: "dynamographdeploymentrequests.nvidia.com"}, &crd); err != nil {
			return false, "", err
		}
		var versions []string
		for _, v := range crd.Spec.Versions {
			versions = append(versions, v.Name)
		}
		// v1alpha1 is the Dynamo platform's: it stays (unserved while our conversion webhook is
		// the CRD's).
		return slices.Equal(versions, []string{"v1alpha1", "v1beta1"}), fmt.Sprintf("versions %v", versions), nil
	})
	requireSameRequests(t, before, "the upgrade")
	requireGone(t, &admissionregistrationv1.MutatingWebhookConfiguration{}, client.ObjectKey{Name: fullname + "-mutating"})
	requireGone(t, &admissionregistrationv1.ValidatingWebhookConfiguration{}, client.ObjectKey{Name: fullname + "-validating"})
	// The operator now runs with the gate off: its configuration says so, and it logs it.
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fullname + "-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["config.yaml"], "DGDRV1Beta2: false") {
		t.Errorf("the upgraded configuration does not turn the gate off:\n%s", cm.Data["config.yaml"])
	}
	waitFor(t, time.Minute, "the rolled operator to log that the gate is off", func(context.Context) (bool, string, error) {
		logs, _ := filepath.Glob(filepath.Join(manager.StateDir(root), "pods", namespace+"_"+fullname+"-*", "logs", "manager.log"))
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil && strings.Contains(string(b), "feature gate DGDRV1Beta2 is off") {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d operator logs", len(logs)), nil
	})
}

// requestNames lists every request (namespace/name), failing when there is none: the tests
// that keep requests need some to keep. It lists through v1beta1, served with the gate on or off.
func requestNames(t *testing.T) []string {
	t.Helper()
	var l v1beta1.DynamoGraphDeploymentRequestList
	if err := k8s.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range l.Items {
		names = append(names, d.Namespace+"/"+d.Name)
	}
	if len(names) == 0 {
		t.Fatal("no requests to keep: the earlier tests created none")
	}
	return names
}

func requireSameRequests(t *testing.T, before []string, after string) {
	t.Helper()
	if diff := cmp.Diff(before, requestNames(t)); diff != "" {
		t.Errorf("requests before and after %s (-before +after):\n%s", after, diff)
	}
}

func requireCRDs(t *testing.T) {
	t.Helper()
	for _, crd := range []string{"dynamographdeploymentrequests", "dynamographdeploymentruns", "dynamographdeploymentcandidates"} {
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: crd + ".nvidia.com"}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("CRD %s.nvidia.com: %v", crd, err)
		}
	}
}

func requireGone(t *testing.T, obj client.Object, key client.ObjectKey) {
	t.Helper()
	if err := k8s.Get(context.Background(), key, obj); !apierrors.IsNotFound(err) {
		t.Errorf("%T %s: %v, want NotFound", obj, key, err)
	}
}

// TestUninstallKeepsCRDsAndRequests (last: it removes the release): helm uninstall removes the
// operator and its webhook configurations (gone since the upgrade; checked again) but keeps the
// CRDs, so no request is lost.
func TestUninstallKeepsCRDsAndRequests(t *testing.T) {
	// helm removes the operator's RBAC while its pod is still stopping.
	sandboxtest.ExpectDenials(t)
	before := requestNames(t)
	if out, err := helm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	requireCRDs(t)
	requireSameRequests(t, before, "uninstall")
	requireGone(t, &appsv1.Deployment{}, client.ObjectKey{Namespace: namespace, Name: fullname})
	requireGone(t, &admissionregistrationv1.MutatingWebhookConfiguration{}, client.ObjectKey{Name: fullname + "-mutating"})
	requireGone(t, &admissionregistrationv1.ValidatingWebhookConfiguration{}, client.ObjectKey{Name: fullname + "-validating"})
}

func rawJSON(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
