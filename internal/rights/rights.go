// Package rights asks the API server whether a user holds the rights the operator exercises on
// their behalf for a request (one SubjectAccessReview per right of admission.RequiredAccess),
// and reads the record of whose rights admission reviewed (v1beta2.AnnotationReviewedUser). The
// validating webhook asks when a request is admitted; the request's reconcilers ask again,
// through a Checker, before every write they make for the request, so both ask the same
// questions (docs/operate/security.md, "Rights for as long as the operator acts").
package rights

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
)

// The webhook and the reconcilers ask the API server whether the reviewed user holds a right:
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Creator creates SubjectAccessReviews (the manager's client).
type Creator interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

// Result is what a review found.
type Result struct {
	// Missing are the rights of admission.RequiredAccess the user lacks, each once, in the order
	// RequiredAccess lists them.
	Missing []admission.Access
	// Restricted are the refusals of podpatch.Restricted of the spec's pod template overrides,
	// when the user holds every required right but may not create pods.
	Restricted field.ErrorList
}

// Denied tells whether the operator may not act on the spec for the user.
func (r Result) Denied() bool { return len(r.Missing) > 0 || len(r.Restricted) > 0 }

// Review asks the API server, in namespace ns, whether user holds every right
// admission.RequiredAccess lists for spec; when they do and spec has pod template overrides,
// whether they may create pods, and if not which overrides podpatch.Restricted refuses. Each
// distinct right is asked once.
func Review(ctx context.Context, c Creator, user authenticationv1.UserInfo, ns string, spec *v1beta2.DynamoGraphDeploymentRequestSpec) (Result, error) {
	allowed := map[string]bool{}
	check := func(a admission.Access) (bool, error) {
		key := a.String()
		if v, done := allowed[key]; done {
			return v, nil
		}
		ok, err := subjectAccess(ctx, c, user, ns, a)
		if err != nil {
			return false, err
		}
		allowed[key] = ok
		return ok, nil
	}
	var res Result
	seen := map[string]bool{}
	for _, a := range admission.RequiredAccess(spec) {
		ok, err := check(a)
		if err != nil {
			return Result{}, err
		}
		if !ok && !seen[a.String()] {
			seen[a.String()] = true
			res.Missing = append(res.Missing, a)
		}
	}
	if len(res.Missing) > 0 || !admission.HasOverrides(spec) {
		return res, nil
	}
	canCreatePods, err := check(admission.CreatePods)
	if err != nil {
		return Result{}, err
	}
	if !canCreatePods {
		res.Restricted = admission.RestrictOverrides(spec)
	}
	return res, nil
}

// subjectAccess asks the API server whether user may do a in namespace ns.
func subjectAccess(ctx context.Context, c Creator, user authenticationv1.UserInfo, ns string, a admission.Access) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: a.Verb, Group: a.Group, Resource: a.Resource, Name: a.Name,
		},
	}}
	if err := c.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("reviewing whether %q may %s: %w", user.Username, a, err)
	}
	return sar.Status.Allowed && !sar.Status.Denied, nil
}

// Encode is the value of v1beta2.AnnotationReviewedUser for user: its JSON (username, uid,
// groups, extra; map keys sorted), so that equal users always encode equally.
func Encode(user authenticationv1.UserInfo) string {
	data, err := json.Marshal(user)
	if err != nil {
		panic(err) // strings, lists and maps of strings always marshal
	}
	return string(data)
}

// Reviewed is the user whose rights admission last reviewed for dgdr, from its annotation;
// ok is false when the request records none.
func Reviewed(dgdr *v1beta2.DynamoGraphDeploymentRequest) (user authenticationv1.UserInfo, ok bool, err error) {
	value, found := dgdr.Annotations[v1beta2.AnnotationReviewedUser]
	if !found {
		return user, false, nil
	}
	if err := json.Unmarshal([]byte(value), &user); err != nil || user.Username == "" {
		return user, false, fmt.Errorf("annotation %s is not a user: %q", v1beta2.AnnotationReviewedUser, value)
	}
	return user, true, nil
}

// Message says, for people, that user lacks rights for the request in namespace ns, naming each
// missing right and the field that needs it (the operator's Deployed and re-search messages).
func (r Result) Message(user, ns string) string {
	parts := make([]string, 0, len(r.Missing)+1)
	for _, a := range r.Missing {
		parts = append(parts, fmt.Sprintf("%s (%s: %s)", a, a.Path, a.Reason))
	}
	if len(r.Restricted) > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s: without it a user may override only the allowlist: %s)",
			admission.CreatePods, field.NewPath("spec", "deployment", "podTemplateOverrides"), r.Restricted.ToAggregate()))
	}
	return fmt.Sprintf("user %q, whose rights admission reviewed for this request, no longer holds in namespace %q: %s",
		user, ns, strings.Join(parts, "; "))
}
