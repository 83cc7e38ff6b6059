// Package document reads and writes AISimulate input documents: the one YAML decoder of the
// contract (AISimulate's strict loading keeps YAML's own typing, so 1024, 1024.0 and "1024"
// stay different), `--set` overrides, and the one canonical JSON writer that input hashes and
// fingerprints are computed from. The operator (admission, dgdrctl check-input) and the local
// recommender both decode through it.
package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxDepth bounds the nesting of a document; real inputs nest about eight levels.
const MaxDepth = 64

// Kind is the type of a parsed YAML scalar or collection.
type Kind int

// Value kinds.
const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
	KindMap
	KindSeq
)

func (k Kind) String() string {
	return [...]string{"null", "boolean", "integer", "number", "string", "mapping", "list"}[k]
}

// Value is one node of an input document. Maps keep their key order so that errors can be
// reported in document order.
type Value struct {
	Kind Kind
	Bool bool
	Int  int64
	Num  float64
	// Literal is a number as written, when that is valid JSON (1024.0 stays 1024.0); otherwise
	// the number's canonical form.
	Literal string
	Str     string
	Keys    []string
	Map     map[string]*Value
	Seq     []*Value
}

// Error is a problem found while decoding, at a place of the document.
type Error struct {
	// Path is the location in the document, e.g. ["traffic", "stop", "requests"]; empty for the
	// root. List items are named by their index ("[2]").
	Path []string
	// Line is the 1-based line in the YAML text, or 0.
	Line int
	// Message says what is wrong.
	Message string
}

// PathString renders the path in dotted form ("traffic.stop", "<root>").
func (e *Error) PathString() string {
	if len(e.Path) == 0 {
		return "<root>"
	}
	return strings.Join(e.Path, ".")
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %s", e.PathString(), e.Line, e.Message)
	}
	return e.PathString() + ": " + e.Message
}

// Parse parses exactly one YAML (or JSON) document into a Value tree. An empty document is a
// null Value. Duplicate keys, non-string keys, merge keys, unknown tags, integers out of range
// and non-finite numbers (AISimulate's floats reject .inf and .nan) are errors that name their
// path and line.
func Parse(data []byte) (*Value, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &Value{Kind: KindNull}, nil
		}
		return nil, &Error{Message: fmt.Sprintf("invalid YAML: %v", err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{Line: extra.Line, Message: "invalid YAML: expected one document, found several"}
	}
	return fromNode(&doc, nil)
}

// ParseMapping parses a document that must be one mapping.
func ParseMapping(data []byte) (*Value, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if v.Kind != KindMap {
		if v.Kind == KindNull {
			return nil, &Error{Message: "the document is empty"}
		}
		return nil, &Error{Message: "the document must be one mapping, got " + v.Kind.String()}
	}
	return v, nil
}

func child(path []string, key string) []string {
	return append(append(make([]string, 0, len(path)+1), path...), key)
}

func fromNode(n *yaml.Node, path []string) (*Value, error) {
	fail := func(format string, args ...any) error {
		return &Error{Path: path, Line: n.Line, Message: fmt.Sprintf(format, args...)}
	}
	if len(path) > MaxDepth {
		return nil, fail("nesting deeper than %d levels", MaxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return &Value{Kind: KindNull}, nil
		}
		return fromNode(n.Content[0], path)
	case yaml.AliasNode:
		return fromNode(n.Alias, path)
	case yaml.MappingNode:
		v := &Value{Kind: KindMap, Map: make(map[string]*Value, len(n.Content)/2)}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn := n.Content[i]
			if kn.Kind != yaml.ScalarNode || kn.Tag == "!!merge" {
				return nil, &Error{Path: path, Line: kn.Line, Message: "mapping keys must be plain strings"}
			}
			key := kn.Value
			if _, dup := v.Map[key]; dup {
				return nil, &Error{Path: child(path, key), Line: kn.Line, Message: fmt.Sprintf("duplicate key %q (AISimulate would keep only one of them)", key)}
			}
			c, err := fromNode(n.Content[i+1], child(path, key))
			if err != nil {
				return nil, err
			}
			v.Keys = append(v.Keys, key)
			v.Map[key] = c
		}
		return v, nil
	case yaml.SequenceNode:
		v := &Value{Kind: KindSeq, Seq: make([]*Value, 0, len(n.Content))}
		for i, c := range n.Content {
			x, err := fromNode(c, child(path, "["+strconv.Itoa(i)+"]"))
			if err != nil {
				return nil, err
			}
			v.Seq = append(v.Seq, x)
		}
		return v, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return &Value{Kind: KindNull}, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, fail("%v", err)
			}
			return &Value{Kind: KindBool, Bool: b}, nil
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				return nil, fail("integer %s is out of range", n.Value)
			}
			return &Value{Kind: KindInt, Int: i, Literal: literal(n.Value, strconv.FormatInt(i, 10))}, nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, fail("%v", err)
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fail("%s is not a finite number (AISimulate's numbers must be finite)", n.Value)
			}
			return &Value{Kind: KindFloat, Num: f, Literal: literal(n.Value, strconv.FormatFloat(f, 'g', -1, 64))}, nil
		case "!!str":
			return &Value{Kind: KindString, Str: n.Value}, nil
		default:
			return nil, fail("unsupported tag %s", n.Tag)
		}
	}
	return nil, fail("unexpected YAML node")
}

