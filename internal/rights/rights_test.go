package rights_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/rights"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

// TestReviewed: the reviewed user is read from its annotation; a value that is not a user is an
// error naming the annotation, and no annotation is no user.
func TestReviewed(t *testing.T) {
	deployer := authenticationv1.UserInfo{Username: "deployer", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}}}
	tests := []struct {
		name       string
		annotation *string
		want       authenticationv1.UserInfo
		wantOK     bool
		wantErr    string
	}{
		{name: "absent"},
		{name: "encoded", annotation: ptr(rights.Encode(deployer)), want: deployer, wantOK: true},
		{name: "not JSON", annotation: ptr("deployer"), wantErr: v1beta2.AnnotationReviewedUser},
		{name: "no username", annotation: ptr(`{"groups":["system:masters"]}`), wantErr: v1beta2.AnnotationReviewedUser},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := builders.Request("ns", "r").Obj()
			if tc.annotation != nil {
				d.Annotations = map[string]string{v1beta2.AnnotationReviewedUser: *tc.annotation}
			}
			got, ok, err := rights.Reviewed(d)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.wantOK {
				t.Fatalf("ok %v err %v, want ok %v", ok, err, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// reviews answers SubjectAccessReviews from a set of allowed "verb resource" rights, counting
// the questions and recording who was asked about.
type reviews struct {
	allowed map[string]bool
	asked   int
	users   []string
}

func (r *reviews) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	sar := obj.(*authorizationv1.SubjectAccessReview)
	r.asked++
	r.users = append(r.users, sar.Spec.User)
	a := sar.Spec.ResourceAttributes
	res := a.Resource
	if a.Group != "" {
		res += "." + a.Group
	}
	sar.Status.Allowed = r.allowed[a.Verb+" "+res]
	return nil
}

// TestCheckerAsksForTheReviewedUser: the Checker asks the API server about the user the request
// records (not anyone else), keeps a verdict for CheckTTL per request, generation and recorded
// user, and asks again after it, for a new generation or another recorded user. A denial names
// the user and each missing right; a request that records no user is denied, saying so.
func TestCheckerAsksForTheReviewedUser(t *testing.T) {
	ctx := context.Background()
	d := builders.Request("ns", "r").AutoApply("r-dgd").Obj()
	d.UID, d.Generation = "uid-1", 1
	d.Annotations = map[string]string{v1beta2.AnnotationReviewedUser: rights.Encode(authenticationv1.UserInfo{Username: "deployer"})}
	sar := &reviews{allowed: map[string]bool{"create dynamographdeployments.nvidia.com": true, "update dynamographdeployments.nvidia.com": true, "create pods": true}}
	now := time.Unix(1000, 0)
	reader := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(d.DeepCopy()).Build()
	c := &rights.Checker{SAR: sar, Reader: reader, Now: func() time.Time { return now }}

	denial := func() string {
		t.Helper()
		got, err := c.Denial(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := denial(); got != "" || sar.asked != 3 {
		t.Fatalf("denial %q after %d questions, want none after 3", got, sar.asked)
	}
	if diff := cmp.Diff([]string{"deployer", "deployer", "deployer"}, sar.users); diff != "" {
		t.Errorf("asked about (-want +got):\n%s", diff)
	}
	delete(sar.allowed, "create pods")
	now = now.Add(rights.CheckTTL - time.Second)
	if got := denial(); got != "" || sar.asked != 3 {
		t.Errorf("within the TTL: denial %q after %d questions, want the kept verdict", got, sar.asked)
	}
	now = now.Add(2 * time.Second)
	got := denial()
	if sar.asked != 6 || !strings.Contains(got, `"deployer"`) || !strings.Contains(got, "create pods (spec.deployment.autoApply") {
		t.Errorf("after the TTL: denial %q after %d questions, want one naming deployer and create pods after 6", got, sar.asked)
	}

	sar.allowed["create pods"] = true
	d.Generation = 2
	stored := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(d), stored); err != nil {
		t.Fatal(err)
	}
	stored.Generation = 2
	if err := reader.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if got := denial(); got != "" || sar.asked != 9 {
		t.Errorf("a new generation: denial %q after %d questions, want asked again and none", got, sar.asked)
	}

	unrecorded := d.DeepCopy()
	unrecorded.UID, unrecorded.Annotations = "uid-2", nil
	if got, err := c.DenialOfWhole(ctx, unrecorded); err != nil || !strings.Contains(got, "records no reviewed user") {
		t.Errorf("a request without a reviewed user: denial %q, err %v", got, err)
	}
}
