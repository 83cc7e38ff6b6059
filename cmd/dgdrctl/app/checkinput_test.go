package app_test

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckInput(t *testing.T) {
	valid, _ := filepath.Glob("../../../internal/aisimulate/testdata/inputs/valid/*.yaml")
	if len(valid) == 0 {
		t.Fatal("no valid inputs")
	}
	for _, f := range valid {
		out, errOut, code := run(t, "check-input", f)
		if code != 0 || !strings.Contains(out, "valid") {
			t.Errorf("%s: exit %d, stderr %q", f, code, errOut)
		}
	}
	_, errOut, code := run(t, "check-input", "../../../internal/aisimulate/testdata/inputs/invalid/two-stop-counts.yaml")
	if code != 1 || !strings.HasPrefix(errOut, "traffic.stop: ") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, "check-input", "../../../internal/aisimulate/testdata/inputs/invalid/float-integer.yaml")
	if code != 1 || !strings.Contains(errOut, "traffic.source.input_tokens: must be written as an integer") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
