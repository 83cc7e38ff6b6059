package v1beta2

import (
	"bytes"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
)

// Conversion between v1beta2 and the v1beta1 hub translates no field: each section (spec,
// status) of a request is native in exactly one version and travels through the other version
// verbatim, as JSON, in an envelope named after its native version:
//
//   - a v1beta2-native section appears in v1beta1 under spec.v1beta2 / status.v1beta2;
//   - a v1beta1-native section appears in v1beta2 under spec.v1beta1 / status.v1beta1.
//
// An empty section (one that encodes as {}) needs no envelope and converts to an empty section.
// An envelope must hold a non-empty section, must not be mixed with native fields and must
// decode strictly: anything else is an error naming the envelope, never a silent loss.

var _ conversion.Convertible = (*DynamoGraphDeploymentRequest)(nil)

var (
	specPath   = field.NewPath("spec")
	statusPath = field.NewPath("status")
)

// ConvertTo converts this request to the v1beta1 hub.
func (r *DynamoGraphDeploymentRequest) ConvertTo(hub conversion.Hub) error {
	dst, ok := hub.(*v1beta1.DynamoGraphDeploymentRequest)
	if !ok {
		return fmt.Errorf("converting DynamoGraphDeploymentRequest to %T: want *v1beta1.DynamoGraphDeploymentRequest", hub)
	}
	r.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("DynamoGraphDeploymentRequest"))

	var errs field.ErrorList
	spec, env := r.Spec, r.Spec.V1Beta1
	spec.V1Beta1 = nil
	dst.Spec = v1beta1.DynamoGraphDeploymentRequestSpec{}
	errs = append(errs, convertSection(&spec, env, &dst.Spec, &dst.Spec.V1Beta2, specPath.Child("v1beta1"))...)

	status, env := r.Status, r.Status.V1Beta1
	status.V1Beta1 = nil
	dst.Status = v1beta1.DynamoGraphDeploymentRequestStatus{}
	errs = append(errs, convertSection(&status, env, &dst.Status, &dst.Status.V1Beta2, statusPath.Child("v1beta1"))...)
	return errs.ToAggregate()
}

// ConvertFrom converts the v1beta1 hub to this request.
func (r *DynamoGraphDeploymentRequest) ConvertFrom(hub conversion.Hub) error {
	src, ok := hub.(*v1beta1.DynamoGraphDeploymentRequest)
	if !ok {
		return fmt.Errorf("converting %T to DynamoGraphDeploymentRequest: want *v1beta1.DynamoGraphDeploymentRequest", hub)
	}
	src.ObjectMeta.DeepCopyInto(&r.ObjectMeta)
	r.SetGroupVersionKind(GroupVersion.WithKind("DynamoGraphDeploymentRequest"))

	var errs field.ErrorList
	spec, env := src.Spec, src.Spec.V1Beta2
	spec.V1Beta2 = nil
	r.Spec = DynamoGraphDeploymentRequestSpec{}
	errs = append(errs, convertSection(&spec, env, &r.Spec, &r.Spec.V1Beta1, specPath.Child("v1beta2"))...)

	status, env := src.Status, src.Status.V1Beta2
	status.V1Beta2 = nil
	r.Status = DynamoGraphDeploymentRequestStatus{}
	errs = append(errs, convertSection(&status, env, &r.Status, &r.Status.V1Beta1, statusPath.Child("v1beta2"))...)
	return errs.ToAggregate()
}

// convertSection converts one section. native is the source section without its envelope, env
// the source's envelope (the destination's native section, if set), dst the destination section
// and dstEnv the destination's envelope field. envPath names env in errors.
func convertSection(native any, env *apiextensionsv1.JSON, dst any, dstEnv **apiextensionsv1.JSON, envPath *field.Path) field.ErrorList {
	raw, err := json.Marshal(native)
	if err != nil {
		return field.ErrorList{field.InternalError(envPath, err)}
	}
	nativeEmpty := bytes.Equal(raw, []byte("{}"))
	if env == nil {
		if !nativeEmpty {
			*dstEnv = &apiextensionsv1.JSON{Raw: raw}
		}
		return nil
	}
	if !nativeEmpty {
		return field.ErrorList{field.Forbidden(envPath, "the envelope is mutually exclusive with native fields")}
	}
	trimmed := bytes.TrimSpace(env.Raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return field.ErrorList{field.Required(envPath, "the envelope is empty")}
	}
	if err := decodeEnvelope(trimmed, dst); err != nil {
		return field.ErrorList{field.Invalid(envPath, string(env.Raw), err.Error())}
	}
	// The envelope is the destination's native section; it must not smuggle an envelope of
	// its own, and it must hold something.
	if *dstEnv != nil {
		return field.ErrorList{field.Invalid(envPath, string(env.Raw), "the envelope holds an envelope")}
	}
	encoded, err := json.Marshal(dst)
	if err != nil {
		return field.ErrorList{field.InternalError(envPath, err)}
	}
	if bytes.Equal(encoded, []byte("{}")) {
		return field.ErrorList{field.Required(envPath, "the envelope is empty")}
	}
	return nil
}

// decodeEnvelope decodes an envelope strictly: a field the destination does not know would be
// lost on the way back.
func decodeEnvelope(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the envelope")
	}
	return nil
}
