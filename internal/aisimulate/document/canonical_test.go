package document

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// viaEncodingJSON is the reference: encoding/json with sorted keys and HTML escaping off.
func viaEncodingJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// TestCanonicalIsEncodingJSON: the canonical writer writes exactly what encoding/json writes,
// and hands what it does not handle (other Go types, invalid numbers) to encoding/json.
func TestCanonicalIsEncodingJSON(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "", "plain", `quote " backslash \ slash /`, "<html> & 'x'", "tab\tnl\nret\rbs\bff\f",
		"\x00\x01\x1f\x7f", "é ü 日本 🙂", "\u2028\u2029", "bad \xff utf8 \xe2\x80", "\xed\xa0\x80",
		json.Number("0"), json.Number("-12"), json.Number("1.0"), json.Number("1e-7"), json.Number("2.5E+10"), json.Number(""),
		json.Number("01"), json.Number("1."), json.Number("NaN"), json.Number("--1"), json.Number("1e"), json.Number("+1"),
		map[string]any(nil), []any(nil), map[string]any{}, []any{},
		map[string]any{"b": json.Number("1"), "a": []any{"x", nil, map[string]any{"z": true, "y": false}}, "": "empty key", "é": "k", "A": 1},
		[]any{json.Number("3"), []any{[]any{}}, map[string]any{"k\n": "v\u2028"}},
		map[string]any{"float": 1.5, "int": 7, "strings": []string{"a"}},
		map[string]any{"bad": json.Number("1.2.3")},
	} {
		want, wantErr := viaEncodingJSON(v)
		got, gotErr := Canonical(v)
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%#v: error %v, encoding/json's %v", v, gotErr, wantErr)
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%#v (-encoding/json +Canonical):\n%s", v, diff)
		}
	}
}

// FuzzCanonicalString: any string is quoted as encoding/json quotes it, as a value and as a key.
func FuzzCanonicalString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\u2028", "\xff", "<&>", "\x7f\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := map[string]any{s: []any{s, json.Number("1")}}
		want, _ := viaEncodingJSON(v)
		got, err := Canonical(v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s (%v), encoding/json %s", s, got, err, want)
		}
	})
}
