package resultsview

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// VerifiedMetric is one metric of a request's verification as people read it: what the search
// predicted, the relative error allowed, what was measured and whether the prediction held.
type VerifiedMetric struct {
	// Name is how people read it ("TTFT"), Unit its unit ("ms").
	Name, Unit string
	Predicted  *float64
	// TolerancePct is the relative error allowed, in percent.
	TolerancePct     *float64
	Observed         *float64
	RelativeErrorPct *float64
	// Held is nil when the status does not say.
	Held *bool
}

// verifiedMetricNames are the compared metrics as Metrics names them, with their units.
var verifiedMetricNames = map[v1beta2.VerificationMetricName][2]string{
	v1beta2.MetricTTFTMs:           {"TTFT", "ms"},
	v1beta2.MetricTTFTP90Ms:        {"TTFT p90", "ms"},
	v1beta2.MetricTTFTP99Ms:        {"TTFT p99", "ms"},
	v1beta2.MetricITLMs:            {"ITL", "ms"},
	v1beta2.MetricITLP90Ms:         {"ITL p90", "ms"},
	v1beta2.MetricITLP99Ms:         {"ITL p99", "ms"},
	v1beta2.MetricThroughputPerGPU: {"throughput per GPU", "tokens/s"},
}

// VerifiedMetrics lists the compared metrics of v in the order of its status; v may be nil. A
// metric the API does not name (a newer operator's) keeps its key and has no unit.
func VerifiedMetrics(v *v1beta2.VerificationStatus) []VerifiedMetric {
	if v == nil {
		return nil
	}
	rows := make([]VerifiedMetric, 0, len(v.Metrics))
	for _, m := range v.Metrics {
		name, unit := string(m.Name), ""
		if n, ok := verifiedMetricNames[m.Name]; ok {
			name, unit = n[0], n[1]
		}
		rows = append(rows, VerifiedMetric{Name: name, Unit: unit, Predicted: m.Predicted, TolerancePct: m.TolerancePct,
			Observed: m.Observed, RelativeErrorPct: m.RelativeErrorPct, Held: m.Held})
	}
	return rows
}

// VerificationLoadText says what load a verification offers, e.g. "concurrency 10, 1024 input
// and 128 output tokens per request" or "the mooncake trace at its timestamps sped up 2x", and
// when it is not the prediction's, how it differs; "" when nothing was resolved (the
// verification failed before).
func VerificationLoadText(v *v1beta2.VerificationStatus) string {
	if v == nil {
		return ""
	}
	var parts []string
	if t := v.Trace; t != nil {
		s := "the " + string(t.Format) + " trace"
		if t.ArrivalSpeedupRatio != nil {
			s += " at its timestamps sped up " + strconv.FormatFloat(*t.ArrivalSpeedupRatio, 'g', -1, 64) + "x"
		}
		parts = append(parts, s)
	}
	parts = append(parts, loadParts(v.Load)...)
	if v.LoadAsPredicted != nil && !*v.LoadAsPredicted {
		diff := "not the prediction's load"
		if v.LoadDifference != "" {
			diff += " (" + v.LoadDifference + ")"
		}
		parts = append(parts, diff)
	}
	return strings.Join(parts, ", ")
}

// loadParts are the concurrency or rate and the token lengths of l.
func loadParts(l *v1beta2.VerificationLoad) []string {
	if l == nil {
		return nil
	}
	var parts []string
	switch {
	case l.Concurrency != nil:
		parts = append(parts, fmt.Sprintf("concurrency %d", *l.Concurrency))
	case l.RequestsPerSecond != nil:
		parts = append(parts, strconv.FormatFloat(*l.RequestsPerSecond, 'g', -1, 64)+" requests/s")
	}
	switch {
	case l.InputTokens != nil && l.OutputTokens != nil:
		parts = append(parts, fmt.Sprintf("%d input and %d output tokens per request", *l.InputTokens, *l.OutputTokens))
	case l.InputTokens != nil:
		parts = append(parts, fmt.Sprintf("%d input tokens per request", *l.InputTokens))
	case l.OutputTokens != nil:
		parts = append(parts, fmt.Sprintf("%d output tokens per request", *l.OutputTokens))
	}
	return parts
}
