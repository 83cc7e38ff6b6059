package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeGate answers TokenReviews from users (token → user) and SubjectAccessReviews from allowed
// (user → allowed), and counts the reviews it was asked.
func fakeGate(users map[string]string, allowed map[string]bool) (*gate, *[]string) {
	cs := fake.NewClientset()
	var asked []string
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		asked = append(asked, "token "+tr.Spec.Token)
		if u, ok := users[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
				User: authenticationv1.UserInfo{Username: u, Groups: []string{"system:authenticated"}}}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		na := sar.Spec.NonResourceAttributes
		asked = append(asked, "access "+sar.Spec.User+" "+na.Verb+" "+na.Path)
		sar.Status.Allowed = allowed[sar.Spec.User] && na.Path == "/metrics" && na.Verb == "get"
		return true, sar, nil
	})
	return &gate{tokens: cs.AuthenticationV1().TokenReviews(), reviews: cs.AuthorizationV1().SubjectAccessReviews(),
		users: cache.NewLRUExpireCache(cacheSize), verdicts: cache.NewLRUExpireCache(cacheSize)}, &asked
}

// TestGate: 401 without a bearer token or with one the API server does not authenticate, 403
// for a user it does not allow the path, 200 otherwise; and what the API server answered is
// reused: a scraper's second scrape asks it nothing.
func TestGate(t *testing.T) {
	g, asked := fakeGate(map[string]string{"scraper-token": "scraper", "stranger-token": "stranger"},
		map[string]bool{"scraper": true})
	steps := []struct {
		method, path, header string
		want                 int
		wantAsked            []string
	}{
		{"GET", "/metrics", "", http.StatusUnauthorized, nil},
		{"GET", "/metrics", "Basic c2NyYXBlcjo=", http.StatusUnauthorized, nil},
		{"GET", "/metrics", "Bearer ", http.StatusUnauthorized, nil},
		{"GET", "/metrics", "Bearer forged", http.StatusUnauthorized, []string{"token forged"}},
		{"GET", "/metrics", "Bearer forged", http.StatusUnauthorized, nil},
		{"GET", "/metrics", "Bearer stranger-token", http.StatusForbidden,
			[]string{"token stranger-token", "access stranger get /metrics"}},
		{"GET", "/metrics", "Bearer scraper-token", http.StatusOK,
			[]string{"token scraper-token", "access scraper get /metrics"}},
		{"GET", "/metrics", "bearer  scraper-token ", http.StatusOK, nil},
		{"POST", "/metrics", "Bearer scraper-token", http.StatusForbidden, []string{"access scraper post /metrics"}},
		{"GET", "/debug", "Bearer scraper-token", http.StatusForbidden, []string{"access scraper get /debug"}},
		{"GET", "/metrics", "Bearer stranger-token", http.StatusForbidden, nil},
	}
	for i, s := range steps {
		*asked = nil
		req := httptest.NewRequest(s.method, s.path, nil)
		if s.header != "" {
			req.Header.Set("Authorization", s.header)
		}
		code, msg := g.admit(req)
		if code != s.want {
			t.Errorf("step %d (%s %s, %q): %d (%s), want %d", i, s.method, s.path, s.header, code, msg, s.want)
		}
		if diff := cmp.Diff(s.wantAsked, *asked); diff != "" {
			t.Errorf("step %d (%s %s, %q): the API server was asked (-want +got):\n%s", i, s.method, s.path, s.header, diff)
		}
	}
}

// TestVerdictKeyNamesTheWholeUser: two users who differ only in a group, a UID or an extra value
// get separate verdicts (the review is asked about all of them).
func TestVerdictKeyNamesTheWholeUser(t *testing.T) {
	base := authenticationv1.UserInfo{Username: "u", UID: "1", Groups: []string{"a"},
		Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}
	variants := []authenticationv1.UserInfo{
		{Username: "u", UID: "1", Groups: []string{"a", "system:masters"}, Extra: base.Extra},
		{Username: "u", UID: "2", Groups: base.Groups, Extra: base.Extra},
		{Username: "u", UID: "1", Groups: base.Groups, Extra: map[string]authenticationv1.ExtraValue{"k": {"w"}}},
		{Username: "u", UID: "1", Groups: base.Groups},
	}
	key := verdictKey(&base, "get", "/metrics")
	for _, v := range variants {
		if verdictKey(&v, "get", "/metrics") == key {
			t.Errorf("%+v has the verdict key of %+v", v, base)
		}
	}
	if verdictKey(&base, "get", "/metrics") != key {
		t.Error("the verdict key of one user is not stable")
	}
}
