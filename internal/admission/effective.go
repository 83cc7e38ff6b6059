package admission

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// EffectiveInputProblems checks the final effective input of a spec against the bundled AISimulate
// input schema and cross-field rules, and its systems against the pinned AISimulate's catalogue
// (aisimulate.SystemProblems). Each problem becomes a field error: when inputOverrides
// introduced it (the typed fields alone lower to a document without it), the path points into
// spec.aisimulate.inputOverrides at the deepest key the override wrote on the way to the
// problem; otherwise it points at spec. The detail always names the path in the effective
// document. keys identifies each problem for ratcheting.
func EffectiveInputProblems(spec *v1beta2.DynamoGraphDeploymentRequestSpec, input *aisimulate.Input, opts aisimulate.Options) (errs field.ErrorList, keys []string) {
	problems := inputProblems(input.Document)
	if len(problems) == 0 {
		return nil, nil
	}
	typedOnly := spec.DeepCopy()
	typedOnly.AISimulate = nil
	typedKeys := map[string]bool{}
	if typedInput, lowerErrs := aisimulate.Lower(typedOnly, opts); len(lowerErrs) == 0 {
		for _, p := range inputProblems(typedInput.Document) {
			typedKeys[p.String()] = true
		}
	}
	var overrideDoc map[string]any
	if spec.AISimulate != nil && spec.AISimulate.InputOverrides != nil {
		overrideDoc, _ = aisimulate.DecodeObject(spec.AISimulate.InputOverrides.Raw)
	}
	for _, p := range problems {
		detail := "effective AISimulate input " + p.PathString() + ": " + p.Message
		path := typedFieldFor(p.Path)
		if !typedKeys[p.String()] && overrideDoc != nil {
			path = aisimulate.OverridesPath
			cur := any(overrideDoc)
			for _, k := range p.Path {
				m, ok := cur.(map[string]any)
				if !ok {
					break
				}
				next, ok := m[k]
				if !ok {
					break
				}
				path = path.Child(k)
				cur = next
			}
		}
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, detail))
	}
	return errs, problemKeys(problems)
}

// problemKeys identifies problems for ratcheting.
func problemKeys(problems []aisimulate.Problem) []string {
	keys := make([]string, len(problems))
	for i, p := range problems {
		keys[i] = p.String()
	}
	return keys
}

// inputProblems are the problems AISimulate would refuse doc for: before its search, and when its
// search starts.
func inputProblems(doc map[string]any) []aisimulate.Problem {
	return append(aisimulate.CheckInput(doc), aisimulate.SystemProblems(doc)...)
}

// Ratchet splits problems of a new object into denials and warnings: a problem its old object
// already had (same place in the effective input, same message) is only a warning, so that a
// stricter bundled schema never blocks unrelated edits of a stored request.
func Ratchet(errs field.ErrorList, keys, oldKeys []string) (denied field.ErrorList, warnings []string) {
	old := map[string]bool{}
	for _, k := range oldKeys {
		old[k] = true
	}
	for i, e := range errs {
		if old[keys[i]] {
			warnings = append(warnings, "existing problem kept (the stored object already had it; fix it when you can): "+strings.TrimSpace(e.Error()))
			continue
		}
		denied = append(denied, e)
	}
	return denied, warnings
}

// typedOrigins maps effective-input paths to the typed fields that produce them, so that a
// problem the typed fields cause names the field the user wrote.
var typedOrigins = []struct {
	prefix []string
	path   *field.Path
}{
	{[]string{"engine", "model"}, field.NewPath("spec", "model", "name")},
	{[]string{"engine", "hardware"}, field.NewPath("spec", "hardware", "gpu", "sku")},
	{[]string{"engine", "backend"}, field.NewPath("spec", "backends")},
	{[]string{"optimization", "target"}, field.NewPath("spec", "objective", "target")},
	{[]string{"optimization", "constraints", "max_candidate_gpus"}, field.NewPath("spec", "hardware", "gpu", "budget")},
	{[]string{"optimization", "strict_sla"}, field.NewPath("spec", "sla")},
	{[]string{"evaluation", "sla"}, field.NewPath("spec", "sla")},
	{[]string{"traffic", "load"}, field.NewPath("spec", "workload", "static", "load")},
	{[]string{"traffic", "source"}, field.NewPath("spec", "workload", "static")},
	{[]string{"optimizer", "max_trials"}, field.NewPath("spec", "workload", "static", "load", "kvCapacityFraction", "range")},
}

func typedFieldFor(path []string) *field.Path {
	for _, o := range typedOrigins {
		if len(path) >= len(o.prefix) && strings.Join(path[:len(o.prefix)], ".") == strings.Join(o.prefix, ".") {
			return o.path
		}
	}
	return field.NewPath("spec")
}
