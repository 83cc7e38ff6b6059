package v1beta1

import (
	"bytes"
	"errors"
)

// Feature is the value of one spec.features entry (planner, kvRouter, mocker) as the Dynamo
// platform stored it: a JSON boolean in the shape of its CRD at ai-dynamo/dynamo fbfa59ff
// (kvRouter: true), a JSON object in later releases (kvRouter: {enabled: true}; planner: the
// Planner configuration). It decodes any JSON value and encodes exactly the value it decoded: a
// boolean stays a boolean and an object keeps every key, through every conversion. At most one
// of Bool and Raw is set.
type Feature struct {
	// Bool is the value when it is a JSON boolean (the fbfa59ff shape). It is not a JSON field:
	// the feature itself encodes as true or false.
	Bool *bool `json:"-"`

	// Raw is the value when it is not a JSON boolean, as JSON: an object in later releases'
	// shape, or whatever else the untyped schema let through (kept, never an error, so that no
	// stored request becomes undecodable). It is not a JSON field: the feature itself encodes
	// as this value.
	Raw []byte `json:"-"`
}

// BoolFeature is a feature in the fbfa59ff shape: true or false.
func BoolFeature(v bool) *Feature { return &Feature{Bool: &v} }

// RawFeature is a feature holding a JSON value verbatim (an object in later releases' shape).
func RawFeature(raw string) *Feature { return &Feature{Raw: []byte(raw)} }

var errBothSet = errors.New("feature: both Bool and Raw are set")

// MarshalJSON encodes the value the feature holds: true or false for Bool, Raw verbatim, or null
// when neither is set.
func (f Feature) MarshalJSON() ([]byte, error) {
	switch {
	case f.Bool != nil && f.Raw != nil:
		return nil, errBothSet
	case f.Bool != nil && *f.Bool:
		return []byte("true"), nil
	case f.Bool != nil:
		return []byte("false"), nil
	case len(f.Raw) > 0:
		return f.Raw, nil
	default:
		return []byte("null"), nil
	}
}

// UnmarshalJSON keeps any JSON value: a boolean as Bool, anything else verbatim as Raw (null
// leaves the feature empty).
func (f *Feature) UnmarshalJSON(data []byte) error {
	*f = Feature{}
	switch v := bytes.TrimSpace(data); string(v) {
	case "true", "false":
		b := string(v) == "true"
		f.Bool = &b
	case "null":
	default:
		f.Raw = bytes.Clone(v)
	}
	return nil
}