// literal keeps a number as written when it is a valid JSON number; YAML-only spellings (0x10,
// .5, 1_000, +1) get the canonical form.
func literal(written, canonical string) string {
	if json.Valid([]byte(written)) && !strings.HasPrefix(written, "+") {
		return written
	}
	return canonical
}

// Clone returns a deep copy.
func (v *Value) Clone() *Value {
	if v == nil {
		return nil
	}
	c := *v
	if v.Map != nil {
		c.Keys = append([]string(nil), v.Keys...)
		c.Map = make(map[string]*Value, len(v.Map))
		for k, x := range v.Map {
			c.Map[k] = x.Clone()
		}
	}
	if v.Seq != nil {
		c.Seq = make([]*Value, len(v.Seq))
		for i, x := range v.Seq {
			c.Seq[i] = x.Clone()
		}
	}
	return &c
}

// Set replaces (or adds) key in a map value, keeping key order.
func (v *Value) Set(key string, x *Value) {
	if _, ok := v.Map[key]; !ok {
		v.Keys = append(v.Keys, key)
	}
	v.Map[key] = x
}

// ApplySet applies one `--set PATH=YAML` override the way AISimulate does (contract §12): the
// leaf is replaced, missing intermediate mappings are created, sequence indices are refused.
func ApplySet(root *Value, expr string) error {
	path, raw, ok := strings.Cut(expr, "=")
	if !ok || path == "" {
		return fmt.Errorf("--set %s: expected PATH=VALUE", expr)
	}
	segs := strings.Split(path, ".")
	for _, s := range segs {
		if s == "" {
			return fmt.Errorf("--set %s: empty path segment", path)
		}
		if _, err := strconv.Atoi(s); err == nil {
			return fmt.Errorf("--set %s: numeric path segments (sequence indices) are not supported", path)
		}
	}
	val, err := Parse([]byte(raw))
	if err != nil {
		return fmt.Errorf("--set %s: %v", path, err)
	}
	if root.Kind != KindMap {
		return fmt.Errorf("--set %s: document is not a mapping", path)
	}
	cur := root
	for i, s := range segs[:len(segs)-1] {
		next, ok := cur.Map[s]
		if !ok || next.Kind == KindNull {
			next = &Value{Kind: KindMap, Map: map[string]*Value{}}
			cur.Set(s, next)
		}
		if next.Kind != KindMap {
			return fmt.Errorf("--set %s: %s is a %s, not a mapping", path, strings.Join(segs[:i+1], "."), next.Kind)
		}
		cur = next
	}
	cur.Set(segs[len(segs)-1], val)
	return nil
}

// JSON converts the tree to the generic JSON form the schema validator and the lowering work on:
// map[string]any, []any, json.Number (as written), string, bool and nil.
func (v *Value) JSON() any {
	switch v.Kind {
	case KindBool:
		return v.Bool
	case KindInt, KindFloat:
		return json.Number(v.Literal)
	case KindString:
		return v.Str
	case KindMap:
		m := make(map[string]any, len(v.Map))
		for k, x := range v.Map {
			m[k] = x.JSON()
		}
		return m
	case KindSeq:
		s := make([]any, len(v.Seq))
		for i, x := range v.Seq {
			s[i] = x.JSON()
		}
		return s
	}
	return nil
}

// Canonical encodes a generic JSON value (as JSON returns, or decoded with UseNumber) with
// sorted keys, no insignificant whitespace and no HTML escaping. Numbers are written as they
// were decoded, so 1 and 1.0 hash differently, as AISimulate treats them differently.
func Canonical(v any) ([]byte, error) {
	if out, ok := appendCanonical(nil, v); ok {
		return out, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
