package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
)

// MutateRequestPath is where the defaulting webhook of requests is served (see the marker in
// request.go).
const MutateRequestPath = "/mutate-nvidia-com-v1beta2-dynamographdeploymentrequest"

// Setup registers every v1beta2 webhook with the manager's webhook server.
func Setup(mgr ctrl.Manager, cfg *v1alpha1.OperatorConfiguration) error {
	req, err := NewRequestWebhook(mgr, cfg)
	if err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(MutateRequestPath, DefaultingWebhook(mgr.GetScheme(), req))
	// Runs and Candidates need no webhook: their CRDs' CEL rules keep their specs immutable.
	return ctrl.NewWebhookManagedBy(mgr, &v1beta2.DynamoGraphDeploymentRequest{}).
		WithValidator(req).Complete()
}

// NewRequestWebhook returns the request webhook of mgr: with GPU discovery enabled, it reads the
// GPU Nodes through a gpunodes.Tracker of the manager's Node informer; the requesting users'
// rights are reviewed through the manager's client.
func NewRequestWebhook(mgr ctrl.Manager, cfg *v1alpha1.OperatorConfiguration) (*RequestWebhook, error) {
	req := &RequestWebhook{Config: cfg, Access: mgr.GetClient()}
	if !config.GPUDiscoveryEnabled(cfg) {
		return req, nil // the operator reads no Nodes
	}
	// Setup may run once the manager has started (self-signed certificates): NewTracker allows it.
	var err error
	if req.Nodes, err = gpunodes.NewTracker(context.Background(), mgr.GetCache()); err != nil {
		return nil, fmt.Errorf("watching Nodes for GPU discovery: %w", err)
	}
	return req, nil
}

// DefaultingWebhook is the mutating admission webhook of requests (the benchmarks serve it too).
func DefaultingWebhook(scheme *runtime.Scheme, req *RequestWebhook) *admission.Webhook {
	recoverPanic := true
	return &admission.Webhook{
		Handler:      &defaultDecodable{next: admission.WithDefaulter(scheme, req).Handler, maxOverrideBytes: maxOverrideBytes(req.Config)},
		RecoverPanic: &recoverPanic,
	}
}

// rawRequest is what the defaulting webhook reads of a raw request before decoding it into the
// Go types, in one pass over the document: whether it carries the spec.v1beta1 envelope, its
// name, and its pod template overrides as raw bytes.
type rawRequest struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		V1Beta1    json.RawMessage `json:"v1beta1"`
		Deployment struct {
			PodTemplateOverrides map[string]json.RawMessage `json:"podTemplateOverrides"`
		} `json:"deployment"`
	} `json:"spec"`
	// err is the decoding's error: a field of an unexpected type leaves that field unset and
	// the others decoded (encoding/json), anything else leaves nothing decoded.
	err error
}

func readRawRequest(raw []byte) *rawRequest {
	r := &rawRequest{}
	r.err = json.Unmarshal(raw, r)
	return r
}

// v1beta1Native reports whether the request carries the spec.v1beta1 envelope. Only a spec that
// is no object hides it: a field of a wrong type elsewhere does not.
func (r *rawRequest) v1beta1Native() bool {
	var typeErr *json.UnmarshalTypeError
	return (r.err == nil || errors.As(r.err, &typeErr)) && r.Spec.V1Beta1 != nil
}

// defaultDecodable defaults only requests that decode into the Go types. Mutating admission runs
// before the API server's schema validation, so a request with a wrong type (a string where a
// number belongs) would otherwise be refused by the decoder with a message and no field path.
// Letting it through unchanged lets the schema validation reject it with proper field errors.
//
// A request with a pod template override over limits.maxPodTemplateOverrideBytes is refused
// here already (422 at the override's path, as the validating webhook would): defaulting it
// (decoding, re-encoding and diffing a document of megabytes into a JSON patch), and the API
// server's schema validation and second webhook call for it, are what would cost the time the
// cap protects.
type defaultDecodable struct {
	next             admission.Handler
	maxOverrideBytes int
}

func maxOverrideBytes(cfg *v1alpha1.OperatorConfiguration) int {
	if cfg == nil || cfg.Limits.MaxPodTemplateOverrideBytes == nil {
		return 0
	}
	return int(*cfg.Limits.MaxPodTemplateOverrideBytes)
}

// oversizedOverrides returns a TooLong error for each pod template override of the request that
// is longer than limit (0: no limit), and the request's name; nothing when the request did not
// decode whole (the schema validation reports why). The overrides are raw bytes; nothing is
// patched.
func (r *rawRequest) oversizedOverrides(limit int) (string, field.ErrorList) {
	if limit <= 0 || r.err != nil {
		return "", nil
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "deployment", "podTemplateOverrides")
	for _, k := range slices.Sorted(maps.Keys(r.Spec.Deployment.PodTemplateOverrides)) {
		if len(r.Spec.Deployment.PodTemplateOverrides[k]) > limit {
			errs = append(errs, field.TooLong(p.Child(k), "", limit))
		}
	}
	return r.Metadata.Name, errs
}

func (h *defaultDecodable) Handle(ctx context.Context, req admission.Request) admission.Response {
	raw := readRawRequest(req.Object.Raw)
	if raw.v1beta1Native() {
		// The Dynamo operator's request: not even re-encoded, so nothing can change.
		return admission.Allowed("not defaulted: a v1beta1 request is owned by the Dynamo operator")
	}
	if name, errs := raw.oversizedOverrides(h.maxOverrideBytes); len(errs) > 0 {
		gk := v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRequest").GroupKind()
		status := apierrors.NewInvalid(gk, name, errs).ErrStatus
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
	}
	resp := h.next.Handle(ctx, req)
	// Defaulting only adds: a removal in the patch would come from re-encoding the Go types
	// (an empty object the user wrote, such as model: {name: ""}), and dropping it would hide the
	// field the schema must report.
	resp.Patches = slices.DeleteFunc(resp.Patches, func(op jsonpatch.JsonPatchOperation) bool { return op.Operation == "remove" })
	// controller-runtime's defaulting handler answers 400 exactly when the object does not decode.
	if !resp.Allowed && resp.Result != nil && resp.Result.Code == http.StatusBadRequest &&
		(req.Operation == admissionv1.Create || req.Operation == admissionv1.Update) {
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
			Allowed: true,
			Result:  &metav1.Status{Code: http.StatusOK, Message: "not defaulted: the object does not decode; schema validation reports why"},
		}}
	}
	return resp
}
