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
// search Job's input file.
func ToYAML(canonical []byte) ([]byte, error) {
	return yaml.JSONToYAML(canonical)
}
