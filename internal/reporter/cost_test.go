package reporter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/pricing"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
)

// TestPublishedCostAndPrinterColumns: the reporter computes each Candidate's cost from the price
// the Run recorded, and `kubectl get dgdc` (the API server's Table of the CRD's printer columns)
// prints whole tokens per second, milliseconds with one decimal and the cost per hour.
func TestPublishedCostAndPrinterColumns(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	if code := recommend(t, outputtest.SearchInput, dir); code != 0 {
		t.Fatalf("aisim exit %d", code)
	}
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-7", 3)
	price := &v1beta2.RunPricing{System: "h200_sxm", Currency: "USD", PricePerGPUHour: "3.50"}
	run.Status.Pricing = price
	if err := k8s.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	exited <- 0
	if _, err := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited)).Run(ctx); err != nil {
		t.Fatal(err)
	}
	published := listCandidates(t, ns)
	if len(published) != 3 {
		t.Fatalf("%d Candidates published, want 3", len(published))
	}

	wantRows := map[string][]any{}
	for _, c := range published {
		m := c.Status.Metrics
		if m == nil || m.Throughput == nil || m.ThroughputPerGPU == nil || m.ThroughputPerUser == nil || m.TTFTMs == nil || m.ITLMs == nil {
			t.Fatalf("%s: incomplete metrics %+v", c.Name, m)
		}
		want := pricing.Cost(price, c.Spec.GPUs, m.Throughput)
		if want == nil || want.PerMillionOutputTokens == "" {
			t.Fatalf("%s: no cost computed for %d GPUs at %v tok/s", c.Name, c.Spec.GPUs, *m.Throughput)
		}
		if diff := cmp.Diff(want, m.Cost); diff != "" {
			t.Errorf("%s: status.metrics.cost (-want +got):\n%s", c.Name, diff)
		}
		if wantPerHour := strconv.FormatFloat(3.5*float64(c.Spec.GPUs), 'f', 2, 64); m.Cost.PerHour != wantPerHour {
			t.Errorf("%s: perHour %s, want %s for %d GPUs", c.Name, m.Cost.PerHour, wantPerHour, c.Spec.GPUs)
		}
		// Name, Rank, Backend, Mode, GPUs, Tok/s/GPU, Tok/s/User, TTFT ms, ITL ms, Cost/h (Age is not compared).
		wantRows[c.Name] = []any{c.Name, float64(c.Status.Rank), string(c.Spec.Backend), string(c.Spec.Mode), float64(c.Spec.GPUs),
			math.Round(*m.ThroughputPerGPU), math.Round(*m.ThroughputPerUser),
			strconv.FormatFloat(*m.TTFTMs, 'f', 1, 64), strconv.FormatFloat(*m.ITLMs, 'f', 1, 64),
			fmt.Sprintf("%s USD", m.Cost.PerHour)}
	}

	table := getTable(t, ns)
	var names []string
	for _, col := range table.ColumnDefinitions {
		names = append(names, col.Name)
	}
	wantColumns := []string{"Name", "Rank", "Backend", "Mode", "GPUs", "Tok/s/GPU", "Tok/s/User", "TTFT ms", "ITL ms", "Cost/h"}
	if diff := cmp.Diff(wantColumns, names[:len(wantColumns)]); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	gotRows := map[string][]any{}
	for _, row := range table.Rows {
		gotRows[row.Cells[0].(string)] = row.Cells[:len(wantColumns)]
	}
	if diff := cmp.Diff(wantRows, gotRows); diff != "" {
		t.Errorf("kubectl get dgdc cells (-want +got):\n%s", diff)
	}
}

// getTable lists the namespace's Candidates as the API server's Table, the way kubectl get does.
func getTable(t *testing.T, ns string) *metav1.Table {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.GroupVersion = &v1beta2.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body, err := rc.Get().Namespace(ns).Resource("dynamographdeploymentcandidates").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		Param("includeObject", "None").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("not a Table: %v\n%s", err, body)
	}
	return table
}
