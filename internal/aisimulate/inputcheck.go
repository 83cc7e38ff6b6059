package aisimulate

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// SchemaVersion identifies the bundled JSON Schema of the AISimulate recommend input.
const SchemaVersion = "v1"

//go:embed schema/recommend-input.v1.schema.json
var schemaJSON []byte

const schemaURL = "https://dgdr-operator.nvidia.com/schemas/aisimulate/recommend-input/v1"

// SchemaJSON returns the bundled JSON Schema document.
func SchemaJSON() []byte { return append([]byte(nil), schemaJSON...) }

// Problem is one reason AISimulate would reject an input document.
type Problem struct {
	// Path is the location in the input document, e.g. ["traffic", "stop"]; empty for the root.
	Path []string
	// Message says what is wrong, in words a user can act on.
	Message string
}

// PathString renders the path in dotted form ("traffic.stop", "<root>").
func (p Problem) PathString() string {
	if len(p.Path) == 0 {
		return "<root>"
	}
	return strings.Join(p.Path, ".")
}

func (p Problem) String() string { return p.PathString() + ": " + p.Message }

// key identifies a problem for ratcheting: same place, same message.
func (p Problem) key() string { return p.PathString() + "\x00" + p.Message }

var (
	compileOnce    sync.Once
	compiledSchema *jsonschema.Schema
	compileErr     error
)

func inputSchema() (*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
		if err != nil {
			compileErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.RegisterVocabulary(strictIntegerVocabulary())
		c.AssertVocabs()
		if err := c.AddResource(schemaURL, doc); err != nil {
			compileErr = err
			return
		}
		compiledSchema, compileErr = c.Compile(schemaURL)
	})
	return compiledSchema, compileErr
}

// CheckInput validates a recommend input document (decoded with json.Number numbers) against the
// bundled JSON Schema and the cross-field rules JSON Schema cannot express. Problems come back
// sorted by path.
func CheckInput(doc map[string]any) []Problem {
	sch, err := inputSchema()
	if err != nil {
		return []Problem{{Message: fmt.Sprintf("the bundled input schema does not compile: %v", err)}}
	}
	var problems []Problem
	if err := sch.Validate(any(doc)); err != nil {
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return []Problem{{Message: err.Error()}}
		}
		problems = append(problems, schemaProblems(verr)...)
	}
	problems = append(problems, crossFieldProblems(doc)...)
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].PathString() < problems[j].PathString() })
	return dedupe(problems)
}

// CheckInputJSON decodes data (a JSON or YAML-converted JSON object) and checks it.
func CheckInputJSON(data []byte) ([]Problem, error) {
	doc, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	return CheckInput(doc), nil
}

// schemaProblems flattens a validation error to its leaf causes. Alternatives of anyOf/oneOf
// produce many leaves; keep those of the deepest instance location, which name the real problem.
func schemaProblems(verr *jsonschema.ValidationError) []Problem {
	var leaves []*jsonschema.ValidationError
	var named []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		switch k := e.ErrorKind.(type) {
		case *kind.FalseSchema:
			// The schema forbids a field of a union section for the variant in use.
			named = append(named, Problem{Path: e.InstanceLocation,
				Message: "field not allowed here: it belongs to another type of this section (a union: change type means replacing the whole object)"})
			return
		case *kind.AdditionalProperties:
			for _, prop := range k.Properties {
				named = append(named, Problem{Path: append(append([]string(nil), e.InstanceLocation...), prop),
					Message: "unknown field (AISimulate rejects fields it does not define)"})
			}
			return
		}
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(verr)
	printer := message.NewPrinter(message.MatchLanguage("en"))
	byPath := map[string][]*jsonschema.ValidationError{}
	var order []string
	for _, l := range leaves {
		k := strings.Join(l.InstanceLocation, ".")
		if _, seen := byPath[k]; !seen {
			order = append(order, k)
		}
		byPath[k] = append(byPath[k], l)
	}
	problems := named
	for _, k := range order {
		msgs := map[string]bool{}
		var parts []string
		for _, l := range byPath[k] {
			m := l.ErrorKind.LocalizedString(printer)
			if !msgs[m] {
				msgs[m] = true
				parts = append(parts, m)
			}
		}
		sort.Strings(parts)
		problems = append(problems, Problem{Path: byPath[k][0].InstanceLocation, Message: strings.Join(parts, "; or ")})
	}
	return problems
}

