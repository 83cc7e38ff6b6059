package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/ui"
)

// serveCalibration starts the UI with the calibration profile in namespace calibrationNS and
// opens it.
func serveCalibration(t *testing.T, calibrationNS string) *httptest.Server {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ui.New(ui.Options{Client: c, CalibrationNamespace: calibrationNS, MinObservations: 2})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	srv.Allow(ts.Listener.Addr().String())
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	ts.Client().Jar = jar
	resp, err := ts.Client().Get(srv.LoginURL(ts.URL + "/calibration"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return ts
}

var (
	cellsRow = regexp.MustCompile(`<tr data-used="[a-z]+">(.*?)</tr>`)
	cell     = regexp.MustCompile(`<td>(.*?)</td>`)
)

// TestCalibrationPage: the page, linked from every page's navigation, lists the profile's keys
// with their corrections, spread and counts, and marks those below the minimum count unused.
func TestCalibrationPage(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client, "ui-calib")
	ts := serveCalibration(t, ns)

	code, body := get(t, ts, "/calibration")
	if code != http.StatusOK || !strings.Contains(body, `id="calibration-empty"`) {
		t.Fatalf("empty profile: %d\n%s", code, body)
	}
	if !strings.Contains(body, `<a href="/calibration">Calibration</a>`) {
		t.Error("the navigation has no link to the calibration page")
	}

	key := calibration.Key{Backend: "sglang", System: "h100_sxm", Model: "Qwen/Qwen3-8B", Mode: "disaggregated", Parallelism: "prefill:tp2,decode:tp4"}
	agg := key
	agg.Mode, agg.Parallelism = "aggregated", "agg:tp8"
	at := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	for i, o := range []struct {
		key      calibration.Key
		observed float64
	}{{key, 90}, {key, 110}, {agg, 300}} {
		if err := calibration.Record(ctx, env.Client, env.Client, ns, calibration.Observation{Key: o.key,
			Metrics:    map[string]calibration.Pair{calibration.MetricThroughputPerGPU: {Predicted: 100, Observed: o.observed}},
			MeasuredAt: at.Add(time.Duration(i) * time.Hour), Source: fmt.Sprintf("%s/r@gen%d", ns, i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	// An observation written into the ConfigMap under another namespace's name is not shown:
	// the operator ignores it.
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: calibration.ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[calibration.DataKey] = strings.Replace(cm.Data[calibration.DataKey], `"observations":[`,
		`"observations":[{"key":{"backend":"sglang","system":"h100_sxm","model":"Qwen/Qwen3-8B","mode":"aggregated","parallelism":"agg:tp8"},`+
			`"metrics":{"throughputPerGpu":{"predicted":100,"observed":900}},"measuredAt":"2026-04-01T07:00:00Z","source":"other/x@gen1"},`, 1)
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	code, body = get(t, ts, "/calibration")
	if code != http.StatusOK {
		t.Fatalf("GET /calibration: %d\n%s", code, body)
	}
	var rows [][]string
	for _, m := range cellsRow.FindAllStringSubmatch(body, -1) {
		var cells []string
		for _, c := range cell.FindAllStringSubmatch(m[1], -1) {
			cells = append(cells, c[1])
		}
		rows = append(rows, cells)
	}
	want := [][]string{
		{"sglang", "h100_sxm", "Qwen/Qwen3-8B", "aggregated", "agg:tp8", "throughputPerGpu", "3.000", "0.000", "1", "no: fewer than 2"},
		{"sglang", "h100_sxm", "Qwen/Qwen3-8B", "disaggregated", "prefill:tp2,decode:tp4", "throughputPerGpu", "1.000", "0.100", "2", "yes"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("calibration table (-want +got):\n%s", diff)
	}
	if !strings.Contains(body, `id="calibration-ignored">1 observations`) {
		t.Errorf("the observation under another namespace's name is not reported as ignored:\n%s", body)
	}
	if !strings.Contains(body, "3 observations (at most 500 kept") || !strings.Contains(body, "newest 2026-04-01T10:00:00Z") {
		t.Errorf("summary line missing:\n%s", body)
	}
}

// TestCalibrationPageUnconfigured: without the operator's namespace the page says how to give it.
func TestCalibrationPageUnconfigured(t *testing.T) {
	ts := serveCalibration(t, "")
	code, body := get(t, ts, "/calibration")
	if code != http.StatusOK || !strings.Contains(body, `id="calibration-unconfigured"`) || !strings.Contains(body, "--calibration-namespace") {
		t.Errorf("no calibration namespace: %d\n%s", code, body)
	}
}

// TestCalibrationPageUnreadable: a damaged profile is an error page naming the ConfigMap.
func TestCalibrationPageUnreadable(t *testing.T) {
	ns := testenv.Namespace(t, env.Client, "ui-calib-bad")
	cm := map[string]string{calibration.DataKey: "{not json"}
	if err := env.Client.Create(context.Background(), configMap(ns, calibration.ConfigMapName, cm)); err != nil {
		t.Fatal(err)
	}
	ts := serveCalibration(t, ns)
	code, body := get(t, ts, "/calibration")
	if code == http.StatusOK || !strings.Contains(body, ns+"/"+calibration.ConfigMapName) {
		t.Errorf("damaged profile: %d\n%s", code, body)
	}
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}
