// Package gate decides whether a re-search found a deployment worth replacing the deployed one
// with. It compares the new best candidate with the baseline, the deployed candidate predicted
// by AISimulate under the same traffic, on the search's objective, as AISimulate scores both
// (sweeper/score.py: objective_value through output.Objective, aggregate_sla_violations), with
// a margin so that noise of a few percent does not roll a deployment. It is pure: metrics in, a
// Decision out.
package gate

import (
	"fmt"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// SLA is AISimulate's evaluation.sla in milliseconds; nil bounds are unset.
type SLA struct {
	TTFTMs, ITLMs, E2EMs *float64
}

// Any says whether any bound is set.
func (s SLA) Any() bool { return s.TTFTMs != nil || s.ITLMs != nil || s.E2EMs != nil }

// SLAViolations is AISimulate's aggregate_sla_violations: the strict check of a report's means
// against the SLA, with inclusive bounds. The ITL bound applies to mean_tpot_ms (not
// mean_itl_ms). A missing or non-finite value, no qualifying samples or no completed request is
// a violation. Empty when the report meets every bound.
func SLAViolations(report output.Report, sla SLA) []string {
	var out []string
	switch c, ok := report[output.KeyCompletedRequests]; {
	case !ok:
		out = append(out, output.KeyCompletedRequests+" is missing")
	case !output.Finite(c):
		out = append(out, output.KeyCompletedRequests+" is non-finite")
	case c <= 0:
		out = append(out, output.KeyCompletedRequests+" is zero")
	}
	for _, check := range []struct {
		label, metric, samples string
		bound                  *float64
	}{
		{"ttft", output.KeyMeanTTFT, output.KeyTTFTSamples, sla.TTFTMs},
		{"tpot", output.KeyMeanTPOT, output.KeyTPOTSamples, sla.ITLMs},
		{"e2e", output.KeyMeanE2ELatency, output.KeyE2ELatencySamples, sla.E2EMs},
	} {
		if check.bound == nil {
			continue
		}
		switch n, ok := report[check.samples]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s sample count %s is missing", check.label, check.samples))
		case !output.Finite(n):
			out = append(out, fmt.Sprintf("%s sample count %s is non-finite", check.label, check.samples))
		case n <= 0:
			out = append(out, fmt.Sprintf("%s has no qualifying samples (%s=%.6g)", check.label, check.samples, n))
		}
		v, ok := report[check.metric]
		if why := overBound(check.label, check.metric, v, ok, *check.bound); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// metricsSLAViolations checks a deployment's published metrics against the SLA as SLAViolations
// checks a report: the same bounds, with the deployment's TPOT (mean time per output token)
// against the ITL bound. Published metrics carry no sample counts; a deployment is published
// only once it completed requests (a feasible candidate, a baseline the reporter accepted).
func metricsSLAViolations(d Deployment, sla SLA) []string {
	m := d.Metrics
	tpot, tpotName := d.MeanTPOTMs, "meanTpotMs"
	if tpot == nil {
		tpot, tpotName = m.ITLMs, "itlMs"
	}
	var out []string
	for _, check := range []struct {
		label, metric string
		value, bound  *float64
	}{
		{"ttft", "ttftMs", m.TTFTMs, sla.TTFTMs},
		{"tpot", tpotName, tpot, sla.ITLMs},
		{"e2e", "e2eMs", m.E2EMs, sla.E2EMs},
	} {
		if check.bound == nil {
			continue
		}
		var v float64
		if check.value != nil {
			v = *check.value
		}
		if why := overBound(check.label, check.metric, v, check.value != nil, *check.bound); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// overBound says why the value v of metric (ok: present) breaks bound, "" when it meets it.
func overBound(label, metric string, v float64, ok bool, bound float64) string {
	switch {
	case !ok:
		return fmt.Sprintf("%s metric %s is missing", label, metric)
	case !output.Finite(v):
		return fmt.Sprintf("%s metric %s is non-finite", label, metric)
	case v > bound:
		return fmt.Sprintf("%s %.6gms > %.6gms", label, v, bound)
	}
	return ""
}
