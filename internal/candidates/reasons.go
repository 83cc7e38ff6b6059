package candidates

import (
	"cmp"
	"slices"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// maxReasonCategories bounds the reason categories kept from the (untrusted) output.
const maxReasonCategories = 64

// reasonCategory bounds a category from the output: length, and the number of distinct ones
// (the rest are "other").
func reasonCategory(c string, seen map[string]int64) string {
	c = strings.TrimSpace(c)
	if c == "" {
		c = "unknown"
	}
	if len(c) > 64 {
		c = c[:64]
	}
	if _, ok := seen[c]; !ok && len(seen) >= maxReasonCategories {
		return "other"
	}
	return c
}

// ReasonList lists counts by category, most frequent first, at most 16 (the rest summed under
// "other"); nil when there are none.
func ReasonList(counts map[string]int64) []v1beta2.ReasonCount {
	out := make([]v1beta2.ReasonCount, 0, len(counts))
	for c, n := range counts {
		if n > 0 {
			out = append(out, v1beta2.ReasonCount{Category: c, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b v1beta2.ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Category, b.Category))
	})
	const maxListed = 16
	if len(out) > maxListed {
		var rest int64
		for _, rc := range out[maxListed-1:] {
			rest += rc.Count
		}
		out = append(out[:maxListed-1], v1beta2.ReasonCount{Category: "other", Count: rest})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ResultReasons counts the not-feasible candidate records of recommendation.json by category.
func ResultReasons(sweep *output.SweepResult) []v1beta2.ReasonCount {
	counts := map[string]int64{}
	for i := range sweep.Candidates {
		if c := &sweep.Candidates[i]; c.Status != output.StatusFeasible {
			counts[reasonCategory(c.ReasonCategory, counts)]++
		}
	}
	return ReasonList(counts)
}
