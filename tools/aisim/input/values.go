package input

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
)

// notSupported is the reason used for fields AISimulate accepts but aisim
// does not model; they are refused rather than silently ignored.
const notSupported = "not supported by aisim"

func errf(path, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// object is a mapping being decoded. Construction checks every key against
// the known and unsupported sets, in document order.
type object struct {
	path string
	v    *document.Value
}

func newObject(path string, v *document.Value, known, unsupported []string) (*object, error) {
	if v == nil || v.Kind != document.KindMap {
		return nil, errf(path, "expected a mapping, got %s", kindOf(v))
	}
	for _, k := range v.Keys {
		switch {
		case slices.Contains(known, k):
		case slices.Contains(unsupported, k):
			return nil, errf(join(path, k), notSupported)
		default:
			return nil, errf(join(path, k), "unknown field")
		}
	}
	return &object{path: path, v: v}, nil
}

// defaultOnly accepts key only at AISimulate's default value def (an int or a string), which is
// what aisim models anyway; any other value is exit 2 naming the field.
func (o *object) defaultOnly(key string, def any) error {
	x := o.get(key)
	if x == nil {
		return nil
	}
	switch d := def.(type) {
	case int:
		if x.Kind == document.KindInt && x.Int == int64(d) {
			return nil
		}
	case string:
		if x.Kind == document.KindString && x.Str == d {
			return nil
		}
	case bool:
		if x.Kind == document.KindBool && x.Bool == d {
			return nil
		}
	}
	return errf(o.p(key), "%s: %s (only the default %v)", describe(x), notSupported, def)
}

func kindOf(v *document.Value) string {
	if v == nil {
		return "nothing"
	}
	return v.Kind.String()
}

// get returns the value of key, treating an explicit null as absent (the
// Pydantic models accept null for optional fields).
func (o *object) get(key string) *document.Value {
	x := o.v.Map[key]
	if x == nil || x.Kind == document.KindNull {
		return nil
	}
	return x
}

func (o *object) has(key string) bool { return o.get(key) != nil }

func (o *object) p(key string) string { return join(o.path, key) }

func (o *object) str(key, def string) (string, error) {
	x := o.get(key)
	if x == nil {
		return def, nil
	}
	if x.Kind != document.KindString {
		return "", errf(o.p(key), "expected a string, got %s", x.Kind)
	}
	if x.Str == "" {
		return "", errf(o.p(key), "must not be empty")
	}
	return x.Str, nil
}

func (o *object) enum(key, def string, allowed ...string) (string, error) {
	s, err := o.str(key, def)
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		return "", errf(o.p(key), "must be one of %v, got %q", allowed, s)
	}
	return s, nil
}

func (o *object) boolean(key string, def bool) (bool, error) {
	x := o.get(key)
	if x == nil {
		return def, nil
	}
	if x.Kind != document.KindBool {
		return false, errf(o.p(key), "expected a boolean, got %s", x.Kind)
	}
	return x.Bool, nil
}

// intValue enforces strict integers: 8 is valid, 8.0, "8" and true are not.
func intValue(path string, x *document.Value, minimum int64) (int, error) {
	if x.Kind != document.KindInt {
		return 0, errf(path, "expected an integer, got %s", describe(x))
	}
	if x.Int < minimum {
		return 0, errf(path, "must be >= %d, got %d", minimum, x.Int)
	}
	if x.Int > math.MaxInt32*1024 {
		return 0, errf(path, "is too large")
	}
	return int(x.Int), nil
}

// numValue accepts ints and finite floats (float fields are lax about ints).
func numValue(path string, x *document.Value) (float64, error) {
	switch x.Kind {
	case document.KindInt:
		return float64(x.Int), nil
	case document.KindFloat:
		if math.IsNaN(x.Num) || math.IsInf(x.Num, 0) {
			return 0, errf(path, "must be a finite number")
		}
		return x.Num, nil
	}
	return 0, errf(path, "expected a number, got %s", describe(x))
}

