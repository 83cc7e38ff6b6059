package aisimulate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
)

// DecodeObject decodes a JSON object keeping numbers as written (json.Number).
func DecodeObject(data []byte) (map[string]any, error) { return decodeObject(data) }

// decodeObject decodes a JSON object keeping numbers as written (json.Number), so that an
// integer never turns into a float on the way through.
func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a JSON object, got %s", jsonKind(v))
	}
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// canonicalJSON encodes a document with sorted keys and no insignificant whitespace.
func canonicalJSON(doc map[string]any) ([]byte, error) { return document.Canonical(doc) }

// Hash returns "sha256:<hex>" of data.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// intNumber renders an integer as a JSON number.
func intNumber[T ~int32 | ~int64 | ~int](v T) json.Number {
	return json.Number(strconv.FormatInt(int64(v), 10))
}

// floatNumber renders a float without an exponent: YAML 1.1 readers (PyYAML, which AISimulate
// uses) read "1e-07" as a string. Whole values render as integers ("20"), which AISimulate's
// float fields accept.
func floatNumber(v float64) json.Number {
	return json.Number(strconv.FormatFloat(v, 'f', -1, 64))
}

// ToYAML renders a canonical JSON document as YAML (keys sorted) for people and for the
// search Job's input file. The YAML writer prints a float in Go's shortest form, which for a
// small or large one is an exponent without a decimal point ("1e-09"); PyYAML, AISimulate's
// reader, reads that as a string. Such numbers are written with a decimal point and a signed
// exponent ("1.0e-09"), which both YAML 1.1 and 1.2 read as a float.
func ToYAML(canonical []byte) ([]byte, error) {
	doc, err := decodeObject(canonical)
	if err != nil {
		return nil, err
	}
	// The literals go in after the YAML writer, in place of unique plain strings.
	var floats []string
	const mark = "dgdr-yaml-float-"
	if !bytes.Contains(canonical, []byte(mark)) {
		replaceExponentFloats(doc, func(lit string) any {
			floats = append(floats, lit)
			return mark + strconv.Itoa(len(floats)-1) + "-"
		})
	}
	if len(floats) == 0 {
		return yaml.JSONToYAML(canonical)
	}
	marked, err := canonicalJSON(doc)
	if err != nil {
		return nil, err
	}
	out, err := yaml.JSONToYAML(marked)
	if err != nil {
		return nil, err
	}
	for i, lit := range floats {
		out = bytes.Replace(out, []byte(mark+strconv.Itoa(i)+"-"), []byte(lit), 1)
	}
	return out, nil
}

// replaceExponentFloats replaces, in a decoded document, every number the YAML writer would
// print with an exponent by mark(its YAML 1.1 float literal).
func replaceExponentFloats(v any, mark func(string) any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = replaceExponentFloats(e, mark)
		}
	case []any:
		for i, e := range x {
			x[i] = replaceExponentFloats(e, mark)
		}
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return x // written as an integer
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return x
		}
		g := strconv.FormatFloat(f, 'g', -1, 64)
		mant, exp, ok := strings.Cut(g, "e")
		if !ok {
			return x
		}
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		return mark(mant + "e" + exp)
	}
	return v
}
