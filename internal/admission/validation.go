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

// Limits are operator-configured caps on the effective input.
type Limits struct {
	// MaxTrials caps optimizer.max_trials; 0 means no cap.
	MaxTrials int64
	// MaxParallelism caps optimizer.parallelism; 0 means no cap.
	MaxParallelism int64
}

// Validate checks what the CRD schema and its CEL rules cannot: derived names, known GPU SKUs,
// the inputOverrides shape, that the typed fields lower, that goodput targets have an SLA bound,
// and operator limits on the effective input. It returns the effective input when the request
// lowers, so callers need not lower twice.
func Validate(dgdr *v1beta2.DynamoGraphDeploymentRequest, limits Limits) (*aisimulate.Input, field.ErrorList) {
	input, errs, _ := validate(dgdr, limits)
	return input, errs
}

// ValidateUpdate validates a changed request with ratcheting: problems of the effective input
// that the old object already had are returned as warnings instead of errors.
func ValidateUpdate(old, dgdr *v1beta2.DynamoGraphDeploymentRequest, limits Limits) (*aisimulate.Input, []string, field.ErrorList) {
	input, errs, keys := validate(dgdr, limits)
	if len(keys) == 0 || old == nil {
		return input, nil, errs
	}
	var oldKeys []string
	if oldInput, oldErrs := aisimulate.Lower(&old.Spec); len(oldErrs) == 0 {
		_, oldKeys = EffectiveInputProblems(&old.Spec, oldInput)
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

// validate returns the effective input, all errors, and the ratchet keys of the effective-input
// problems, which are the last len(keys) errors.
func validate(dgdr *v1beta2.DynamoGraphDeploymentRequest, limits Limits) (*aisimulate.Input, field.ErrorList, []string) {
	var errs field.ErrorList
	errs = append(errs, validateName(dgdr.Name)...)
	spec := &dgdr.Spec
	specPath := field.NewPath("spec")

	if gpu := gpuOf(spec); gpu != nil && gpu.SKU != "" && !aisimulate.KnownSKU(gpu.SKU) {
		errs = append(errs, field.NotSupported(specPath.Child("hardware", "gpu", "sku"), gpu.SKU, aisimulate.KnownSKUs()))
	}
	if spec.AISimulate != nil && spec.AISimulate.InputOverrides != nil {
		errs = append(errs, aisimulate.ValidateOverridesShape(spec.AISimulate.InputOverrides.Raw, aisimulate.OverridesPath)...)
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	input, lowerErrs := aisimulate.Lower(spec)
	if len(lowerErrs) > 0 {
		return nil, lowerErrs, nil
	}
	errs = append(errs, validateEffective(input, limits)...)
	effErrs, keys := EffectiveInputProblems(spec, input)
	errs = append(errs, effErrs...)
	if len(errs) > 0 {
		return nil, errs, keys
	}
	return input, nil, nil
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

// validateEffective checks the operator's limits on the effective input. AISimulate's own rules
// (goodput targets need an SLA bound, pareto constraints, ...) are EffectiveInputProblems.
func validateEffective(input *aisimulate.Input, limits Limits) field.ErrorList {
	var errs field.ErrorList
	doc := input.Document
	errs = append(errs, capInt(doc, limits.MaxTrials, "max_trials")...)
	errs = append(errs, capInt(doc, limits.MaxParallelism, "parallelism")...)
	return errs
}

func capInt(doc map[string]any, limit int64, key string) field.ErrorList {
	if limit <= 0 {
		return nil
	}
	v, ok := lookup(doc, "optimizer", key)
	if !ok {
		return nil
	}
	n, isNum := v.(interface{ Int64() (int64, error) })
	if !isNum {
		return nil // the schema validation of the effective input reports the type.
	}
	if i, err := n.Int64(); err == nil && i > limit {
		return field.ErrorList{field.Invalid(aisimulate.OverridesPath.Child("optimizer", key), i,
			fmt.Sprintf("the operator configuration caps optimizer.%s at %d", key, limit))}
	}
	return nil
}

func lookup(doc map[string]any, keys ...string) (any, bool) {
	var cur any = doc
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func gpuOf(spec *v1beta2.DynamoGraphDeploymentRequestSpec) *v1beta2.GPUSpec {
	if spec.Hardware == nil {
		return nil
	}
	return spec.Hardware.GPU
}
