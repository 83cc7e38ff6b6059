package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// TestCalibrationShowAndReset: show prints the namespace's profile's corrections (and
// observations) from the API server, as the operator uses them: observations another namespace's
// name was written into it under are counted and left out; reset refuses without --yes and then
// deletes the profile.
func TestCalibrationShowAndReset(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client, "ctl-calib")
	tp2 := calibration.Key{Backend: "vllm", System: "h200_sxm", Model: "Qwen/Qwen3-8B", Mode: "aggregated", Parallelism: "agg:tp2"}
	tp4 := tp2
	tp4.Parallelism = "agg:tp4"
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, o := range []struct {
		key       calibration.Key
		ttft, itl float64
	}{{tp2, 150, 11}, {tp2, 120, 12}, {tp2, 200, 13}, {tp4, 50, 0}} {
		m := map[string]calibration.Pair{calibration.MetricTTFTMs: {Predicted: 100, Observed: o.ttft}}
		if o.itl > 0 {
			m[calibration.MetricITLMs] = calibration.Pair{Predicted: 10, Observed: o.itl}
		}
		if err := calibration.Record(ctx, env.Client, env.Client, ns, calibration.Observation{Key: o.key, Metrics: m,
			MeasuredAt: at.Add(time.Duration(i) * time.Minute), Source: ns + "/chat@gen" + string(rune('1'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	// The namespace's tenant may write its profile ConfigMap: an observation under another
	// namespace's name is not the namespace's.
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: calibration.ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[calibration.DataKey] = strings.Replace(cm.Data[calibration.DataKey], `"observations":[`,
		`"observations":[{"key":{"backend":"vllm","system":"h200_sxm","model":"Qwen/Qwen3-8B","mode":"aggregated","parallelism":"agg:tp4"},`+
			`"metrics":{"ttftMs":{"predicted":100,"observed":900}},"measuredAt":"2026-03-01T11:00:00Z","source":"other/x@gen1"},`, 1)
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--kubeconfig", kubeconfig, "-n", ns}

	out, errOut, code := run(t, append([]string{"calibration", "show", "--observations"}, conn...)...)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	want := "calibration profile " + ns + "/dgdr-operator-calibration: 1 observations from other namespaces are ignored\n" +
		"calibration profile " + ns + "/dgdr-operator-calibration: 4 observations (at most 500 kept); corrections are used from 3\n\n" + `BACKEND  SYSTEM    MODEL          MODE        PARALLELISM  METRIC  RATIO  SPREAD  N  USED
vllm     h200_sxm  Qwen/Qwen3-8B  aggregated  agg:tp2      ttftMs  1.500  0.300   3  yes
vllm     h200_sxm  Qwen/Qwen3-8B  aggregated  agg:tp2      itlMs   1.200  0.100   3  yes
vllm     h200_sxm  Qwen/Qwen3-8B  aggregated  agg:tp4      ttftMs  0.500  0.000   1  no

MEASURED              SOURCE          KEY                                             METRIC  PREDICTED  OBSERVED
2026-03-01T12:00:00Z  team/chat@gen1  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  ttftMs  100        150
2026-03-01T12:00:00Z  team/chat@gen1  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  itlMs   10         11
2026-03-01T12:01:00Z  team/chat@gen2  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  ttftMs  100        120
2026-03-01T12:01:00Z  team/chat@gen2  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  itlMs   10         12
2026-03-01T12:02:00Z  team/chat@gen3  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  ttftMs  100        200
2026-03-01T12:02:00Z  team/chat@gen3  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  itlMs   10         13
2026-03-01T12:03:00Z  team/chat@gen4  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp4  ttftMs  100        50
`
	// The sources are the namespace's, whose name is longer than "team".
	want = strings.ReplaceAll(want, "SOURCE  ", "SOURCE  "+strings.Repeat(" ", len(ns)-len("team")))
	want = strings.ReplaceAll(want, "team/chat", ns+"/chat")
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("show (-want +got):\n%s", diff)
	}

	if _, errOut, code := run(t, append([]string{"calibration", "reset"}, conn...)...); code == 0 || !strings.Contains(errOut, "--yes") {
		t.Errorf("reset without --yes: exit %d, stderr %q; want a refusal naming --yes", code, errOut)
	}
	if p, err := calibration.Load(ctx, env.Client, ns); err != nil || len(p.Observations) != 5 {
		t.Fatalf("after a refused reset: %d observations, %v; want 5", len(p.Observations), err)
	}
	if out, errOut, code := run(t, append([]string{"calibration", "reset", "--yes"}, conn...)...); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("reset --yes: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, _ = run(t, append([]string{"calibration", "show"}, conn...)...)
	if diff := cmp.Diff("calibration profile "+ns+"/dgdr-operator-calibration: no observations\n", out); diff != "" {
		t.Errorf("show after reset (-want +got):\n%s", diff)
	}
}
