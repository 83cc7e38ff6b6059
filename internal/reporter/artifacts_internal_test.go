package reporter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
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
		return fmt.Appendf(nil, "\n%s test: kept the first %d of %d bytes\n", TruncatedMarker, kept, total)
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
		i := bytes.LastIndex(got, []byte("\n"+TruncatedMarker))
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
