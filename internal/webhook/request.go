// Package webhook serves the admission webhooks of the v1beta2 API. It is a thin shell around
// the pure defaulting and validation in internal/admission.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	dgdradmission "github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
	"github.com/dgdr-operator/dgdr-operator/internal/rights"
)

// GPU discovery and the budget warning read Nodes from the manager's Node informer (list and
// watch once, then no API call per admission; the cache keeps of a Node only its labels, whether
// it is cordoned and its allocatable GPUs):
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch

// GPUProductLabel is the Node label GPU feature discovery sets.
const GPUProductLabel = gpunodes.ProductLabel

// +kubebuilder:webhook:path=/mutate-nvidia-com-v1beta2-dynamographdeploymentrequest,mutating=true,failurePolicy=fail,sideEffects=None,groups=nvidia.com,resources=dynamographdeploymentrequests,verbs=create;update,versions=v1beta2,name=mdynamographdeploymentrequest.nvidia.com,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-nvidia-com-v1beta2-dynamographdeploymentrequest,mutating=false,failurePolicy=fail,sideEffects=None,groups=nvidia.com,resources=dynamographdeploymentrequests,verbs=create;update,versions=v1beta2,name=vdynamographdeploymentrequest.nvidia.com,admissionReviewVersions=v1

// RequestWebhook defaults and validates DynamoGraphDeploymentRequests.
type RequestWebhook struct {
	Config *v1alpha1.OperatorConfiguration
	// Nodes gives the GPU Nodes' inventory for GPU discovery and the budget warning; used only
	// when discovery is enabled. NewRequestWebhook tracks the manager's Node informer with it, so
	// an admission neither lists Nodes from the API server nor reads the cache's Nodes again
	// unless one changed.
	Nodes *gpunodes.Tracker
	// Access creates the SubjectAccessReviews that check the requesting user's rights
	// (reviewAccess); the manager's client. Required for requests that need a review.
	Access rights.Creator
}

var (
	_ admission.Defaulter[*v1beta2.DynamoGraphDeploymentRequest] = (*RequestWebhook)(nil)
	_ admission.Validator[*v1beta2.DynamoGraphDeploymentRequest] = (*RequestWebhook)(nil)
)

// Default materializes defaults (SPEC §4.1) and records whose rights admission reviews
// (recordReviewer). A request created through v1beta1 is the Dynamo operator's and is never
// defaulted here.
func (w *RequestWebhook) Default(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest) error {
	if dgdr.IsV1Beta1Native() {
		return nil
	}
	if unchanged, err := specUnchanged(ctx, dgdr); err != nil {
		return err
	} else if unchanged {
		// An update that leaves the spec as stored (metadata only, for example dgdrctl cancel)
		// is not defaulted: defaults introduced after the object was stored would otherwise
		// change its spec, bump its generation and start a new search. They materialize with
		// the next spec edit; the renderer treats them as absent until then.
		return recordReviewer(ctx, dgdr)
	}
	opts, err := w.defaultingOptions(ctx)
	if err != nil {
		return err
	}
	if errs := dgdradmission.Default(dgdr, opts); len(errs) > 0 {
		return invalid(dgdr, errs)
	}
	return recordReviewer(ctx, dgdr)
}

// ValidateCreate validates a new request.
func (w *RequestWebhook) ValidateCreate(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest) (admission.Warnings, error) {
	if dgdr.IsV1Beta1Native() {
		return nil, nil // the Dynamo operator's request; the CRD schema checks its envelope
	}
	if err := dgdradmission.ValidateNamespace(dgdr.Namespace, w.Config.Namespaces); err != nil {
		return nil, invalid(dgdr, field.ErrorList{err})
	}
	input, errs := dgdradmission.Validate(dgdr, dgdradmission.OptionsFrom(w.Config))
	if len(errs) > 0 {
		return nil, invalid(dgdr, errs)
	}
	warnings := append(input.Warnings, w.budgetWarnings(ctx, dgdr)...)
	if err := checkReviewer(ctx, nil, dgdr); err != nil {
		return warnings, err
	}
	if err := w.reviewAccess(ctx, nil, dgdr); err != nil {
		return warnings, err
	}
	return warnings, nil
}

