package aisimulate

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// SchemaVersion identifies the bundled JSON Schema of the AISimulate recommend input.
const SchemaVersion = "v1"

//go:embed schema/recommend-input.v1.schema.json
var schemaJSON []byte

const schemaURL = "https://dgdr-operator.nvidia.com/schemas/aisimulate/recommend-input/v1"

// Problem is one reason AISimulate would reject an input document.
type Problem struct {
	// Path is the location in the input document, e.g. ["traffic", "stop"]; empty for the root.
	Path []string
	// Message says what is wrong, in words a user can act on.
	Message string
}

// PathString renders the path in dotted form ("traffic.stop", "<root>").
func (p Problem) PathString() string {
	if len(p.Path) == 0 {
		return "<root>"
	}
	return strings.Join(p.Path, ".")
}

func (p Problem) String() string { return p.PathString() + ": " + p.Message }

// key identifies a problem for ratcheting: same place, same message.
func (p Problem) key() string { return p.PathString() + "\x00" + p.Message }

var (
	compileOnce    sync.Once
	compiledSchema *jsonschema.Schema
	compileErr     error
)

func inputSchema() (*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
		if err != nil {
			compileErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.RegisterVocabulary(strictIntegerVocabulary())
		c.AssertVocabs()
		if err := c.AddResource(schemaURL, doc); err != nil {
			compileErr = err
			return
		}
		compiledSchema, compileErr = c.Compile(schemaURL)
	})
	return compiledSchema, compileErr
}

// CheckInput validates a recommend input document (decoded with json.Number numbers) against the
// bundled JSON Schema and the cross-field rules JSON Schema cannot express. Problems come back
// sorted by path.
func CheckInput(doc map[string]any) []Problem {
	sch, err := inputSchema()
	if err != nil {
		return []Problem{{Message: fmt.Sprintf("the bundled input schema does not compile: %v", err)}}
	}
	var problems []Problem
	if err := sch.Validate(any(doc)); err != nil {
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return []Problem{{Message: err.Error()}}
		}
		problems = append(problems, schemaProblems(verr)...)
	}
	problems = append(problems, crossFieldProblems(doc)...)
	slices.SortStableFunc(problems, func(a, b Problem) int { return strings.Compare(a.PathString(), b.PathString()) })
	return dedupe(problems)
}

// CheckInputJSON decodes data (a JSON or YAML-converted JSON object) and checks it.
func CheckInputJSON(data []byte) ([]Problem, error) {
	doc, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	return CheckInput(doc), nil
}

// schemaProblems flattens a validation error to its leaf causes. Alternatives of anyOf/oneOf
// produce many leaves; keep those of the deepest instance location, which name the real problem.
func schemaProblems(verr *jsonschema.ValidationError) []Problem {
	var leaves []*jsonschema.ValidationError
	var named []Problem
	var walk func(e *jsonschema.ValidationError, inAlternative bool)
	walk = func(e *jsonschema.ValidationError, inAlternative bool) {
		switch k := e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			inAlternative = true
		case *kind.Required:
			if !inAlternative {
				// A missing field is named at its own path, like an unknown one. Inside an
				// alternative it is only one reading of the value among others.
				for _, prop := range k.Missing {
					named = append(named, Problem{Path: append(append([]string(nil), e.InstanceLocation...), prop),
						Message: "required field missing"})
				}
				return
			}
		case *kind.FalseSchema:
			// The schema forbids a field of a union section for the variant in use.
			named = append(named, Problem{Path: e.InstanceLocation,
				Message: "field not allowed here: it belongs to another type of this section (a union: change type means replacing the whole object)"})
			return
		case *kind.AdditionalProperties:
			for _, prop := range k.Properties {
				named = append(named, Problem{Path: append(append([]string(nil), e.InstanceLocation...), prop),
					Message: "unknown field (AISimulate rejects fields it does not define)"})
			}
			return
		}
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c, inAlternative)
		}
	}
	walk(verr, false)
	printer := message.NewPrinter(message.MatchLanguage("en"))
	byPath := map[string][]*jsonschema.ValidationError{}
	var order []string
	for _, l := range leaves {
		k := strings.Join(l.InstanceLocation, ".")
		if _, seen := byPath[k]; !seen {
			order = append(order, k)
		}
		byPath[k] = append(byPath[k], l)
	}
	problems := named
	for _, k := range order {
		msgs := map[string]bool{}
		var parts []string
		for _, l := range byPath[k] {
			m := l.ErrorKind.LocalizedString(printer)
			if !msgs[m] {
				msgs[m] = true
				parts = append(parts, m)
			}
		}
		slices.Sort(parts)
		problems = append(problems, Problem{Path: byPath[k][0].InstanceLocation, Message: strings.Join(parts, "; or ")})
	}
	return problems
}

func dedupe(in []Problem) []Problem {
	seen := map[string]bool{}
	out := in[:0]
	for _, p := range in {
		if !seen[p.key()] {
			seen[p.key()] = true
			out = append(out, p)
		}
	}
	return out
}

// strictIntegerVocabulary adds the keyword x-strict-integer: JSON Schema counts 8.0 as an
// integer, AISimulate does not.
func strictIntegerVocabulary() *jsonschema.Vocabulary {
	const url = "https://dgdr-operator.nvidia.com/schemas/vocab/strict-integer"
	meta, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"properties":{"x-strict-integer":{"type":"boolean"}}}`))
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, meta); err != nil {
		panic(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		panic(err)
	}
	return &jsonschema.Vocabulary{
		URL:    url,
		Schema: sch,
		Compile: func(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
			if v, ok := obj["x-strict-integer"].(bool); ok && v {
				return strictInteger{}, nil
			}
			return nil, nil
		},
	}
}

type strictInteger struct{}

func (strictInteger) Validate(ctx *jsonschema.ValidatorContext, v any) {
	n, ok := v.(json.Number)
	if ok && strings.ContainsAny(string(n), ".eE") {
		ctx.AddError(notStrictInteger{got: string(n)})
	}
}

type notStrictInteger struct{ got string }

func (notStrictInteger) KeywordPath() []string { return []string{"x-strict-integer"} }
func (e notStrictInteger) LocalizedString(*message.Printer) string {
	return fmt.Sprintf("must be written as an integer, got %s (AISimulate's integer fields are strict)", e.got)
}
