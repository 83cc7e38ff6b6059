// Package research holds the pure rules of scheduled re-searches (spec.research): when a tick is
// due, what a re-search Run searches (the window of captured traffic instead of the spec's
// workload), and how Runs carry their window.
package research

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

// WindowFile is the file, in the search container's trace directory, that the input container
// cuts the window into.
const WindowFile = jobcontract.TraceWindowFile

// On reports whether spec schedules re-searches.
func On(spec *v1beta2.DynamoGraphDeploymentRequestSpec) bool {
	return spec.Research != nil && spec.Research.IntervalMinutes > 0
}

// Interval is spec.research.intervalMinutes as a duration (0 without research).
func Interval(spec *v1beta2.DynamoGraphDeploymentRequestSpec) time.Duration {
	if !On(spec) {
		return 0
	}
	return time.Duration(spec.Research.IntervalMinutes) * time.Minute
}

// Window is spec.research.windowMinutes, or the interval where admission did not materialize it.
func Window(spec *v1beta2.DynamoGraphDeploymentRequestSpec) time.Duration {
	if !On(spec) {
		return 0
	}
	if w := spec.Research.WindowMinutes; w != nil && *w > 0 {
		return time.Duration(*w) * time.Minute
	}
	return Interval(spec)
}

// MinRequests is spec.research.minRequests (1 where unset).
func MinRequests(spec *v1beta2.DynamoGraphDeploymentRequestSpec) int32 {
	if !On(spec) || spec.Research.MinRequests == nil {
		return 1
	}
	return *spec.Research.MinRequests
}

// Margin is spec.deployment.replaceMargin as a fraction (0.10 for "10%"), its default where
// unset.
func Margin(spec *v1beta2.DynamoGraphDeploymentRequestSpec) (float64, error) {
	s := specdefaults.ReplaceMargin
	if d := spec.Deployment; d != nil && d.ReplaceMargin != "" {
		s = d.ReplaceMargin
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if err != nil || !strings.HasSuffix(s, "%") || n < 0 || n > 100 {
		return 0, fmt.Errorf("spec.deployment.replaceMargin %q is not a percentage from 0%% to 100%%", s)
	}
	return float64(n) / 100, nil
}

// DueTick returns the end of the window of the latest tick due at now, for ticks every interval
// after anchor (ok false before the first), and when the tick after it is due. Ticks are a pure
// function of the anchor, so a restarted operator computes the same window and finds the Run it
// created.
func DueTick(anchor, now time.Time, interval time.Duration) (windowEnd, next time.Time, ok bool) {
	anchor = anchor.Truncate(time.Second)
	if interval <= 0 {
		return time.Time{}, time.Time{}, false
	}
	n := int64(now.Sub(anchor) / interval)
	if n < 1 {
		return time.Time{}, anchor.Add(interval), false
	}
	windowEnd = anchor.Add(time.Duration(n) * interval)
	return windowEnd, windowEnd.Add(interval), true
}

// RunName is the re-search Run of a request generation for the window ending at windowEnd.
func RunName(request string, generation int64, windowEnd time.Time) string {
	return naming.ResearchRunName(request, generation, windowEnd.Unix())
}

// WindowEnd is the window end a re-search Run carries (ok false for a generation's own Run).
func WindowEnd(rn *v1beta2.DynamoGraphDeploymentRun) (time.Time, bool) {
	v, ok := rn.Annotations[v1beta2.AnnotationResearchWindowEnd]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// IsRun reports whether rn is a re-search Run.
func IsRun(rn *v1beta2.DynamoGraphDeploymentRun) bool {
	_, ok := rn.Annotations[v1beta2.AnnotationResearchWindowEnd]
	return ok
}

// SearchSpec is what a re-search Run searches: its spec with the workload replaced by the window
// of captured traffic (Dynamo's request-trace format, replayed at its own timestamps), which the
// input container cuts from the capture claim into WindowFile.
func SearchSpec(spec *v1beta2.DynamoGraphDeploymentRequestSpec) *v1beta2.DynamoGraphDeploymentRequestSpec {
	out := spec.DeepCopy()
	claim := ""
	if d := spec.Deployment; d != nil && d.Capture != nil {
		claim = d.Capture.ClaimName
	}
	out.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{
		Format: v1beta2.TraceFormatDynamo,
		Source: &v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: claim, Path: WindowFile}},
		Replay: &v1beta2.TraceReplay{ArrivalSpeedupRatio: ptr.To(1.0)},
	}}
	return out
}

// BaselineInput is the AISimulate prediction input that evaluates a deployed candidate under a
// re-search's traffic: the Candidate's spec.parameters (a complete prediction input, as the
// search wrote it) with traffic and evaluation taken from the re-search's effective input, so
// both are judged on the same window and SLA. The candidate's engine and execution stay as
// the search resolved them.
func BaselineInput(parameters []byte, searchInput map[string]any) (*aisimulate.Input, error) {
	var params map[string]any
	if err := json.Unmarshal(parameters, &params); err != nil || params == nil {
		return nil, fmt.Errorf("the deployed candidate's spec.parameters is not a JSON object")
	}
	if _, ok := params["engine"].(map[string]any); !ok {
		return nil, fmt.Errorf("the deployed candidate's spec.parameters has no engine section")
	}
	traffic, ok := searchInput["traffic"]
	if !ok {
		return nil, fmt.Errorf("the re-search input has no traffic section")
	}
	params["traffic"] = traffic
	if ev, ok := searchInput["evaluation"]; ok {
		params["evaluation"] = ev
	} else {
		delete(params, "evaluation")
	}
	data, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return aisimulate.Canonicalize(data)
}
