package aisimulate

import (
	_ "embed"
	"fmt"

	"sigs.k8s.io/yaml"
)

// UnderlayVersion identifies the embedded public static underlay. It changes whenever the
// underlay document changes, so that a stored effective input can be traced to it.
const UnderlayVersion = "v1"

//go:embed underlay/v1.yaml
var underlayYAML []byte

// underlayJSON is the underlay converted once to JSON; the merge steps work on JSON.
var underlayJSON = mustYAMLToJSON(underlayYAML)

// Underlay returns a fresh copy of the public static underlay as a JSON object.
func Underlay() map[string]any {
	doc, err := decodeObject(underlayJSON)
	if err != nil {
		panic(fmt.Sprintf("embedded underlay is invalid: %v", err))
	}
	return doc
}

func mustYAMLToJSON(y []byte) []byte {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		panic(fmt.Sprintf("embedded underlay is not YAML: %v", err))
	}
	return j
}
