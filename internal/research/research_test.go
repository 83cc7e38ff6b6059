package research

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

func TestDueTick(t *testing.T) {
	epoch := time.Unix(0, 0)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name     string
		now      time.Time
		interval time.Duration
		wantEnd  time.Time
		wantNext time.Time
		wantDue  bool
	}{
		{"between ticks", at("2026-12-03T10:17:30Z"), 6 * time.Hour, at("2026-12-03T06:00:00Z"), at("2026-12-03T12:00:00Z"), true},
		{"on a tick", at("2026-12-03T12:00:00Z"), 6 * time.Hour, at("2026-12-03T12:00:00Z"), at("2026-12-03T18:00:00Z"), true},
		{"every minute", at("2026-12-03T10:17:59Z"), time.Minute, at("2026-12-03T10:17:00Z"), at("2026-12-03T10:18:00Z"), true},
		{"an interval that does not divide a day", at("1970-01-01T10:00:00Z"), 7 * time.Hour, at("1970-01-01T07:00:00Z"), at("1970-01-01T14:00:00Z"), true},
		{"before the first", at("1970-01-01T00:30:00Z"), time.Hour, time.Time{}, at("1970-01-01T01:00:00Z"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			end, next, due := DueTick(epoch, tc.now, tc.interval)
			if due != tc.wantDue || !end.Equal(tc.wantEnd) || !next.Equal(tc.wantNext) {
				t.Errorf("DueTick = %s, %s, %v; want %s, %s, %v", end, next, due, tc.wantEnd, tc.wantNext, tc.wantDue)
			}
		})
	}
	// The same tick whatever the moment inside it: a restarted operator names the same Run.
	a, _, _ := DueTick(epoch, at("2026-12-03T06:00:01Z"), 6*time.Hour)
	b, _, _ := DueTick(epoch, at("2026-12-03T11:59:59Z"), 6*time.Hour)
	if RunName("req", 3, a) != RunName("req", 3, b) || RunName("req", 3, a) != "req-run-3-r1796277600" {
		t.Errorf("run names %s, %s", RunName("req", 3, a), RunName("req", 3, b))
	}
}

func TestMargin(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    float64
		wantErr bool
	}{{"", 0.10, false}, {"0%", 0, false}, {"25%", 0.25, false}, {"100%", 1, false}, {"10", 0, true}, {"101%", 0, true}, {"-5%", 0, true}} {
		spec := &v1beta2.DynamoGraphDeploymentRequestSpec{Deployment: &v1beta2.DeploymentSpec{ReplaceMargin: tc.in}}
		got, err := Margin(spec)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("Margin(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestSearchSpecReplacesOnlyTheWorkload(t *testing.T) {
	spec := &v1beta2.DynamoGraphDeploymentRequestSpec{
		Model:      v1beta2.ModelSpec{Name: "Qwen/Qwen3-0.6B"},
		Workload:   &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{InputTokens: ptr.To[int32](512)}},
		SLA:        &v1beta2.SLASpec{TTFTMs: ptr.To(200.0)},
		Deployment: &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traffic"}},
		Research:   &v1beta2.ResearchSpec{IntervalMinutes: 60},
	}
	before := spec.DeepCopy()
	got := SearchSpec(spec)
	want := before.DeepCopy()
	want.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{Format: v1beta2.TraceFormatDynamo,
		Source: &v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "traffic", Path: WindowFile}},
		Replay: &v1beta2.TraceReplay{ArrivalSpeedupRatio: ptr.To(1.0)}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SearchSpec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, spec); diff != "" {
		t.Errorf("SearchSpec changed its argument (-before +after):\n%s", diff)
	}
}

func TestBaselineInput(t *testing.T) {
	params := []byte(`{"engine":{"backend":"vllm","mode":"aggregated"},"execution":{"seed":7},
		"traffic":{"load":{"type":"concurrency","concurrency":10}},"evaluation":{"sla":{"ttft_ms":900}}}`)
	search := map[string]any{"traffic": map[string]any{"load": map[string]any{"type": "trace_timestamps", "speedup": 1}},
		"evaluation": map[string]any{"sla": map[string]any{"ttft_ms": 200}}, "optimizer": map[string]any{"max_trials": 64}}
	in, err := BaselineInput(params, search)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(in.JSON, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"engine": map[string]any{"backend": "vllm", "mode": "aggregated"}, "execution": map[string]any{"seed": 7.0},
		"traffic":    map[string]any{"load": map[string]any{"type": "trace_timestamps", "speedup": 1.0}},
		"evaluation": map[string]any{"sla": map[string]any{"ttft_ms": 200.0}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BaselineInput (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(in.Hash, "sha256:") {
		t.Errorf("hash %q", in.Hash)
	}
	for _, bad := range []string{`[1]`, `{"traffic":{}}`} {
		if _, err := BaselineInput([]byte(bad), search); err == nil {
			t.Errorf("BaselineInput(%s) accepted", bad)
		}
	}
	if _, err := BaselineInput(params, map[string]any{}); err == nil || !strings.Contains(err.Error(), "traffic") {
		t.Errorf("a re-search input without traffic: %v", err)
	}
}
