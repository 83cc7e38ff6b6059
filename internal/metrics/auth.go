package metrics

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long the endpoint keeps what the API server answered. A scraper asks every few seconds
// with the same token: without a cache each scrape would cost two API calls. A revoked binding
// takes effect within allowTTL, a revoked token within tokenTTL.
const (
	tokenTTL      = time.Minute
	allowTTL      = 5 * time.Minute
	denyTTL       = 30 * time.Second
	cacheSize     = 1024
	reviewTimeout = 10 * time.Second
)

// AuthenticatedAndAuthorized is the metrics server's filter: the caller's bearer token is
// authenticated with a TokenReview and the caller's right to the request's non-resource URL
// (get /metrics) with a SubjectAccessReview, both on the API server, as kube-rbac-proxy and
// controller-runtime's filters package do. It is written on client-go alone: controller-runtime's
// filter builds on k8s.io/apiserver's delegating authenticator and authorizer, which bring
// 9.5 MB of code (CEL, the apiserver's configuration API) into the binary and its resident
// memory for two API calls (docs/develop/performance.md, issue 43).
func AuthenticatedAndAuthorized(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	g := &gate{tokens: authn.TokenReviews(), reviews: authz.SubjectAccessReviews(),
		users: cache.NewLRUExpireCache(cacheSize), verdicts: cache.NewLRUExpireCache(cacheSize)}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			code, msg := g.admit(req)
			if code != http.StatusOK {
				if code == http.StatusInternalServerError {
					log.Error(errors.New(msg), "Metrics request not admitted")
				} else {
					log.V(4).Info("Metrics request refused", "reason", msg)
				}
				http.Error(w, http.StatusText(code), code)
				return
			}
			next.ServeHTTP(w, req)
		}), nil
	}, nil
}

// gate holds the review clients and what they answered.
type gate struct {
	tokens  authenticationclient.TokenReviewInterface
	reviews authorizationclient.SubjectAccessReviewInterface
	// users maps a token's SHA-256 to its *authenticationv1.UserInfo (nil: not authenticated).
	users *cache.LRUExpireCache
	// verdicts maps a user, verb and path to whether the API server allowed it.
	verdicts *cache.LRUExpireCache
}

// admit returns 200 for a request whose caller may do what it asks, else 401, 403 or 500 and why.
func (g *gate) admit(req *http.Request) (int, string) {
	token, ok := bearerToken(req.Header.Get("Authorization"))
	if !ok {
		return http.StatusUnauthorized, "no bearer token"
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
	defer cancel()
	user, err := g.authenticate(ctx, token)
	if err != nil {
		return http.StatusInternalServerError, fmt.Sprintf("reviewing the token: %v", err)
	}
	if user == nil {
		return http.StatusUnauthorized, "token not authenticated"
	}
	verb := strings.ToLower(req.Method)
	allowed, err := g.authorize(ctx, user, verb, req.URL.Path)
	if err != nil {
		return http.StatusInternalServerError, fmt.Sprintf("reviewing %s's access: %v", user.Username, err)
	}
	if !allowed {
		return http.StatusForbidden, fmt.Sprintf("%s may not %s %s", user.Username, verb, req.URL.Path)
	}
	return http.StatusOK, ""
}

// bearerToken is the token of an "Authorization: Bearer <token>" header.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
		return "", false
	}
	return token, true
}

// authenticate returns the user the API server authenticates token as, or nil.
func (g *gate) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	if v, ok := g.users.Get(key); ok {
		return v.(*authenticationv1.UserInfo), nil
	}
	review, err := g.tokens.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	var user *authenticationv1.UserInfo
	ttl := denyTTL
	if review.Status.Authenticated {
		user, ttl = &review.Status.User, tokenTTL
	}
	g.users.Add(key, user, ttl)
	return user, nil
}

// authorize reports whether the API server allows user verb on the non-resource URL path.
func (g *gate) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (bool, error) {
	key := verdictKey(user, verb, path)
	if v, ok := g.verdicts.Get(key); ok {
		return v.(bool), nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review, err := g.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb}}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	ttl := denyTTL
	if review.Status.Allowed {
		ttl = allowTTL
	}
	g.verdicts.Add(key, review.Status.Allowed, ttl)
	return review.Status.Allowed, nil
}

// verdictKey names a user (all of what the review is asked about), a verb and a path.
func verdictKey(user *authenticationv1.UserInfo, verb, path string) string {
	var b strings.Builder
	for _, s := range []string{user.Username, user.UID, verb, path} {
		fmt.Fprintf(&b, "%q;", s)
	}
	fmt.Fprintf(&b, "%q;", user.Groups)
	keys := make([]string, 0, len(user.Extra))
	for k := range user.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q;", k, []string(user.Extra[k]))
	}
	return b.String()
}
