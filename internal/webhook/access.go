package webhook

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	dgdradmission "github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/rights"
)

// reviewAccess checks, for an admission that needs it (dgdradmission.NeedsAccessReview), that
// the requesting user holds every right dgdradmission.RequiredAccess lists (403 naming each
// missing right otherwise), and, when the user may not create pods, that the pod template
// overrides stay within podpatch.Restricted (422 at each refused field): rights.Review, which
// the operator asks again before it acts. A call without an admission request in ctx (dgdrctl,
// benchmarks calling the validator directly) has no user and is not checked; the webhook server
// always provides one.
func (w *RequestWebhook) reviewAccess(ctx context.Context, old, dgdr *v1beta2.DynamoGraphDeploymentRequest) error {
	if !dgdradmission.NeedsAccessReview(old, dgdr) {
		return nil
	}
	if len(dgdradmission.RequiredAccess(&dgdr.Spec)) == 0 && !dgdradmission.HasOverrides(&dgdr.Spec) {
		return nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil //nolint:nilerr // not an admission: no user whose rights to check
	}
	if w.Access == nil {
		return apierrors.NewInternalError(fmt.Errorf("the webhook cannot review the requesting user's rights: no SubjectAccessReview client"))
	}
	ns := req.Namespace
	if ns == "" {
		ns = dgdr.Namespace
	}
	res, err := rights.Review(ctx, w.Access, req.UserInfo, ns, &dgdr.Spec)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(res.Missing) > 0 {
		return forbidden(dgdr, dgdradmission.MissingAccessMessage(req.UserInfo.Username, ns, res.Missing))
	}
	if len(res.Restricted) > 0 {
		return invalid(dgdr, res.Restricted)
	}
	return nil
}

// reviewedUserPath is the field path of the reviewed-user annotation, for refusals.
var reviewedUserPath = field.NewPath("metadata", "annotations").Key(v1beta2.AnnotationReviewedUser)

// recordReviewer sets v1beta2.AnnotationReviewedUser on an admitted request (the mutating
// webhook, after defaulting): the requesting user when the admission reviews their rights
// (a create, or an update dgdradmission.NeedsAccessReview selects), the stored value otherwise,
// whatever the request carried. Without an admission request in ctx nothing is recorded.
func recordReviewer(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil //nolint:nilerr // not an admission: no user to record
	}
	old, err := storedRequest(req)
	if err != nil {
		return err
	}
	want, ok := wantReviewer(req, old, dgdr)
	if !ok {
		delete(dgdr.Annotations, v1beta2.AnnotationReviewedUser)
		return nil
	}
	if dgdr.Annotations == nil {
		dgdr.Annotations = map[string]string{}
	}
	dgdr.Annotations[v1beta2.AnnotationReviewedUser] = want
	return nil
}

// checkReviewer refuses (422 at the annotation) a request whose v1beta2.AnnotationReviewedUser is
// not what recordReviewer sets: nobody can name another user as the reviewed one, or drop the
// record, since the mutating webhook runs before this one and its value is the only one
// admitted. Without an admission request in ctx nothing is checked.
func checkReviewer(ctx context.Context, old, dgdr *v1beta2.DynamoGraphDeploymentRequest) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil //nolint:nilerr // not an admission: nothing was recorded
	}
	want, ok := wantReviewer(req, old, dgdr)
	got, has := dgdr.Annotations[v1beta2.AnnotationReviewedUser]
	if got == want && has == ok {
		return nil
	}
	return invalid(dgdr, field.ErrorList{field.Forbidden(reviewedUserPath,
		"only admission writes it: the user whose rights it last reviewed for the request (the requesting user of a create or of an update that changes what the operator does on their behalf; otherwise the stored value)")})
}

// wantReviewer is the value AnnotationReviewedUser must have after admission req of dgdr (old:
// the stored request of an update, nil on create), and whether it must be set at all.
func wantReviewer(req admission.Request, old, dgdr *v1beta2.DynamoGraphDeploymentRequest) (string, bool) {
	if req.Operation == admissionv1.Create || dgdradmission.NeedsAccessReview(old, dgdr) {
		return rights.Encode(req.UserInfo), true
	}
	v, ok := old.Annotations[v1beta2.AnnotationReviewedUser]
	return v, ok
}

// forbidden is the 403 admission denial of a request whose author lacks rights.
func forbidden(dgdr *v1beta2.DynamoGraphDeploymentRequest, msg string) error {
	gr := schema.GroupResource{Group: v1beta2.GroupVersion.Group, Resource: "dynamographdeploymentrequests"}
	err := apierrors.NewForbidden(gr, dgdr.Name, fmt.Errorf("%s", msg))
	err.ErrStatus.Code = http.StatusForbidden
	err.ErrStatus.Reason = metav1.StatusReasonForbidden
	return err
}
