package ui

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// DiffLine is one path of two JSON documents whose value differs.
type DiffLine struct {
	Path string `json:"path"`
	// Op is "added" (only in B), "removed" (only in A) or "changed".
	Op string `json:"op"`
	A  string `json:"a,omitempty"`
	B  string `json:"b,omitempty"`
}

// diffJSON compares two JSON documents leaf by leaf (paths like traffic.stop.requests or
// workers[0].tp), in path order. Arrays are compared by index.
func diffJSON(a, b []byte) ([]DiffLine, error) {
	fa, err := flatten(a)
	if err != nil {
		return nil, err
	}
	fb, err := flatten(b)
	if err != nil {
		return nil, err
	}
	paths := slices.Sorted(maps.Keys(fa))
	for p := range fb {
		if _, ok := fa[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	out := []DiffLine{}
	for _, p := range paths {
		va, inA := fa[p]
		vb, inB := fb[p]
		switch {
		case !inA:
			out = append(out, DiffLine{Path: p, Op: "added", B: vb})
		case !inB:
			out = append(out, DiffLine{Path: p, Op: "removed", A: va})
		case va != vb:
			out = append(out, DiffLine{Path: p, Op: "changed", A: va, B: vb})
		}
	}
	return out, nil
}

func flatten(doc []byte) (map[string]string, error) {
	out := map[string]string{}
	if len(doc) == 0 {
		return out, nil
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	flattenInto(out, "", v)
	return out, nil
}

func flattenInto(out map[string]string, path string, v any) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			out[path] = "{}"
		}
		for k, c := range t {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flattenInto(out, p, c)
		}
	case []any:
		if len(t) == 0 {
			out[path] = "[]"
		}
		for i, c := range t {
			flattenInto(out, path+"["+strconv.Itoa(i)+"]", c)
		}
	default:
		data, _ := json.Marshal(t)
		out[cmpPath(path)] = string(data)
	}
}

func cmpPath(p string) string { return strings.TrimPrefix(p, ".") }
