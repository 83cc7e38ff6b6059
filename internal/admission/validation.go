package admission

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// MaxRequestNameLength bounds request names: the name is a label value on every child object,
// and label values are at most 63 characters.
const MaxRequestNameLength = 63

// Validate checks what the CRD schema and its CEL rules cannot: derived names, the model name
// and revision, known GPU SKUs, the inputOverrides shape (and that it leaves engine.model and
// engine.hardware to the typed spec), the size and shape of the pod template overrides,
// whether autoApply is enabled, that the typed fields lower under the operator's caps, the
// effective input against AISimulate's rules and systems (the search's hardware has performance
// data), and the caps. It returns the effective input when
// the request is valid (its Warnings name derived defaults the caps lowered), so callers need
// not lower twice.
func Validate(dgdr *v1beta2.DynamoGraphDeploymentRequest, opts Options) (*aisimulate.Input, field.ErrorList) {
	input, errs, _ := validate(nil, dgdr, opts)
	if len(errs) > 0 {
		return nil, errs
	}
	return input, nil
}

// ValidateUpdate validates a changed request with ratcheting: problems of the effective input
// that the old object already had are returned as warnings instead of errors, and the rules this
// operator added later (the model name and revision, the deployment name, the engine fields of
// inputOverrides, autoApply being enabled) apply only to fields the update changes.
func ValidateUpdate(old, dgdr *v1beta2.DynamoGraphDeploymentRequest, opts Options) (*aisimulate.Input, []string, field.ErrorList) {
	input, errs, keys := validate(old, dgdr, opts)
	if len(keys) == 0 || old == nil {
		if len(errs) > 0 {
			return nil, nil, errs
		}
		return input, nil, nil
	}
	// The old object's problems, by key: the same as the new one's when the spec is unchanged
	// (an edit of metadata: lowering is a function of the spec), else those of its own effective
	// input (the typed-only lowering EffectiveInputProblems adds serves error paths, not keys).
	oldKeys := keys
	if !equality.Semantic.DeepEqual(old.Spec, dgdr.Spec) {
		oldKeys = nil
		if oldInput, oldErrs := aisimulate.Lower(&old.Spec, opts.Lowering()); len(oldErrs) == 0 {
			oldKeys = problemKeys(inputProblems(oldInput.Document))
		}
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
// which are the last len(keys) errors. old is nil on create.
func validate(old, dgdr *v1beta2.DynamoGraphDeploymentRequest, opts Options) (*aisimulate.Input, field.ErrorList, []string) {
	var errs field.ErrorList
	errs = append(errs, validateName(dgdr.Name)...)
	spec := &dgdr.Spec
	specPath := field.NewPath("spec")

	errs = append(errs, validateAddedRules(old, dgdr, opts)...)
	errs = append(errs, ValidateModelAccess(&spec.Model, specPath.Child("model"))...)
	errs = append(errs, ValidateDeployment(spec.Deployment, opts.MaxPodTemplateOverrideBytes, specPath.Child("deployment"))...)
	errs = append(errs, ValidateWorkload(spec.Workload, specPath.Child("workload"))...)
	errs = append(errs, ValidateResearch(spec, specPath.Child("research"))...)
	errs = append(errs, ValidateCaptureAge(spec, specPath.Child("deployment"))...)
	if spec.AISimulate != nil && spec.AISimulate.InputOverrides != nil {
		errs = append(errs, aisimulate.ValidateOverridesShape(spec.AISimulate.InputOverrides.Raw, aisimulate.OverridesPath)...)
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	input, lowerErrs := aisimulate.Lower(spec, opts.Lowering())
	if len(lowerErrs) > 0 {
		return nil, lowerErrs, nil
	}
	errs = append(errs, opts.Caps.Check(input.Document)...)
	effErrs, keys := EffectiveInputProblems(spec, input, opts.Lowering())
	errs = append(errs, effErrs...)
	return input, errs, keys
}

// validateAddedRules checks the admission rules that ratchet (names, known GPU SKUs, the engine
// fields of inputOverrides, autoApply enabled). On an update each applies only when its field changed, so a request
// stored before a rule existed (or before the operator's configuration changed) stays editable.
func validateAddedRules(old, dgdr *v1beta2.DynamoGraphDeploymentRequest, opts Options) field.ErrorList {
	var errs field.ErrorList
	spec := &dgdr.Spec
	var oldSpec *v1beta2.DynamoGraphDeploymentRequestSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	changed := func(get func(*v1beta2.DynamoGraphDeploymentRequestSpec) any) bool {
		return oldSpec == nil || !equality.Semantic.DeepEqual(get(oldSpec), get(spec))
	}
	// The known systems are the pinned AISimulate's: a SKU an older release had stays editable
	// (the effective-input check still warns about it).
	sku := func(s *v1beta2.DynamoGraphDeploymentRequestSpec) any {
		if gpu := gpuOf(s); gpu != nil {
			return gpu.SKU
		}
		return ""
	}
	if s, _ := sku(spec).(string); s != "" && !aisimulate.KnownSKU(s) && changed(sku) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "hardware", "gpu", "sku"), s, aisimulate.KnownSKUs()))
	}
	modelPath := field.NewPath("spec", "model")
	if changed(func(s *v1beta2.DynamoGraphDeploymentRequestSpec) any { return s.Model.Name }) {
		errs = append(errs, ValidateModelName(spec.Model.Name, opts.AllowLocalModelPaths, modelPath.Child("name"))...)
	}
	if changed(func(s *v1beta2.DynamoGraphDeploymentRequestSpec) any { return s.Model.Revision }) {
		errs = append(errs, ValidateRevision(spec.Model.Revision, modelPath.Child("revision"))...)
	}
	deployName := func(s *v1beta2.DynamoGraphDeploymentRequestSpec) any {
		if s.Deployment == nil {
			return ""
		}
		return s.Deployment.Name
	}
	// The default deployment name is the request's name, whose own check reports it.
	if d := spec.Deployment; d != nil && d.Name != dgdr.Name && changed(deployName) {
		errs = append(errs, ValidateDeploymentName(d.Name, field.NewPath("spec", "deployment", "name"))...)
	}
	overrides := func(s *v1beta2.DynamoGraphDeploymentRequestSpec) any {
		if s.AISimulate == nil || s.AISimulate.InputOverrides == nil {
			return ""
		}
		return string(s.AISimulate.InputOverrides.Raw)
	}
	if raw, _ := overrides(spec).(string); raw != "" && changed(overrides) {
		errs = append(errs, ValidateOverridesEngine([]byte(raw))...)
	}
	interval := func(s *v1beta2.DynamoGraphDeploymentRequestSpec) any {
		if s.Research == nil {
			return int32(0)
		}
		return s.Research.IntervalMinutes
	}
	if r := spec.Research; r != nil && r.IntervalMinutes > 0 && time.Duration(r.IntervalMinutes)*time.Minute < opts.ResearchMinInterval && changed(interval) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "research", "intervalMinutes"), r.IntervalMinutes,
			fmt.Sprintf("must be at least %d minutes (the operator configuration's research.minInterval, %s)", int64(opts.ResearchMinInterval/time.Minute), opts.ResearchMinInterval)))
	}
	if !opts.AutoApplyEnabled && AutoApply(spec) && (oldSpec == nil || !AutoApply(oldSpec)) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "deployment", "autoApply"),
			"autoApply is disabled in this operator's configuration (autoApply.enabled): the operator does not deploy for requests; "+
				"set autoApply to false and deploy a candidate with dgdrctl promote"))
	}
	return errs
}

// AutoApply reports whether spec asks the operator to deploy its best candidate.
func AutoApply(spec *v1beta2.DynamoGraphDeploymentRequestSpec) bool {
	return spec.Deployment != nil && spec.Deployment.AutoApply != nil && *spec.Deployment.AutoApply
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
