package webhook

import (
	"context"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	dgdradmission "github.com/dgdr-operator/dgdr-operator/internal/admission"
)

// The validating webhook asks the API server whether the requesting user holds the rights the
// operator would exercise on their behalf:
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// AccessReviewer creates SubjectAccessReviews (the manager's client).
type AccessReviewer interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

// reviewAccess checks, for an admission that needs it (dgdradmission.NeedsAccessReview), that
// the requesting user holds every right dgdradmission.RequiredAccess lists (403 naming each
// missing right otherwise), and, when the user may not create pods, that the pod template
// overrides stay within podpatch.Restricted (422 at each refused field). A call without an
// admission request in ctx (dgdrctl, benchmarks calling the validator directly) has no user and
// is not checked; the webhook server always provides one.
func (w *RequestWebhook) reviewAccess(ctx context.Context, old, dgdr *v1beta2.DynamoGraphDeploymentRequest) error {
	if !dgdradmission.NeedsAccessReview(old, dgdr) {
		return nil
	}
	required := dgdradmission.RequiredAccess(&dgdr.Spec)
	overrides := dgdradmission.HasOverrides(&dgdr.Spec)
	if len(required) == 0 && !overrides {
		return nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil //nolint:nilerr // not an admission: no user whose rights to check
	}
	if w.Access == nil {
		return apierrors.NewInternalError(fmt.Errorf("the webhook cannot review the requesting user's rights: no SubjectAccessReview client"))
	}
	user := req.UserInfo
	ns := req.Namespace
	if ns == "" {
		ns = dgdr.Namespace
	}
	allowed := map[string]bool{}
	check := func(a dgdradmission.Access) (bool, error) {
		key := a.String()
		if v, done := allowed[key]; done {
			return v, nil
		}
		ok, err := w.subjectAccess(ctx, user, ns, a)
		if err != nil {
			return false, err
		}
		allowed[key] = ok
		return ok, nil
	}
	var missing []dgdradmission.Access
	seen := map[string]bool{}
	for _, a := range required {
		ok, err := check(a)
		if err != nil {
			return err
		}
		if !ok && !seen[a.String()] {
			seen[a.String()] = true
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return forbidden(dgdr, dgdradmission.MissingAccessMessage(user.Username, ns, missing))
	}
	if !overrides {
		return nil
	}
	canCreatePods, err := check(dgdradmission.CreatePods)
	if err != nil {
		return err
	}
	if !canCreatePods {
		if errs := dgdradmission.RestrictOverrides(&dgdr.Spec); len(errs) > 0 {
			return invalid(dgdr, errs)
		}
	}
	return nil
}

// subjectAccess asks the API server whether user may do a in namespace ns.
func (w *RequestWebhook) subjectAccess(ctx context.Context, user authenticationv1.UserInfo, ns string, a dgdradmission.Access) (bool, error) {
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
	if err := w.Access.Create(ctx, sar); err != nil {
		return false, apierrors.NewInternalError(fmt.Errorf("reviewing whether %q may %s: %w", user.Username, a, err))
	}
	return sar.Status.Allowed && !sar.Status.Denied, nil
}

// forbidden is the 403 admission denial of a request whose author lacks rights.
func forbidden(dgdr *v1beta2.DynamoGraphDeploymentRequest, msg string) error {
	gr := schema.GroupResource{Group: v1beta2.GroupVersion.Group, Resource: "dynamographdeploymentrequests"}
	err := apierrors.NewForbidden(gr, dgdr.Name, fmt.Errorf("%s", msg))
	err.ErrStatus.Code = http.StatusForbidden
	err.ErrStatus.Reason = metav1.StatusReasonForbidden
	return err
}
