package aisimulate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// Limits on spec.aisimulate.inputOverrides. They keep admission cheap and stored objects small;
// the whole AISimulate input document is far smaller than either bound.
const (
	MaxOverridesBytes = 64 * 1024
	MaxOverridesDepth = 16
)

// ValidateOverridesShape checks that inputOverrides is a JSON object within the size and depth
// limits. Its content is checked later, on the effective input (CheckInput). The scan is a single
// pass over the bytes without allocating: admission runs it for every request.
func ValidateOverridesShape(raw []byte, path *field.Path) field.ErrorList {
	if len(raw) > MaxOverridesBytes {
		return field.ErrorList{field.TooLong(path, "<object>", MaxOverridesBytes)}
	}
	depth, maxDepth := 0, 0
	inString, escaped, started := false, false, false
	for _, c := range raw {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if !started {
			if c != '{' {
				return field.ErrorList{field.Invalid(path, describeFirst(c), "must be a JSON object (an RFC 7386 merge patch in AISimulate field names)")}
			}
			started = true
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				maxDepth = depth
			}
		case '}', ']':
			depth--
		}
	}
	if !started {
		return field.ErrorList{field.Invalid(path, "", "must be a JSON object")}
	}
	if maxDepth > MaxOverridesDepth {
		return field.ErrorList{field.Invalid(path, "<object>", fmt.Sprintf("nesting depth must be at most %d", MaxOverridesDepth))}
	}
	// A key given twice has no defined meaning in a merge patch (RFC 8259 leaves duplicate names
	// to the parser); refuse it rather than guess which one wins.
	var v any
	strictErrs, err := kjson.UnmarshalStrict(raw, &v)
	if err != nil {
		return field.ErrorList{field.Invalid(path, "<invalid JSON>", fmt.Sprintf("must be a JSON object: %v", err))}
	}
	for _, e := range strictErrs {
		return field.ErrorList{field.Invalid(path, "<object>", e.Error())}
	}
	return nil
}

func describeFirst(c byte) string {
	switch c {
	case '[':
		return "<array>"
	case '"':
		return "<string>"
	case 'n':
		return "null"
	case 't', 'f':
		return "<boolean>"
	default:
		return "<number>"
	}
}
