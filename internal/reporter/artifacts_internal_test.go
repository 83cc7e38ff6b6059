package reporter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/ledger"
)

// TestGzipCapped: content that fits is kept whole; content that does not is cut at a line break
// under the budget and ends with the marker line, which ledger readers skip.
func TestGzipCapped(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var ledger strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&ledger, `{"event":"candidate_completed","value":{"candidate_id":"candidate-%06d","status":"infeasible","reason_category":"%x","used_gpus":%d}}`+"\n", i+1, rnd.Uint64(), i%8+1)
	}
	data := []byte(ledger.String())
	open := func() (io.ReadCloser, int64, error) {
		return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
	}
	marker := func(kept, total int64) []byte {
		return fmt.Appendf(nil, "\n%s test: kept the first %d of %d bytes\n", candidates.TruncatedMarker, kept, total)
	}
	unzip := func(z []byte) []byte {
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	z, cut, err := gzipCapped(open, 4<<20, marker)
	if err != nil || cut || !bytes.Equal(unzip(z), data) {
		t.Fatalf("within the budget: cut %v, err %v, whole %v", cut, err, bytes.Equal(unzip(z), data))
	}

	for _, budget := range []int{200 << 10, 64 << 10, 9 << 10, 100} {
		z, cut, err := gzipCapped(open, budget, marker)
		if err != nil || !cut {
			t.Fatalf("budget %d: cut %v, err %v", budget, cut, err)
		}
		if len(z) > budget && budget > artifactsReserve {
			t.Errorf("budget %d: %d compressed bytes", budget, len(z))
		}
		got := unzip(z)
		i := bytes.LastIndex(got, []byte("\n"+candidates.TruncatedMarker))
		if i < 0 || !bytes.HasSuffix(got, []byte("\n")) {
			t.Fatalf("budget %d: no marker line at the end", budget)
		}
		kept := got[:i]
		if !bytes.HasPrefix(data, kept) || (len(kept) > 0 && kept[len(kept)-1] != '\n') {
			t.Errorf("budget %d: the kept %d bytes are not a line-aligned prefix", budget, len(kept))
		}
		if !bytes.Contains(got[i:], fmt.Appendf(nil, "kept the first %d of %d bytes", len(kept), len(data))) {
			t.Errorf("budget %d: marker %q", budget, got[i:])
		}
		events, err := output.ReadEvents(bytes.NewReader(got))
		if err != nil || len(events) != bytes.Count(kept, []byte("\n")) {
			t.Errorf("budget %d: the cut ledger reads as %d events (err %v), want %d", budget, len(events), err, bytes.Count(kept, []byte("\n")))
		}
	}
}

// TestArtifactsKeepTheLiveLedger: a search stopped before AISimulate copied its ledger into the
// output directory keeps the monitor's ledger as the Run's artifacts.
func TestArtifactsKeepTheLiveLedger(t *testing.T) {
	lines := outputtest.RealLedger(t)
	out, tmp := t.TempDir(), t.TempDir()
	live := strings.Join(lines[:7], "") + lines[7][:40]
	outputtest.Append(t, filepath.Join(tmp, "aisimulate-monitor-abcdefgh", "events.jsonl"), live)
	r := &Reporter{OutputDir: out}
	run := &v1beta2.DynamoGraphDeploymentRun{}
	run.Name, run.Namespace, run.UID = "r", "ns", "uid"
	if cm, _, err := r.buildArtifacts(run); err != nil || cm != nil {
		t.Fatalf("without a tail: %v, %v", cm, err)
	}
	r.tail = ledger.NewTail(out, tmp, candidates.BestSoFar{})
	if err := r.tail.Poll(); err != nil {
		t.Fatal(err)
	}
	cm, truncated, err := r.buildArtifacts(run)
	if err != nil || cm == nil || truncated {
		t.Fatalf("%v, truncated %v, err %v", cm, truncated, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(cm.BinaryData[jobcontract.ArtifactEventsKey]))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(zr)
	if string(got) != live {
		t.Errorf("kept %d bytes, want the live ledger's %d", len(got), len(live))
	}
	if _, ok := cm.BinaryData[jobcontract.ArtifactRecommendationKey]; ok {
		t.Error("a recommendation.json was kept although there is none")
	}
	// Once the output copy exists, it is what is kept.
	outputtest.Append(t, filepath.Join(out, output.EventsFile), lines[0])
	cm, _, _ = r.buildArtifacts(run)
	zr, _ = gzip.NewReader(bytes.NewReader(cm.BinaryData[jobcontract.ArtifactEventsKey]))
	if got, _ := io.ReadAll(zr); !slices.Equal(got, []byte(lines[0])) {
		t.Errorf("with the output copy: kept %q", got)
	}
}
