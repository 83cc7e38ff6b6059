// Package capture writes synthetic Frontend request-trace captures for tests, as a capture claim
// holds them: complete gzip segments of request_end records in one directory per Frontend pod.
package capture

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SequenceHashes is n distinct input sequence hashes, comma-separated (a JSON array's body).
func SequenceHashes(n int) string {
	hashes := make([]string, n)
	for i := range hashes {
		hashes[i] = fmt.Sprint(uint64(1)<<63 + uint64(i))
	}
	return strings.Join(hashes, ", ")
}

// RequestEnd writes one request_end record to w: received at receivedMs, ended 5 ms later, 10
// output tokens, an input of inputLength tokens whose blocks hash to ids (SequenceHashes). It
// returns the bytes written.
func RequestEnd(w io.Writer, receivedMs int64, inputLength int, ids string) (int, error) {
	return fmt.Fprintf(w, `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": %d, "request": {"output_tokens": 10, `+
		`"request_received_ms": %d, "replay": {"trace_block_size": 16, "input_length": %d, "input_sequence_hashes": [%s]}}}`+"\n",
		receivedMs+5, receivedMs, inputLength, ids)
}

// WriteSegment writes segment seg of Frontend pod pod under dir
// (fe-<pod>/request-trace.<seg>.jsonl.gz, fast compression) with what write writes to it
// uncompressed, and completes it.
func WriteSegment(t testing.TB, dir string, pod, seg int, write func(io.Writer)) {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("fe-%d", pod), fmt.Sprintf("request-trace.%06d.jsonl.gz", seg))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	write(zw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
