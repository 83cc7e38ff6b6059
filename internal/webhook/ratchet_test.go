package webhook_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

const legacyLabel = "dgdr-test/legacy"

// setLegacyExemption makes the validating webhook skip namespaces labelled legacy, standing in
// for objects stored before the bundled schema became stricter.
func setLegacyExemption(t *testing.T, exempt bool) {
	t.Helper()
	ctx := context.Background()
	list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := k8s.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		cfg := &list.Items[i]
		for j := range cfg.Webhooks {
			if !strings.HasPrefix(cfg.Webhooks[j].Name, "vdynamographdeploymentrequest") {
				continue
			}
			if exempt {
				cfg.Webhooks[j].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: legacyLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}}
			} else {
				cfg.Webhooks[j].NamespaceSelector = &metav1.LabelSelector{}
			}
		}
		if err := k8s.Update(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
}

func legacyRequest(ns, name, overrides string) *v1beta2.DynamoGraphDeploymentRequest {
	return builders.Request(ns, name).Overrides(overrides).Obj()
}

// TestRatcheting: an update is not rejected for a problem of the effective input that the stored
// object already had (it comes back as a warning); a new problem is rejected.
func TestRatcheting(t *testing.T) {
	ctx := context.Background()
	legacy := testenv.LabelledNamespace(t, k8s, "legacy", map[string]string{legacyLabel: "true"})
	// A problem the bundled schema reports: two stop counts.
	bad := `{"traffic":{"stop":{"requests_per_load_unit":10}}}`

	// Without exemption, such a request cannot be created.
	err := k8s.Create(ctx, legacyRequest("default", "fresh-bad", bad))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.aisimulate.inputOverrides.traffic.stop") {
		t.Fatalf("create with a problem: want Invalid at spec.aisimulate.inputOverrides.traffic.stop, got %v", err)
	}

	setLegacyExemption(t, true)
	t.Cleanup(func() { setLegacyExemption(t, false) })
	old := legacyRequest(legacy, "stored-before", bad)
	poll.WaitFor(t, 20*time.Second, 200*time.Millisecond, "the API server to pick up the webhook exemption", func(ctx context.Context) (bool, string, error) {
		return true, "", k8s.Create(ctx, old)
	})
	setLegacyExemption(t, false)

	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	wc, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until validation applies to the namespace again: a new bad object is rejected there.
	poll.WaitFor(t, 20*time.Second, 200*time.Millisecond, "validation to come back", func(ctx context.Context) (bool, string, error) {
		err := wc.Create(ctx, legacyRequest(legacy, "probe", bad))
		if err == nil {
			_ = wc.Delete(ctx, legacyRequest(legacy, "probe", bad))
			return false, "a bad request was admitted", nil
		}
		return apierrors.IsInvalid(err), err.Error(), nil
	})
	w.take()

	// An unrelated edit of the stored object is allowed, with the old problem as a warning.
	current := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := wc.Get(ctx, client.ObjectKeyFromObject(old), current); err != nil {
		t.Fatal(err)
	}
	current.Spec.Recommendation.MaxCandidates = ptr.To[int32](7)
	if err := wc.Update(ctx, current); err != nil {
		t.Fatalf("an unrelated edit must be allowed (ratcheting): %v", err)
	}
	got := strings.Join(w.take(), "\n")
	if !strings.Contains(got, "existing problem kept") || !strings.Contains(got, "traffic.stop") {
		t.Errorf("want a warning naming the kept problem, got %q", got)
	}

	// A new problem is denied, even though an old one is tolerated.
	current.Spec.AISimulate.InputOverrides = &runtime.RawExtension{Raw: []byte(`{"traffic":{"stop":{"requests_per_load_unit":10}},"optimizer":{"algorithm":"grid"}}`)}
	err = wc.Update(ctx, current)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.aisimulate.inputOverrides.optimizer.algorithm") {
		t.Fatalf("a new problem must be denied at its override path, got %v", err)
	}
	if strings.Contains(err.Error(), "inputOverrides.traffic.stop") {
		t.Errorf("the old problem must not be part of the denial: %v", err)
	}
	if got := strings.Join(w.take(), "\n"); !strings.Contains(got, "traffic.stop") {
		t.Errorf("the denial still carries the old problem as a warning, got %q", got)
	}

	// Fixing the old problem is of course allowed, without warnings.
	if err := wc.Get(ctx, client.ObjectKeyFromObject(old), current); err != nil {
		t.Fatal(err)
	}
	current.Spec.AISimulate.InputOverrides = &runtime.RawExtension{Raw: []byte(`{"traffic":{"stop":{"requests":null,"requests_per_load_unit":10}}}`)}
	if err := wc.Update(ctx, current); err != nil {
		t.Fatalf("fixing the problem: %v", err)
	}
	if got := w.take(); len(got) != 0 {
		t.Errorf("no warnings expected after the fix, got %v", got)
	}
}