func describe(x *document.Value) string {
	switch x.Kind {
	case document.KindFloat:
		return "number " + strconv.FormatFloat(x.Num, 'g', -1, 64)
	case document.KindString:
		return "string " + strconv.Quote(x.Str)
	case document.KindBool:
		return "boolean"
	}
	return x.Kind.String()
}

func (o *object) integer(key string, def int, minimum int64) (int, error) {
	x := o.get(key)
	if x == nil {
		return def, nil
	}
	return intValue(o.p(key), x, minimum)
}

// nonNegative decodes a float field that must be >= 0.
func (o *object) nonNegative(key string, def float64) (float64, error) {
	return o.number(key, def, func(f float64) bool { return f >= 0 }, "must be >= 0")
}

// positive decodes a float field that must be > 0.
func (o *object) positive(key string, def float64) (float64, error) {
	return o.number(key, def, func(f float64) bool { return f > 0 }, "must be > 0")
}

// number decodes a float field (def when absent) that must satisfy ok, else names the field with
// msg.
func (o *object) number(key string, def float64, ok func(float64) bool, msg string) (float64, error) {
	x := o.get(key)
	if x == nil {
		return def, nil
	}
	f, err := numValue(o.p(key), x)
	if err != nil {
		return 0, err
	}
	if !ok(f) {
		return 0, errf(o.p(key), "%s", msg)
	}
	return f, nil
}

// isDomain reports whether x is a {choices} or {range} domain object.
func isDomain(x *document.Value) bool {
	if x == nil || x.Kind != document.KindMap || len(x.Keys) != 1 {
		return false
	}
	return x.Keys[0] == "choices" || x.Keys[0] == "range"
}

// domainSpec describes the scalar type and bounds of a sweepable field.
type domainSpec struct {
	isInt      bool
	minExcl    float64 // values must be > minExcl (ints: >= minExcl+1 when 0)
	maxIncl    float64 // 0 = unbounded
	allowRange bool
}

func (s domainSpec) scalar(path string, x *document.Value) (float64, error) {
	if s.isInt {
		i, err := intValue(path, x, int64(s.minExcl)+1)
		return float64(i), err
	}
	f, err := numValue(path, x)
	if err != nil {
		return 0, err
	}
	if f <= s.minExcl {
		return 0, errf(path, "must be > %g", s.minExcl)
	}
	if s.maxIncl > 0 && f > s.maxIncl {
		return 0, errf(path, "must be <= %g", s.maxIncl)
	}
	return f, nil
}

// domain decodes a sweepable numeric field: a scalar, or (recommend only) a
// {choices} / {range} object. Bare lists are never domains.
func (o *object) domain(cmd Command, key string, spec domainSpec) (Domain, bool, error) {
	x := o.get(key)
	if x == nil {
		return Domain{}, false, nil
	}
	d, err := decodeDomain(cmd, o.p(key), x, spec)
	return d, true, err
}

