package aisimulate

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Reading the generic document: the helpers every rule file shares.

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// presetDisabled reports whether parallelism.preset is false or {} (an omitted preset is default).
func presetDisabled(parallelism map[string]any) bool {
	switch p := parallelism["preset"].(type) {
	case bool:
		return !p
	case map[string]any:
		return len(p) == 0
	}
	return false
}

// choicesOf returns the choices of a {choices: [...]} domain.
func choicesOf(v any) ([]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	list, ok := m["choices"].([]any)
	return list, ok
}

func isChoicesValue(v any) bool {
	_, ok := choicesOf(v)
	return ok
}

// rangeOf returns the bounds of a {range: {...}} domain.
func rangeOf(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	r, ok := m["range"].(map[string]any)
	return r, ok
}

// at returns the value at path (present and not null).
func at(doc map[string]any, path ...string) (any, bool) {
	v := atValue(doc, path...)
	return v, v != nil
}

func atValue(doc map[string]any, path ...string) any {
	var cur any = doc
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func render(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// set reports whether a key is present with a non-null value.
func set(m map[string]any, key string) bool {
	x, ok := m[key]
	return ok && x != nil
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// modesOf returns engine.mode as a list of modes: the default domain when absent, nil when it is
// not a mode or a domain of modes.
func modesOf(v any) []string {
	switch m := v.(type) {
	case nil:
		return DefaultModes
	case string:
		return []string{m}
	case map[string]any:
		return stringsOf(m["choices"])
	}
	return nil
}

// backendsOf returns engine.backend as a list of backends (the default domain when absent).
func backendsOf(v any) []string {
	switch b := v.(type) {
	case nil:
		return DefaultBackends
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
	if !ok || strings.ContainsAny(string(n), ".eE") {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func numberOf(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// ratOf returns a number exactly.
func ratOf(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(string(n))
	return r, ok
}
