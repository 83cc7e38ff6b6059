package aisimulate

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
)

// Caps are the operator's limits on the search an effective input asks for
// (OperatorConfiguration limits.maxTrials and limits.maxParallelism). Zero means no cap.
//
// One check, used by admission, dgdrctl and the Run controller (before the Job exists), so that
// what admission accepts under the caps is what runs under them. The lowering writes a capped
// value into the effective input when a derived default or AISimulate's own default would exceed
// a cap, so a request that leaves the optimizer alone always fits.
type Caps struct {
	// MaxTrials caps optimizer.max_trials.
	MaxTrials int64
	// MaxParallelism caps optimizer.parallelism.
	MaxParallelism int64
}

// CapsFrom reads the caps of an operator configuration.
func CapsFrom(limits v1alpha1.LimitsConfig) Caps {
	var c Caps
	if limits.MaxTrials != nil {
		c.MaxTrials = int64(*limits.MaxTrials)
	}
	if limits.MaxParallelism != nil {
		c.MaxParallelism = int64(*limits.MaxParallelism)
	}
	return c
}

// capped describes one capped optimizer field: its key, AISimulate's default and the
// configuration field that caps it.
type capped struct {
	key, configField string
	def              int64
	limit            func(Caps) int64
}

var cappedFields = []capped{
	{"max_trials", "limits.maxTrials", DefaultMaxTrials, func(c Caps) int64 { return c.MaxTrials }},
	{"parallelism", "limits.maxParallelism", DefaultParallelism, func(c Caps) int64 { return c.MaxParallelism }},
}

// Check returns one error per capped optimizer field of doc whose effective value (the value
// written, or AISimulate's default when absent) exceeds its cap. The errors point into
// spec.aisimulate.inputOverrides: after the lowering's clamping only an override can exceed a cap.
// A value of the wrong type is not counted; the effective-input rules report it.
func (c Caps) Check(doc map[string]any) field.ErrorList {
	optimizer, _ := doc["optimizer"].(map[string]any)
	var errs field.ErrorList
	for _, f := range cappedFields {
		limit := f.limit(c)
		if limit <= 0 {
			continue
		}
		v, present := optimizer[f.key]
		n := f.def
		if present {
			num, ok := v.(json.Number)
			if !ok {
				continue
			}
			i, err := num.Int64()
			if err != nil {
				continue
			}
			n = i
		}
		if n > limit {
			what := fmt.Sprintf("optimizer.%s is %d", f.key, n)
			if !present {
				what = fmt.Sprintf("optimizer.%s is absent, so AISimulate's default %d applies", f.key, n)
			}
			errs = append(errs, field.Invalid(OverridesPath.Child("optimizer", f.key), n, fmt.Sprintf(
				"%s but this operator allows at most %d (%s of the operator configuration); lower it through spec.aisimulate.inputOverrides",
				what, limit, f.configField)))
		}
	}
	return errs
}

// clamped is an optimizer field the lowering capped, and the warning that says so.
type clamped struct{ key, warning string }

// clamp writes, into the derived layer, the capped value of every capped optimizer field whose
// derived or default value would exceed its cap, and says so in a warning.
func (c Caps) clamp(derived map[string]any) []clamped {
	var out []clamped
	for _, f := range cappedFields {
		limit := f.limit(c)
		if limit <= 0 {
			continue
		}
		optimizer, _ := derived["optimizer"].(map[string]any)
		n, origin := f.def, "AISimulate's default"
		if v, ok := optimizer[f.key].(json.Number); ok {
			if i, err := v.Int64(); err == nil {
				n, origin = i, "the derived default"
			}
		}
		if n <= limit {
			continue
		}
		if optimizer == nil {
			optimizer = map[string]any{}
			derived["optimizer"] = optimizer
		}
		optimizer[f.key] = intNumber(limit)
		out = append(out, clamped{f.key, fmt.Sprintf("optimizer.%s is set to %d, the operator's cap (%s), instead of %s %d",
			f.key, limit, f.configField, origin, n)})
	}
	return out
}
