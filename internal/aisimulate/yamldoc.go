package aisimulate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// DecodeDocument decodes a YAML (or JSON) document into a JSON object whose numbers keep the form
// they were written in (json.Number), so that 1024.0 stays distinguishable from 1024 the way
// AISimulate's strict YAML loading distinguishes them. Generic YAML-to-JSON converters lose it.
func DecodeDocument(data []byte) (map[string]any, error) {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if root.Kind == 0 {
		return nil, fmt.Errorf("the document is empty")
	}
	v, err := nodeValue(&root)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the document must be one mapping, got %s", jsonKind(v))
	}
	return obj, nil
}

func nodeValue(n *yamlv3.Node) (any, error) {
	switch n.Kind {
	case yamlv3.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0])
	case yamlv3.AliasNode:
		return nodeValue(n.Alias)
	case yamlv3.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yamlv3.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping keys must be strings", k.Line)
			}
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yamlv3.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yamlv3.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			b, err := strconv.ParseBool(strings.ToLower(n.Value))
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return b, nil
		case "!!int", "!!float":
			// Keep the written form when it is valid JSON; otherwise normalize (0x10, .5, 1_000).
			if json.Valid([]byte(n.Value)) {
				return json.Number(n.Value), nil
			}
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			data, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return json.Number(data), nil
		default:
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}
