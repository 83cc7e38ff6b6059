package aisimulate

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
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
		if err := rewriteDiscriminators(doc); err != nil {
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

// rewriteDiscriminators gives every discriminated union of the loaded schema Pydantic's semantics
// before it is compiled. Pydantic writes a union declared with Field(discriminator="type") as
// oneOf plus an OpenAPI "discriminator" {propertyName, mapping}, a keyword JSON Schema ignores:
// a validator would try every branch and report the errors of all of them ("input_tokens: unknown
// field" from the session branch of a synthetic source). Pydantic instead reads the tag first and
// validates only the branch it selects; a missing tag is an error of its own ("Unable to extract
// tag using discriminator 'type'"), even where a branch has a default for it, and an unknown tag
// is one too. The rewrite says exactly that:
//
//	{type: object, required: [tag], properties: {tag: {enum: [tags]}},
//	 allOf: [{if: {required: [tag], properties: {tag: {const: t}}}, then: {$ref: mapping[t]}}, ...]}
func rewriteDiscriminators(node any) error {
	switch n := node.(type) {
	case []any:
		for _, x := range n {
			if err := rewriteDiscriminators(x); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, x := range n {
			if err := rewriteDiscriminators(x); err != nil {
				return err
			}
		}
		d, ok := n["discriminator"].(map[string]any)
		if !ok {
			return nil
		}
		prop, _ := d["propertyName"].(string)
		mapping, _ := d["mapping"].(map[string]any)
		if _, hasOneOf := n["oneOf"]; prop == "" || len(mapping) == 0 || !hasOneOf {
			return fmt.Errorf("a discriminator needs propertyName, mapping and oneOf: %v", n)
		}
		for _, k := range []string{"type", "required", "properties", "allOf", "if"} {
			if _, clash := n[k]; clash {
				return fmt.Errorf("a discriminated union with its own %q cannot be rewritten: %v", k, n)
			}
		}
		tags := make([]string, 0, len(mapping))
		for tag := range mapping {
			tags = append(tags, tag)
		}
		slices.Sort(tags)
		enum := make([]any, len(tags))
		branches := make([]any, len(tags))
		for i, tag := range tags {
			enum[i] = tag
			branches[i] = map[string]any{
				"if": map[string]any{
					"required":   []any{prop},
					"properties": map[string]any{prop: map[string]any{"const": tag}},
				},
				"then": map[string]any{"$ref": mapping[tag]},
			}
		}
		delete(n, "discriminator")
		delete(n, "oneOf")
		n["type"] = "object"
		n["required"] = []any{prop}
		n["properties"] = map[string]any{prop: map[string]any{"enum": enum}}
		n["allOf"] = branches
	}
	return nil
}

// CheckInput validates a recommend input document (decoded with json.Number numbers) against the
// bundled JSON Schema and the rules JSON Schema cannot express (rules.go). Problems come back
// sorted by path.
func CheckInput(doc map[string]any) []Problem {
	if _, err := inputSchema(); err != nil {
		return []Problem{{Message: fmt.Sprintf("the bundled input schema does not compile: %v", err)}}
	}
	doc = beforeValidators(doc)
	var problems []Problem
	if err := ValidateSchema(doc); err != nil {
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return []Problem{{Message: err.Error()}}
		}
		problems = append(problems, schemaProblems(verr)...)
	}
	problems = append(problems, crossFieldProblems(doc, problems)...)
	slices.SortStableFunc(problems, func(a, b Problem) int { return strings.Compare(a.PathString(), b.PathString()) })
	return dedupe(problems)
}

// ValidateSchema validates doc against the bundled JSON Schema alone: the generated-schema check
// CheckInput runs before the rules, which admission's own work is measured against
// (docs/develop/performance.md, P1). Its error is a *jsonschema.ValidationError, or says why the
// bundled schema does not compile.
func ValidateSchema(doc map[string]any) error {
	sch, err := inputSchema()
	if err != nil {
		return fmt.Errorf("the bundled input schema does not compile: %w", err)
	}
	return sch.Validate(any(doc))
}

// CheckInputJSON decodes data (a JSON or YAML-converted JSON object) and checks it.
func CheckInputJSON(data []byte) ([]Problem, error) {
	doc, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	return CheckInput(doc), nil
}

// schemaProblems flattens a validation error to the problems a user can act on. Required and
// unknown fields are named at their own path. An alternative (anyOf, from Pydantic's X | Y) is
// reduced to the branches that fit the value: a branch that wants another JSON type than the
// value's (the null branch of an optional field, the object branch {choices} of a domain when
// the value is a number) is not what the user meant; an object branch that misses required keys
// or has keys it does not define fits less than one that fails only inside. When one branch
// remains, its errors are reported as if there were no alternative.
func schemaProblems(verr *jsonschema.ValidationError) []Problem {
	var c problemCollector
	c.walk(verr, false)
	return c.problems()
}

type problemCollector struct {
	named  []Problem
	leaves []leafError
}

type leafError struct {
	path []string
	msg  string
}

func (c *problemCollector) leaf(path []string, msg string) {
	c.leaves = append(c.leaves, leafError{path: path, msg: msg})
}

var printer = message.NewPrinter(message.MatchLanguage("en"))

func (c *problemCollector) walk(e *jsonschema.ValidationError, inAlternative bool) {
	switch k := e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) == 0 { // oneOf matched twice
			c.leaf(e.InstanceLocation, k.LocalizedString(printer))
			return
		}
		kept, best := fittingBranches(e.InstanceLocation, e.Causes)
		switch {
		case len(kept) == 1:
			c.walk(kept[0], inAlternative)
		case best == fitsNoType:
			c.leaf(e.InstanceLocation, typeMismatch(kept))
		default:
			for _, b := range kept {
				c.walk(b, true)
			}
		}
		return
	case *kind.Required:
		if inAlternative {
			c.leaf(e.InstanceLocation, "needs "+strings.Join(k.Missing, " and "))
			return
		}
		for _, prop := range k.Missing {
			c.named = append(c.named, Problem{Path: childPath(e.InstanceLocation, prop), Message: "required field missing"})
		}
		return
	case *kind.AdditionalProperties:
		if inAlternative {
			c.leaf(e.InstanceLocation, "has no field "+strings.Join(k.Properties, " or "))
			return
		}
		for _, prop := range k.Properties {
			c.named = append(c.named, Problem{Path: childPath(e.InstanceLocation, prop),
				Message: "unknown field (AISimulate rejects fields it does not define)"})
		}
		return
	}
	if len(e.Causes) == 0 {
		c.leaf(e.InstanceLocation, describe(e.ErrorKind))
		return
	}
	for _, cause := range e.Causes {
		c.walk(cause, inAlternative)
	}
}

