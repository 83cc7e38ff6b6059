package input

import (
	"slices"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
)

// traceFormats are the contract's trace formats; aisim reads mooncake and dynamo.
var traceFormats = []string{"mooncake", "mooncake-delta", "agentic_mooncake", "applied_compute_agentic", "dynamo", "weka"}

// decodeTraceTraffic decodes traffic with a trace source: the file (one path), its format and
// hash-block size (a dynamo trace names its own; a given one must match it); a trace_timestamps (speedup) or concurrency load; and a stop that is absent
// (replay the whole trace) or a max_virtual_time_seconds limit.
func decodeTraceTraffic(cmd Command, to *object) (Traffic, error) {
	t := Traffic{}
	sx := to.get("source")
	for _, k := range sx.Keys {
		if slices.Contains([]string{"input_tokens", "output_tokens", "images", "new_input_tokens_per_turn", "output_tokens_per_turn", "session"}, k) {
			return t, errf(join("traffic.source", k), "not allowed with type trace (the lengths come from the trace)")
		}
	}
	so, err := newObject("traffic.source", sx, []string{"type", "paths", "format", "block_size"}, []string{"nested_timestamp_basis"})
	if err != nil {
		return t, err
	}
	src := &TraceSource{}
	if src.Format, err = so.enum("format", "mooncake", traceFormats...); err != nil {
		return t, err
	}
	if src.Format != "mooncake" && src.Format != "dynamo" {
		return t, errf(so.p("format"), "%s: %s (aisim replays mooncake and dynamo traces)", src.Format, notSupported)
	}
	px := so.get("paths")
	if px == nil {
		return t, errf(so.p("paths"), "required for a trace source")
	}
	if px.Kind != document.KindSeq || len(px.Seq) == 0 {
		return t, errf(so.p("paths"), "must be a non-empty list of file paths")
	}
	if len(px.Seq) != 1 && src.Format == "dynamo" {
		// AISimulate reads a dynamo trace's shards together; aisim reads one file.
		return t, errf(so.p("paths"), "%d dynamo shards: %s (aisim reads one file)", len(px.Seq), notSupported)
	}
	if len(px.Seq) != 1 {
		return t, errf(so.p("paths"), "exactly one path is allowed with format mooncake, got %d", len(px.Seq))
	}
	if p := px.Seq[0]; p.Kind != document.KindString || p.Str == "" {
		return t, errf(index(so.p("paths"), 0), "expected a non-empty string")
	}
	src.Path = px.Seq[0].Str
	if isDomain(so.get("block_size")) {
		return t, errf(so.p("block_size"), "must be a concrete value (trace content is not sweepable)")
	}
	if src.BlockSize, err = so.integer("block_size", 0, 1); err != nil {
		return t, err
	}
	src.BlockSizeSet = src.BlockSize > 0
	t.Trace = src
	if t.Load, err = decodeLoad(cmd, to, true, false); err != nil {
		return t, err
	}
	if !to.has("stop") {
		return t, nil
	}
	st, err := newObject("traffic.stop", to.get("stop"), []string{"max_virtual_time_seconds"},
		[]string{"requests", "requests_per_load_unit", "sessions", "sessions_per_load_unit"})
	if err != nil {
		if fe, ok := err.(*FieldError); ok && fe.Reason == notSupported {
			fe.Reason = "not allowed with a trace source (a trace runs to its end or to max_virtual_time_seconds)"
		}
		return t, err
	}
	if t.Stop.MaxVirtualSeconds, err = st.positive("max_virtual_time_seconds", 0); err != nil {
		return t, err
	}
	return t, nil
}
