package admission

import (
	"fmt"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// MaxRequestNameLength bounds request names: the name is a label value on every child object,
// and label values are at most 63 characters.
const MaxRequestNameLength = 63

// Validate checks what the CRD schema and its CEL rules cannot: derived names, known GPU SKUs,
// the inputOverrides shape, that the typed fields lower under the operator's caps, the effective
// input against AISimulate's rules, and the caps. It returns the effective input when the request
// is valid (its Warnings name derived defaults the caps lowered), so callers need not lower twice.
func Validate(dgdr *v1beta2.DynamoGraphDeploymentRequest, caps aisimulate.Caps) (*aisimulate.Input, field.ErrorList) {
	input, errs, _ := validate(dgdr, caps)
	if len(errs) > 0 {
		return nil, errs
	}
	return input, nil
}

// ValidateUpdate validates a changed request with ratcheting: problems of the effective input
// that the old object already had are returned as warnings instead of errors.
func ValidateUpdate(old, dgdr *v1beta2.DynamoGraphDeploymentRequest, caps aisimulate.Caps) (*aisimulate.Input, []string, field.ErrorList) {
	input, errs, keys := validate(dgdr, caps)
	if len(keys) == 0 || old == nil {
		if len(errs) > 0 {
			return nil, nil, errs
		}
		return input, nil, nil
	}
	var oldKeys []string
	if oldInput, oldErrs := aisimulate.Lower(&old.Spec, caps); len(oldErrs) == 0 {
		_, oldKeys = EffectiveInputProblems(&old.Spec, oldInput, caps)
	}
	// errs ends with the effective-input problems, in the order of keys.
	head := errs[:len(errs)-len(keys)]
	denied, warnings := Ratchet(errs[len(errs)-len(keys):], keys, oldKeys)
	errs = append(append(field.ErrorList(nil), head...), denied...)
	if len(errs) > 0 {
		return nil, warnings, errs
	}
	return input, warnings, nil
}

// validate returns the effective input (whenever the spec lowers, even with errors, so that
// ratcheting can accept it), all errors, and the ratchet keys of the effective-input problems,
// which are the last len(keys) errors.
func validate(dgdr *v1beta2.DynamoGraphDeploymentRequest, caps aisimulate.Caps) (*aisimulate.Input, field.ErrorList, []string) {
	var errs field.ErrorList
	errs = append(errs, validateName(dgdr.Name)...)
	spec := &dgdr.Spec
	specPath := field.NewPath("spec")

	if gpu := gpuOf(spec); gpu != nil && gpu.SKU != "" && !aisimulate.KnownSKU(gpu.SKU) {
		errs = append(errs, field.NotSupported(specPath.Child("hardware", "gpu", "sku"), gpu.SKU, aisimulate.KnownSKUs()))
	}
	errs = append(errs, ValidateModelAccess(&spec.Model, specPath.Child("model"))...)
	errs = append(errs, ValidateDeployment(spec.Deployment, specPath.Child("deployment"))...)
	errs = append(errs, ValidateWorkload(spec.Workload, specPath.Child("workload"))...)
	if spec.AISimulate != nil && spec.AISimulate.InputOverrides != nil {
		errs = append(errs, aisimulate.ValidateOverridesShape(spec.AISimulate.InputOverrides.Raw, aisimulate.OverridesPath)...)
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	input, lowerErrs := aisimulate.Lower(spec, caps)
	if len(lowerErrs) > 0 {
		return nil, lowerErrs, nil
	}
	errs = append(errs, caps.Check(input.Document)...)
	effErrs, keys := EffectiveInputProblems(spec, input, caps)
	errs = append(errs, effErrs...)
	return input, errs, keys
}

func validateName(name string) field.ErrorList {
	path := field.NewPath("metadata", "name")
	if name == "" {
		return nil // generateName: the API server validates the final name.
	}
	var errs field.ErrorList
	if len(name) > MaxRequestNameLength {
		return field.ErrorList{field.Invalid(path, name, fmt.Sprintf(
			"must be at most %d characters: the request name is a label value on its derived Runs, Jobs, ConfigMaps and Candidates", MaxRequestNameLength))}
	}
	for _, msg := range apimachineryvalidation.NameIsDNSLabel(name, false) {
		if !strings.Contains(msg, "at most") {
			errs = append(errs, field.Invalid(path, name, msg))
		}
	}
	return errs
}

func gpuOf(spec *v1beta2.DynamoGraphDeploymentRequestSpec) *v1beta2.GPUSpec {
	if spec.Hardware == nil {
		return nil
	}
	return spec.Hardware.GPU
}