// describe words the validator's bound errors the way a user reads them ("must be > 0, got -1").
func describe(k jsonschema.ErrorKind) string {
	bound := func(op string, got, want *big.Rat) string {
		return fmt.Sprintf("must be %s %s, got %s", op, ratString(want), ratString(got))
	}
	switch k := k.(type) {
	case *kind.Minimum:
		return bound(">=", k.Got, k.Want)
	case *kind.Maximum:
		return bound("<=", k.Got, k.Want)
	case *kind.ExclusiveMinimum:
		return bound(">", k.Got, k.Want)
	case *kind.ExclusiveMaximum:
		return bound("<", k.Got, k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d item(s), got %d", k.Want, k.Got)
	case *kind.MinLength:
		if k.Want == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must be at least %d characters long, got %d", k.Want, k.Got)
	}
	return k.LocalizedString(printer)
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// problems joins the leaves of one path into one problem ("…; or …" for alternatives).
func (c *problemCollector) problems() []Problem {
	byPath := map[string][]string{}
	paths := map[string][]string{}
	var order []string
	for _, l := range c.leaves {
		k := strings.Join(l.path, "\x00")
		if _, seen := byPath[k]; !seen {
			order = append(order, k)
			paths[k] = l.path
		}
		if !slices.Contains(byPath[k], l.msg) {
			byPath[k] = append(byPath[k], l.msg)
		}
	}
	problems := c.named
	for _, k := range order {
		msgs := byPath[k]
		slices.Sort(msgs)
		problems = append(problems, Problem{Path: paths[k], Message: strings.Join(msgs, "; or ")})
	}
	return problems
}

// How well a branch of an alternative fits the value at the alternative's location.
const (
	fitsNoType  = iota // the branch wants another JSON type
	fitsNoShape        // an object branch misses required fields or has fields it does not define
	fitsInside         // the branch fails on the value's content (a bound, an enum, a nested field)
)

// fittingBranches returns the branches of an alternative that fit the value best, and how well.
// The null branch of an optional field never fits a value that failed the alternative.
func fittingBranches(at []string, branches []*jsonschema.ValidationError) ([]*jsonschema.ValidationError, int) {
	best := -1
	var kept []*jsonschema.ValidationError
	for _, b := range branches {
		if isNullBranch(at, b) {
			continue
		}
		fit := branchFit(at, b)
		switch {
		case fit > best:
			best, kept = fit, []*jsonschema.ValidationError{b}
		case fit == best:
			kept = append(kept, b)
		}
	}
	return kept, best
}

func isNullBranch(at []string, b *jsonschema.ValidationError) bool {
	t, ok := b.ErrorKind.(*kind.Type)
	return ok && len(b.Causes) == 0 && slices.Equal(b.InstanceLocation, at) && slices.Equal(t.Want, []string{"null"})
}

func branchFit(at []string, b *jsonschema.ValidationError) int {
	fit := fitsInside
	var visit func(e *jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		if slices.Equal(e.InstanceLocation, at) {
			switch e.ErrorKind.(type) {
			case *kind.Type:
				fit = fitsNoType
				return
			case *kind.Required, *kind.AdditionalProperties:
				fit = min(fit, fitsNoShape)
			case *kind.AnyOf, *kind.OneOf:
				return // a nested alternative is judged when it is walked
			}
		}
		for _, cause := range e.Causes {
			visit(cause)
		}
	}
	visit(b)
	return fit
}

// typeMismatch is the message for a value no branch of an alternative takes the type of.
func typeMismatch(branches []*jsonschema.ValidationError) string {
	var got string
	var want []string
	var visit func(e *jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		if t, ok := e.ErrorKind.(*kind.Type); ok {
			got = t.Got
			for _, w := range t.Want {
				if !slices.Contains(want, w) {
					want = append(want, w)
				}
			}
		}
		for _, cause := range e.Causes {
			visit(cause)
		}
	}
	for _, b := range branches {
		visit(b)
	}
	return fmt.Sprintf("got %s, want %s", got, strings.Join(want, " or "))
}

func childPath(parent []string, name string) []string {
	return append(append([]string(nil), parent...), name)
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