func dedupe(in []Problem) []Problem {
	seen := map[string]bool{}
	out := in[:0]
	for _, p := range in {
		if !seen[p.key()] {
			seen[p.key()] = true
			out = append(out, p)
		}
	}
	return out
}

// strictIntegerVocabulary adds the keyword x-strict-integer: JSON Schema counts 8.0 as an
// integer, AISimulate does not.
func strictIntegerVocabulary() *jsonschema.Vocabulary {
	const url = "https://dgdr-operator.nvidia.com/schemas/vocab/strict-integer"
	meta, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"properties":{"x-strict-integer":{"type":"boolean"}}}`))
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, meta); err != nil {
		panic(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		panic(err)
	}
	return &jsonschema.Vocabulary{
		URL:    url,
		Schema: sch,
		Compile: func(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
			if v, ok := obj["x-strict-integer"].(bool); ok && v {
				return strictInteger{}, nil
			}
			return nil, nil
		},
	}
}

type strictInteger struct{}

func (strictInteger) Validate(ctx *jsonschema.ValidatorContext, v any) {
	n, ok := v.(json.Number)
	if ok && strings.ContainsAny(string(n), ".eE") {
		ctx.AddError(notStrictInteger{got: string(n)})
	}
}

type notStrictInteger struct{ got string }

func (notStrictInteger) KeywordPath() []string { return []string{"x-strict-integer"} }
func (e notStrictInteger) LocalizedString(*message.Printer) string {
	return fmt.Sprintf("must be written as an integer, got %s (AISimulate's integer fields are strict)", e.got)
}

// crossFieldProblems checks AISimulate's rules across fields (contract §11) that JSON Schema
// cannot express. It only looks at well-typed values; type errors are the schema's job.
func crossFieldProblems(doc map[string]any) []Problem {
	var ps []Problem
	add := func(msg string, path ...string) { ps = append(ps, Problem{Path: path, Message: msg}) }

	engine, _ := doc["engine"].(map[string]any)
	optimization, _ := doc["optimization"].(map[string]any)
	optimizer, _ := doc["optimizer"].(map[string]any)
	evaluation, _ := doc["evaluation"].(map[string]any)
	sla, _ := evaluation["sla"].(map[string]any)
	target, _ := optimization["target"].(string)

	// 1. hardware auto needs a concrete optimization.hardware.
	if engine["hardware"] == "auto" {
		if h, _ := optimization["hardware"].(string); h == "" {
			add("engine.hardware auto needs optimization.hardware (a concrete system id)", "optimization", "hardware")
		}
	}

	// 2. SLA bounds: e2e excludes ttft/itl; strict SLA, goodput targets and min_gpus need a bound.
	bound := func(k string) bool { v, ok := sla[k]; return ok && v != nil }
	if bound("e2e_ms") && (bound("ttft_ms") || bound("itl_ms")) {
		add("e2e_ms is mutually exclusive with ttft_ms and itl_ms", "evaluation", "sla")
	}
	anyBound := bound("e2e_ms") || bound("ttft_ms") || bound("itl_ms")
	if strict, _ := optimization["strict_sla"].(bool); strict && !anyBound {
		add("strict_sla needs at least one SLA bound in evaluation.sla", "optimization", "strict_sla")
	}
	if (target == "goodput" || target == "goodput_per_gpu" || target == "min_gpus") && !anyBound {
		add(fmt.Sprintf("target %s needs at least one SLA bound in evaluation.sla", target), "optimization", "target")
	}
	constraints, _ := optimization["constraints"].(map[string]any)
	if v, ok := constraints["min_goodput_rps"]; ok && v != nil && target != "min_gpus" {
		add("min_goodput_rps applies only to the min_gpus target", "optimization", "constraints", "min_goodput_rps")
	}
	if lo, ok := intOf(constraints["min_candidate_gpus"]); ok {
		hi, set := intOf(constraints["max_candidate_gpus"])
		if !set {
			hi = 32
		}
		if lo > hi {
			add(fmt.Sprintf("min_candidate_gpus (%d) exceeds max_candidate_gpus (%d)", lo, hi), "optimization", "constraints", "min_candidate_gpus")
		}
	}

	// 3. Roles must match the mode.
	modes := modesOf(engine["mode"])
	workers, _ := engine["workers"].(map[string]any)
	if len(modes) == 1 {
		switch modes[0] {
		case "aggregated":
			for _, role := range []string{"prefill", "decode"} {
				if _, ok := workers[role]; ok {
					add("role "+role+" is not allowed in aggregated mode", "engine", "workers", role)
				}
			}
			if v, ok := engine["kv_transfer"]; ok && v != nil {
				add("kv_transfer needs disaggregated mode", "engine", "kv_transfer")
			}
		case "disaggregated":
			if _, ok := workers["aggregated"]; ok {
				add("role aggregated is not allowed in disaggregated mode", "engine", "workers", "aggregated")
			}
		}
	}

	// 4. The trial budget covers every mode branch.
	if trials, ok := intOf(optimizer["max_trials"]); ok && trials < int64(len(modes)) {
		add(fmt.Sprintf("max_trials (%d) must be at least the number of mode branches (%d)", trials, len(modes)), "optimizer", "max_trials")
	}

	// 5. Traffic: stop count and rate units must match the source.
	if traffic, ok := doc["traffic"].(map[string]any); ok {
		ps = append(ps, trafficProblems(traffic)...)
	}

	// 6. vLLM and TRT-LLM need KV block sizes of at least 2.
	backends := backendsOf(engine["backend"])
	if !contains(backends, "sglang") {
		for role, w := range workers {
			wm, _ := w.(map[string]any)
			kv, _ := wm["kv_cache"].(map[string]any)
			if bs, ok := intOf(kv["block_size"]); ok && bs < 2 {
				add("vllm and trtllm need a KV block size of at least 2", "engine", "workers", role, "kv_cache", "block_size")
			}
		}
	}
	return ps
}

func trafficProblems(traffic map[string]any) []Problem {
	var ps []Problem
	add := func(msg string, path ...string) { ps = append(ps, Problem{Path: path, Message: msg}) }
	source, _ := traffic["source"].(map[string]any)
	sourceType, _ := source["type"].(string)
	if sourceType == "" {
		sourceType = "synthetic"
	}
	stop, hasStop := traffic["stop"].(map[string]any)
	var counts []string
	for k := range stop {
		counts = append(counts, k)
	}
	sort.Strings(counts)
	allowed := map[string][]string{
		"synthetic":         {"requests", "requests_per_load_unit"},
		"synthetic-session": {"sessions", "sessions_per_load_unit"},
		"trace":             {"max_virtual_time_seconds"},
	}[sourceType]
	switch {
	case sourceType != "trace" && (!hasStop || len(stop) == 0):
		add(fmt.Sprintf("%s traffic needs exactly one stop count: %s", sourceType, strings.Join(allowed, " or ")), "traffic", "stop")
	case len(counts) > 1:
		add(fmt.Sprintf("exactly one stop count is allowed, got %s", strings.Join(counts, " and ")), "traffic", "stop")
	case len(counts) == 1 && !contains(allowed, counts[0]):
		add(fmt.Sprintf("%s is not a stop count for %s traffic (use %s)", counts[0], sourceType, strings.Join(allowed, " or ")), "traffic", "stop", counts[0])
	}

	load, _ := traffic["load"].(map[string]any)
	loadType, _ := load["type"].(string)
	if loadType == "" {
		loadType = "concurrency"
	}
	switch sourceType {
	case "synthetic":
		if _, ok := load["sessions_per_second"]; ok {
			add("synthetic request traffic uses requests_per_second", "traffic", "load", "sessions_per_second")
		}
		if loadType == "trace_timestamps" {
			add("trace_timestamps needs a trace source", "traffic", "load", "type")
		}
	case "synthetic-session":
		if _, ok := load["requests_per_second"]; ok {
			add("session traffic uses sessions_per_second", "traffic", "load", "requests_per_second")
		}
		if loadType == "trace_timestamps" {
			add("trace_timestamps needs a trace source", "traffic", "load", "type")
		}
	case "trace":
		if loadType != "trace_timestamps" && loadType != "concurrency" {
			add("trace traffic accepts only trace_timestamps or concurrency loads", "traffic", "load", "type")
		}
	}
	return ps
}

func modesOf(v any) []string {
	switch m := v.(type) {
	case nil:
		return []string{"aggregated", "disaggregated"} // recommend's default mode domain
	case string:
		return []string{m}
	case map[string]any:
		return stringsOf(m["choices"])
	}
	return nil
}

func backendsOf(v any) []string {
	switch b := v.(type) {
	case nil:
		return []string{"vllm", "sglang"}
	case string:
		return []string{b}
	case map[string]any:
		return stringsOf(b["choices"])
	}
	return nil
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func intOf(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