func decodeDomain(cmd Command, path string, x *document.Value, spec domainSpec) (Domain, error) {
	if x.Kind == document.KindSeq {
		return Domain{}, errf(path, "a bare list is not a domain; use {choices: [...]}")
	}
	if x.Kind != document.KindMap {
		v, err := spec.scalar(path, x)
		return Fixed(v, spec.isInt), err
	}
	if cmd == Predict {
		return Domain{}, errf(path, "domains are only allowed in recommend; give a concrete value")
	}
	if !isDomain(x) {
		return Domain{}, errf(path, "expected a value or a {choices: [...]} / {range: {...}} domain")
	}
	if x.Keys[0] == "choices" {
		cp := join(path, "choices")
		c := x.Map["choices"]
		if c.Kind != document.KindSeq || len(c.Seq) == 0 {
			return Domain{}, errf(cp, "must be a non-empty list")
		}
		d := Domain{Int: spec.isInt}
		for i, e := range c.Seq {
			v, err := spec.scalar(index(cp, i), e)
			if err != nil {
				return Domain{}, err
			}
			if slices.Contains(d.Choices, v) {
				return Domain{}, errf(index(cp, i), "duplicate choice %g", v)
			}
			d.Choices = append(d.Choices, v)
		}
		return d, nil
	}
	rp := join(path, "range")
	if !spec.allowRange {
		return Domain{}, errf(rp, "ranges are not allowed here; use {choices: [...]}")
	}
	ro, err := newObject(rp, x.Map["range"], []string{"min", "max", "step", "scale"}, nil)
	if err != nil {
		return Domain{}, err
	}
	r := &Range{}
	for _, k := range []string{"min", "max"} {
		if !ro.has(k) {
			return Domain{}, errf(ro.p(k), "required")
		}
		v, err := spec.scalar(ro.p(k), ro.get(k))
		if err != nil {
			return Domain{}, err
		}
		if k == "min" {
			r.Min = v
		} else {
			r.Max = v
		}
	}
	if r.Min > r.Max {
		return Domain{}, errf(rp, "min (%g) must be <= max (%g)", r.Min, r.Max)
	}
	scale, err := ro.enum("scale", "linear", "linear", "log")
	if err != nil {
		return Domain{}, err
	}
	r.Log = scale == "log"
	if ro.has("step") {
		if r.Log {
			return Domain{}, errf(ro.p("step"), "not allowed with scale: log")
		}
		if spec.isInt {
			s, err := intValue(ro.p("step"), ro.get("step"), 1)
			if err != nil {
				return Domain{}, err
			}
			r.Step = float64(s)
		} else {
			s, err := numValue(ro.p("step"), ro.get("step"))
			if err != nil {
				return Domain{}, err
			}
			if s <= 0 {
				return Domain{}, errf(ro.p("step"), "must be > 0")
			}
			r.Step = s
		}
	} else if spec.isInt && !r.Log {
		return Domain{}, errf(rp, "an integer linear range requires step")
	}
	if r.Log && r.Min <= 0 {
		return Domain{}, errf(ro.p("min"), "must be > 0 with scale: log")
	}
	return Domain{Range: r, Int: spec.isInt}, nil
}

// stringDomain decodes a categorical string field: a value or {choices}.
func (o *object) stringDomain(cmd Command, key string, def []string, allowed []string) ([]string, error) {
	x := o.get(key)
	if x == nil {
		return def, nil
	}
	path := o.p(key)
	check := func(p string, e *document.Value) (string, error) {
		if e.Kind != document.KindString {
			return "", errf(p, "expected a string, got %s", describe(e))
		}
		if !slices.Contains(allowed, e.Str) {
			return "", errf(p, "must be one of %v, got %q", allowed, e.Str)
		}
		return e.Str, nil
	}
	switch x.Kind {
	case document.KindSeq:
		return nil, errf(path, "a bare list is not a domain; use {choices: [...]}")
	case document.KindMap:
		if cmd == Predict {
			return nil, errf(path, "domains are only allowed in recommend; give a concrete value")
		}
		if !isDomain(x) || x.Keys[0] != "choices" {
			return nil, errf(path, "expected a value or a {choices: [...]} domain")
		}
		cp := join(path, "choices")
		c := x.Map["choices"]
		if c.Kind != document.KindSeq || len(c.Seq) == 0 {
			return nil, errf(cp, "must be a non-empty list")
		}
		var out []string
		for i, e := range c.Seq {
			s, err := check(index(cp, i), e)
			if err != nil {
				return nil, err
			}
			if slices.Contains(out, s) {
				return nil, errf(index(cp, i), "duplicate choice %q", s)
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := check(path, x)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

// ints converts an integer domain to its sorted, de-duplicated points.
func ints(d Domain) []int {
	var out []int
	for _, p := range d.Points() {
		out = append(out, int(p))
	}
	return out
}
