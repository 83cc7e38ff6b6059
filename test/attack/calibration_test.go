//go:build attack

package attack

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// stubVerifications is how many of T's 20 stub observations come from real verifications of its
// own deployments; T writes the others into its namespace's profile itself.
const (
	stubVerifications = 2
	stubObservations  = 20
)

// stubRequest is verifiedRequest with a few requests against the stub frontend, given the time
// AIPerf's start takes on a loaded machine.
func stubRequest(name, deployment string) string {
	return fmt.Sprintf(verifiedRequest, name, deployment, 4, 900)
}

// TestStubObservationsStayInTheirNamespace is the attack on calibration from a tenant T with the
// usual edit rights in namespace a (requests, deployments, pods, ConfigMaps): T's deployments
// answer from a stub frontend far faster than predicted, so each verification is a stub
// observation (two here: AIPerf is slow to start on a loaded machine); T adds 18 more to its
// namespace's profile ConfigMap by hand, some under namespace b's name and the trusted
// namespace's, and one whose metric no Run's status can hold. 20 stub observations of a's make a correction a's own
// Runs use (the sandbox uses one from a single observation); a search in namespace b of the same
// model and GPU starts with no correction at all, its Candidates carry none, and b has no profile.
// With one cluster-wide profile, b's search started with T's figures.
func TestStubObservationsStayInTheirNamespace(t *testing.T) {
	ctx := context.Background()
	a, b := newNamespace(t), newNamespace(t)
	tenant := asUser(t, a, "tenant-t", append(append([]rbacv1.PolicyRule(nil), deployerRules...),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "update"}}))

	port := sandboxtest.ServingFrontend(t, "meta-llama/Llama-3.1-8B-Instruct")
	for i := range stubVerifications {
		d, err := sandboxtest.ParseRequest(stubRequest(fmt.Sprintf("stub%d", i), fmt.Sprintf("llama-stub%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		d.Namespace = a
		if err := tenant.Create(ctx, d); err != nil {
			t.Fatalf("T creating its verified request: %v", err)
		}
	}
	for i := range stubVerifications {
		env.ReadyBehind(t, a, fmt.Sprintf("llama-stub%d", i), port, searchTimeout)
	}
	for i := range stubVerifications {
		name := fmt.Sprintf("stub%d", i)
		v := verificationOf(t, a, name, 17*time.Minute, func(v *v1beta2.VerificationStatus) bool {
			return v.Phase == v1beta2.VerificationFailed || v.Calibration != nil
		})
		if c := v.Calibration; v.Phase != v1beta2.VerificationSucceeded || c == nil || c.Recorded == nil || !*c.Recorded {
			t.Fatalf("%s: verification %s %s: %s; calibration %+v: want a recorded observation", name, v.Phase, v.Reason, v.Message, c)
		}
	}

	// T fills its namespace's profile up to 20 stub observations like stub0's, and writes some in
	// under b's name and the trusted namespace's.
	stub := stubObservation(t, a, "stub0")
	cm := &corev1.ConfigMap{}
	err := tenant.Get(ctx, client.ObjectKey{Namespace: a, Name: calibration.ConfigMapName}, cm)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: calibration.ConfigMapName}, Data: map[string]string{calibration.DataKey: `{"observations":[]}`}}
	} else if err != nil {
		t.Fatal(err)
	}
	var p calibration.Profile
	if err := json.Unmarshal([]byte(cm.Data[calibration.DataKey]), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Observations) != stubVerifications {
		t.Errorf("a's profile after %d verifications holds %d observations", stubVerifications, len(p.Observations))
	}
	for i := range stubObservations - stubVerifications {
		o := stub
		o.MeasuredAt = stub.MeasuredAt.Add(time.Duration(i+1) * time.Second)
		o.Source = fmt.Sprintf("%s/forged@gen%d", a, i+1)
		p.Observations = append(p.Observations, o)
	}
	for i, ns := range []string{b, manager.TrustedCalibrationNamespace} {
		o := stub
		o.Source = fmt.Sprintf("%s/forged@gen%d", ns, i+1)
		p.Observations = append(p.Observations, o)
	}
	// And one whose metric no Run's status can hold: a Run calibrated with it could never record
	// its input.
	bad := stub
	bad.Metrics = map[string]calibration.Pair{"ttftP90Ms": {Predicted: 1, Observed: 1000}}
	bad.Source = a + "/unrecordable@gen1"
	p.Observations = append(p.Observations, bad)
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[calibration.DataKey] = string(data)
	if cm.ResourceVersion == "" {
		err = tenant.Create(ctx, cm)
	} else {
		err = tenant.Update(ctx, cm)
	}
	if err != nil {
		t.Fatalf("T writing its namespace's profile: %v", err)
	}

	// The same search, without a deployment, in a (T's own: calibrated) and in b (the victim's).
	search := func(ns string) *v1beta2.DynamoGraphDeploymentRun {
		t.Helper()
		d, err := sandboxtest.ParseRequest(stubRequest("search", "unused"))
		if err != nil {
			t.Fatal(err)
		}
		d.Namespace, d.Spec.Deployment = ns, nil
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		run := &v1beta2.DynamoGraphDeploymentRun{}
		sandboxtest.WaitFor(t, searchTimeout, poll, "the Run of "+ns+"/search to record its input", func(ctx context.Context) (bool, string, error) {
			cur := &v1beta2.DynamoGraphDeploymentRequest{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
				return false, "", err
			}
			s := cur.Status
			var name string
			switch {
			case s.ActiveRunRef != nil:
				name = s.ActiveRunRef.Name
			case s.LatestRun != nil:
				name = s.LatestRun.Name
			default:
				return false, "no Run", nil
			}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, run); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
			a := run.Status.AISimulate
			return a != nil && a.Input != nil, "no recorded input", nil
		})
		return run
	}
	own := search(a)
	if c := own.Status.Calibration; c == nil || len(c.Corrections) == 0 {
		t.Fatalf("T's own Run %s records no correction: the stub observations are not effective, so the attack proves nothing", own.Name)
	}
	victim := search(b)
	if c := victim.Status.Calibration; c != nil {
		t.Errorf("the Run %s/%s in b records corrections from a's stub observations: %+v", b, victim.Name, c)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: b, Name: calibration.ConfigMapName}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("b has a calibration profile, or reading it failed: %v", err)
	}
	// b's Candidates, published once its search ends, carry no calibrated prediction.
	victim = env.WaitRunDone(t, b, victim.Name, searchTimeout)
	var cands v1beta2.DynamoGraphDeploymentCandidateList
	if err := k8s.List(ctx, &cands, client.InNamespace(b)); err != nil {
		t.Fatal(err)
	}
	if len(cands.Items) == 0 {
		t.Fatalf("the Run in b published no Candidates: %+v", victim.Status.Conditions)
	}
	for _, c := range cands.Items {
		if metav1.IsControlledBy(&c, victim) && c.Status.Calibration != nil {
			t.Errorf("candidate %s/%s carries a calibrated prediction: %+v", b, c.Name, c.Status.Calibration)
		}
	}
}

// stubObservation is the observation the verification of request name in ns made: the key of
// its deployed Candidate, and the predicted and observed metrics of its status.
func stubObservation(t *testing.T, ns, name string) calibration.Observation {
	t.Helper()
	ctx := context.Background()
	d := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	v := d.Status.Verification
	cand := &v1beta2.DynamoGraphDeploymentCandidate{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.Candidate}, cand); err != nil {
		t.Fatal(err)
	}
	key, err := calibration.CandidateKey(&d.Spec, cand)
	if err != nil {
		t.Fatal(err)
	}
	o := calibration.Observation{Key: key, Metrics: map[string]calibration.Pair{}, MeasuredAt: v.MeasuredAt.UTC(), Source: fmt.Sprintf("%s/%s@gen%d", ns, name, v.DeploymentGeneration)}
	for _, m := range v.Metrics {
		if m.Predicted != nil && m.Observed != nil && slices.Contains(calibration.Metrics, string(m.Name)) {
			o.Metrics[string(m.Name)] = calibration.Pair{Predicted: *m.Predicted, Observed: *m.Observed}
		}
	}
	return o
}
