package aisimulate

import (
	_ "embed"
	"fmt"

	"sigs.k8s.io/yaml"
)

// UnderlayVersion identifies the embedded public static underlay. It changes whenever the
// underlay document changes, so that a stored effective input can be traced to it.
const UnderlayVersion = "v2"

//go:embed underlay/v2.yaml
var underlayYAML []byte

// underlayJSON is the underlay converted once to JSON; the merge steps work on JSON.
var underlayJSON = mustYAMLToJSON(underlayYAML)

// underlayDoc is the decoded underlay; Underlay hands out deep copies.
var underlayDoc = mustDecode(underlayJSON)

// Underlay returns a fresh copy of the public static underlay as a JSON object.
func Underlay() map[string]any { return deepCopy(underlayDoc).(map[string]any) }

func mustDecode(j []byte) map[string]any {
	doc, err := decodeObject(j)
	if err != nil {
		panic(fmt.Sprintf("embedded underlay is invalid: %v", err))
	}
	return doc
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	default:
		return v
	}
}

func mustYAMLToJSON(y []byte) []byte {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		panic(fmt.Sprintf("embedded underlay is not YAML: %v", err))
	}
	return j
}
