package aisimulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits on spec.aisimulate.inputOverrides. They keep admission cheap and stored objects small;
// the whole AISimulate input document is far smaller than either bound.
const (
	MaxOverridesBytes = 64 * 1024
	MaxOverridesDepth = 16
)

// ValidateOverridesShape checks that inputOverrides is a JSON object within the size and depth
// limits. Its content stays opaque here (issue: effective-input schema validation).
func ValidateOverridesShape(raw []byte, path *field.Path) field.ErrorList {
	if len(raw) > MaxOverridesBytes {
		return field.ErrorList{field.TooLong(path, "<object>", MaxOverridesBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	depth, maxDepth := 0, 0
	first := true
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return field.ErrorList{field.Invalid(path, "<invalid JSON>", fmt.Sprintf("must be a JSON object: %v", err))}
		}
		if first {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return field.ErrorList{field.Invalid(path, describeToken(tok), "must be a JSON object (an RFC 7386 merge patch in AISimulate field names)")}
			}
			first = false
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
				if depth > maxDepth {
					maxDepth = depth
				}
			case '}', ']':
				depth--
			}
		}
		if maxDepth > MaxOverridesDepth {
			return field.ErrorList{field.Invalid(path, "<object>", fmt.Sprintf("nesting depth must be at most %d", MaxOverridesDepth))}
		}
	}
	if first {
		return field.ErrorList{field.Invalid(path, "", "must be a JSON object")}
	}
	return nil
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "<array>"
		}
		return string(v)
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%v", v)
	}
}
