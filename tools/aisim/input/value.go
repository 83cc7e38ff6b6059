package input

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Kind is the type of a parsed YAML scalar or collection. The decoder keeps
// YAML's own typing (1024 is an int, 1024.0 a float, "1024" a string) because
// the AISimulate contract is strict about it and a round trip through JSON
// would erase the difference.
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

// Value is one node of an input document. Maps keep their key order so that
// errors are reported in document order.
type Value struct {
	Kind Kind
	Bool bool
	Int  int64
	Num  float64
	Str  string
	Keys []string
	Map  map[string]*Value
	Seq  []*Value
}

// ParseYAML parses exactly one YAML document into a Value tree.
func ParseYAML(data []byte) (*Value, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return &Value{Kind: KindNull}, nil
		}
		return nil, fmt.Errorf("invalid YAML: %v", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("invalid YAML: expected one document, found several")
	}
	return fromNode(&doc, 0)
}

func fromNode(n *yaml.Node, depth int) (*Value, error) {
	if depth > 64 {
		return nil, fmt.Errorf("invalid YAML: nesting deeper than 64 levels")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return &Value{Kind: KindNull}, nil
		}
		return fromNode(n.Content[0], depth+1)
	case yaml.AliasNode:
		return fromNode(n.Alias, depth+1)
	case yaml.MappingNode:
		v := &Value{Kind: KindMap, Map: map[string]*Value{}}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn := n.Content[i]
			if kn.Kind != yaml.ScalarNode || kn.Tag == "!!merge" {
				return nil, fmt.Errorf("invalid YAML (line %d): mapping keys must be plain strings", kn.Line)
			}
			key := kn.Value
			if _, dup := v.Map[key]; dup {
				return nil, fmt.Errorf("invalid YAML (line %d): duplicate key %q", kn.Line, key)
			}
			child, err := fromNode(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			v.Keys = append(v.Keys, key)
			v.Map[key] = child
		}
		return v, nil
	case yaml.SequenceNode:
		v := &Value{Kind: KindSeq}
		for _, c := range n.Content {
			child, err := fromNode(c, depth+1)
			if err != nil {
				return nil, err
			}
			v.Seq = append(v.Seq, child)
		}
		return v, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return &Value{Kind: KindNull}, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, fmt.Errorf("invalid YAML (line %d): %v", n.Line, err)
			}
			return &Value{Kind: KindBool, Bool: b}, nil
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				return nil, fmt.Errorf("invalid YAML (line %d): integer out of range", n.Line)
			}
			return &Value{Kind: KindInt, Int: i}, nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, fmt.Errorf("invalid YAML (line %d): %v", n.Line, err)
			}
			return &Value{Kind: KindFloat, Num: f}, nil
		case "!!str":
			return &Value{Kind: KindString, Str: n.Value}, nil
		default:
			return nil, fmt.Errorf("invalid YAML (line %d): unsupported tag %s", n.Line, n.Tag)
		}
	}
	return nil, fmt.Errorf("invalid YAML: unexpected node")
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

// ApplySet applies one `--set PATH=YAML` override: the leaf is replaced,
// missing intermediate mappings are created, sequence indices are refused.
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
	val, err := ParseYAML([]byte(raw))
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

// ToAny converts the tree to plain Go values (map[string]any, []any, int64,
// float64, string, bool, nil) for JSON/YAML encoding.
func (v *Value) ToAny() any {
	switch v.Kind {
	case KindBool:
		return v.Bool
	case KindInt:
		return v.Int
	case KindFloat:
		return v.Num
	case KindString:
		return v.Str
	case KindMap:
		m := make(map[string]any, len(v.Map))
		for k, x := range v.Map {
			m[k] = x.ToAny()
		}
		return m
	case KindSeq:
		s := make([]any, len(v.Seq))
		for i, x := range v.Seq {
			s[i] = x.ToAny()
		}
		return s
	}
	return nil
}

// CanonicalJSON renders the tree with sorted keys and no insignificant
// whitespace; floats that hold an integral value keep a ".0" so that 1 and
// 1.0 (which AISimulate treats differently) fingerprint differently.
func (v *Value) CanonicalJSON() []byte {
	var b bytes.Buffer
	v.writeCanonical(&b)
	return b.Bytes()
}

func (v *Value) writeCanonical(b *bytes.Buffer) {
	switch v.Kind {
	case KindNull:
		b.WriteString("null")
	case KindBool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case KindInt:
		b.WriteString(strconv.FormatInt(v.Int, 10))
	case KindFloat:
		if math.IsNaN(v.Num) || math.IsInf(v.Num, 0) {
			b.WriteString("null")
			return
		}
		s := strconv.FormatFloat(v.Num, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		b.WriteString(s)
	case KindString:
		enc, _ := json.Marshal(v.Str)
		b.Write(enc)
	case KindMap:
		keys := append([]string(nil), v.Keys...)
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			enc, _ := json.Marshal(k)
			b.Write(enc)
			b.WriteByte(':')
			v.Map[k].writeCanonical(b)
		}
		b.WriteByte('}')
	case KindSeq:
		b.WriteByte('[')
		for i, x := range v.Seq {
			if i > 0 {
				b.WriteByte(',')
			}
			x.writeCanonical(b)
		}
		b.WriteByte(']')
	}
}
