package aisimulate_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// TestDomainFieldsMatchTheSchema: the fields rules.go checks as domains (Choices, IntegerRange,
// NumericRange: their validators are not in the schema) are exactly those of the generated
// schema, with the same choice and range types. A field that gains a domain in a new AISimulate
// fails here instead of going unchecked.
func TestDomainFieldsMatchTheSchema(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(aisimulate.SchemaJSONForTest, &schema); err != nil {
		t.Fatal(err)
	}
	defs := schema["$defs"].(map[string]any)
	resolve := func(s map[string]any) (map[string]any, string) {
		if ref, ok := s["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/$defs/")
			return defs[name].(map[string]any), name
		}
		return s, ""
	}
	elemOf := func(choices string) string {
		switch {
		case strings.HasPrefix(choices, "Choices_int_gt0_or_enum"):
			return "int|string"
		case strings.HasPrefix(choices, "Choices_int"):
			return "int"
		case strings.HasPrefix(choices, "Choices_number"):
			return "float"
		case strings.HasPrefix(choices, "Choices_enum"):
			return "string"
		}
		t.Fatalf("a Choices definition the test does not know: %s", choices)
		return ""
	}
	var got []string
	var walk func(path []string, s map[string]any)
	walk = func(path []string, s map[string]any) {
		s, _ = resolve(s)
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			p := p.(map[string]any)
			branches := []any{p}
			if anyOf, ok := p["anyOf"].([]any); ok {
				branches = anyOf
			}
			elem, rng := "", ""
			for _, b := range branches {
				body, def := resolve(b.(map[string]any))
				switch {
				case strings.HasPrefix(def, "Choices_"):
					elem = elemOf(def)
				case def == "IntegerRange":
					rng = "integer"
				case def == "NumericRange":
					rng = "numeric"
				case body["type"] == "object" || body["properties"] != nil:
					walk(append(slices.Clone(path), name), body)
				}
			}
			if elem != "" || rng != "" {
				got = append(got, strings.Join(append(slices.Clone(path), name), ".")+" "+elem+" "+rng)
			}
		}
	}
	walk(nil, schema)
	if len(got) < 30 {
		t.Fatalf("found only %d domain fields in the schema: %v", len(got), got)
	}
	want := aisimulate.DomainFieldsForTest()
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("domain fields of rules.go (-) and of the schema (+):\n%s", diff)
	}
}