// ValidateUpdate validates a changed request with ratcheting: effective-input problems the stored
// object already had come back as warnings. Specs are mutable: every accepted generation becomes
// a new Run.
func (w *RequestWebhook) ValidateUpdate(ctx context.Context, old, dgdr *v1beta2.DynamoGraphDeploymentRequest) (admission.Warnings, error) {
	if errs := validateNativeVersion(old, dgdr); len(errs) > 0 {
		return nil, invalid(dgdr, errs)
	}
	if dgdr.IsV1Beta1Native() {
		return nil, nil
	}
	input, warnings, errs := dgdradmission.ValidateUpdate(old, dgdr, dgdradmission.OptionsFrom(w.Config))
	if len(errs) > 0 {
		return warnings, invalid(dgdr, errs)
	}
	warnings = append(warnings, input.Warnings...)
	warnings = append(warnings, w.budgetWarnings(ctx, dgdr)...)
	if err := checkReviewer(ctx, old, dgdr); err != nil {
		return warnings, err
	}
	if err := w.reviewAccess(ctx, old, dgdr); err != nil {
		return warnings, err
	}
	return warnings, nil
}

// validateNativeVersion keeps a request in the version it was created through: which operator
// owns a request (docs/operate/coexistence.md) never changes.
func validateNativeVersion(old, dgdr *v1beta2.DynamoGraphDeploymentRequest) field.ErrorList {
	switch {
	case old.IsV1Beta1Native() && !dgdr.IsV1Beta1Native():
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "v1beta1"), "a request created through v1beta1 stays a v1beta1 request (owned by the Dynamo operator); create a new request through v1beta2 instead")}
	case !old.IsV1Beta1Native() && dgdr.IsV1Beta1Native():
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "v1beta1"), "a request created through v1beta2 cannot become a v1beta1 request")}
	}
	return nil
}

// ValidateDelete allows deletion.
func (w *RequestWebhook) ValidateDelete(context.Context, *v1beta2.DynamoGraphDeploymentRequest) (admission.Warnings, error) {
	return nil, nil
}

// DefaultingOptionsFrom derives defaulting options from a configuration (without discovery).
func DefaultingOptionsFrom(cfg *v1alpha1.OperatorConfiguration) dgdradmission.DefaultingOptions {
	return dgdradmission.DefaultingOptions{DefaultGPUSKU: cfg.Defaults.GPUSKU}
}

func (w *RequestWebhook) defaultingOptions(ctx context.Context) (dgdradmission.DefaultingOptions, error) {
	opts := DefaultingOptionsFrom(w.Config)
	inv, ok, err := w.inventory(ctx)
	if err != nil || !ok {
		return opts, err
	}
	opts.GPUDiscovery, opts.GPUProducts = true, inv.Products
	return opts, nil
}

// inventory reads the cluster's GPU Nodes; ok is false when discovery is off.
func (w *RequestWebhook) inventory(ctx context.Context) (gpunodes.Inventory, bool, error) {
	if !config.GPUDiscoveryEnabled(w.Config) || w.Nodes == nil {
		return gpunodes.Inventory{}, false, nil
	}
	inv, err := w.Nodes.Inventory(ctx)
	if err != nil {
		return gpunodes.Inventory{}, false, fmt.Errorf("discovering GPU products: %w", err)
	}
	return inv, true, nil
}

// budgetWarnings warns when spec.hardware.gpu.budget exceeds the allocatable GPUs of the
// cluster's Nodes of the request's SKU: the search may then recommend deployments the cluster
// cannot hold. A warning, not a refusal: Nodes come and go, and a search may be run for
// hardware still to be bought.
func (w *RequestWebhook) budgetWarnings(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest) admission.Warnings {
	hw := dgdr.Spec.Hardware
	if hw == nil || hw.GPU == nil || hw.GPU.Budget == nil {
		return nil
	}
	inv, ok, err := w.inventory(ctx)
	if err != nil || !ok {
		return nil //nolint:nilerr // discovery unavailable: no warning, the request stands
	}
	if msg := gpunodes.BudgetWarning(*hw.GPU.Budget, hw.GPU.SKU, inv.Pool(hw.GPU.SKU)); msg != "" {
		return admission.Warnings{msg}
	}
	return nil
}

func invalid(dgdr *v1beta2.DynamoGraphDeploymentRequest, errs field.ErrorList) error {
	return apierrors.NewInvalid(v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRequest").GroupKind(), dgdr.Name, errs)
}

// specUnchanged reports whether the admission request in ctx is an update whose spec equals the
// stored one.
func specUnchanged(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest) (bool, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return false, nil //nolint:nilerr // not an admission: default as usual
	}
	old, err := storedRequest(req)
	if err != nil || old == nil {
		return false, err
	}
	return equality.Semantic.DeepEqual(old.Spec, dgdr.Spec), nil
}

// storedRequest is the stored request of an update admission (nil for any other).
func storedRequest(req admission.Request) (*v1beta2.DynamoGraphDeploymentRequest, error) {
	if req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return nil, nil
	}
	old := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return nil, fmt.Errorf("decoding the stored request: %w", err)
	}
	return old, nil
}
