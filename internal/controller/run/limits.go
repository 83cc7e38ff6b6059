package run

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
)

// AISimulate's defaults for the optimizer budget, used when the effective input leaves them out.
const (
	aisimulateDefaultMaxTrials   = 320
	aisimulateDefaultParallelism = 16
)

// CheckLimits verifies the effective input against the configuration's caps on
// optimizer.max_trials and optimizer.parallelism (absent values count as AISimulate's defaults).
// It returns a message naming every exceeded cap, or "".
func CheckLimits(doc map[string]any, limits v1alpha1.LimitsConfig) string {
	optimizer, _ := doc["optimizer"].(map[string]any)
	var problems []string
	check := func(key string, def int64, capPtr *int32) {
		if capPtr == nil || *capPtr == 0 {
			return
		}
		v, ok := number(optimizer[key])
		if !ok {
			if _, present := optimizer[key]; present {
				return // a non-number is AISimulate's to reject (exit code 2)
			}
			v = float64(def)
		}
		if v > float64(*capPtr) {
			problems = append(problems, fmt.Sprintf("optimizer.%s is %v but this operator allows at most %d (limits.%s)",
				key, v, *capPtr, map[string]string{"max_trials": "maxTrials", "parallelism": "maxParallelism"}[key]))
		}
	}
	check("max_trials", aisimulateDefaultMaxTrials, limits.MaxTrials)
	check("parallelism", aisimulateDefaultParallelism, limits.MaxParallelism)
	if len(problems) == 0 {
		return ""
	}
	return "the effective input exceeds the operator's limits: " + strings.Join(problems, "; ") +
		"; lower it through spec.aisimulate.inputOverrides"
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}
