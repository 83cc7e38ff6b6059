package naming

import (
	"strings"
	"testing"
)

func TestIsResearchRunName(t *testing.T) {
	long := strings.Repeat("a", 60)
	cases := []struct {
		name, run, request string
		generation         int64
		want               bool
	}{
		{name: "short", run: ResearchRunName("llama", 3, 1764763200), request: "llama", generation: 3, want: true},
		{name: "shortened with a hash", run: ResearchRunName(long, 3, 1764763200), request: long, generation: 3, want: true},
		{name: "the generation's own Run", run: RunName("llama", 3), request: "llama", generation: 3},
		{name: "shortened own Run", run: RunName(long, 3), request: long, generation: 3},
		{name: "another generation", run: ResearchRunName("llama", 2, 1764763200), request: "llama", generation: 3},
		{name: "another request", run: ResearchRunName("llama-b", 3, 1764763200), request: "llama", generation: 3},
		{name: "not a number", run: "llama-run-3-rx", request: "llama", generation: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsResearchRunName(c.run, c.request, c.generation); got != c.want {
				t.Errorf("IsResearchRunName(%q, %q, %d) = %v, want %v", c.run, c.request, c.generation, got, c.want)
			}
		})
	}
	// The case the prefix test missed: a shortened re-search name does not start with the
	// shortened Run name.
	if r, own := ResearchRunName(long, 3, 1764763200), RunName(long, 3); strings.HasPrefix(r, own+"-r") {
		t.Fatalf("the long-name case no longer shortens differently: %q, %q", r, own)
	}
}

// TestJobNames: a Run's two Jobs have distinct names that fit a label value, also for a Run name
// at the limit (two long Runs differing only at the end keep distinct Jobs).
func TestJobNames(t *testing.T) {
	long := ResearchRunName(strings.Repeat("a", 60), 3, 1764763200)
	other := long[:len(long)-1] + "1"
	for _, run := range []string{"llama-run-3-r1764763200", long} {
		search, baseline := JobName(run), BaselineJobName(run)
		if search == baseline || len(search) > MaxChildNameLength || len(baseline) > MaxChildNameLength || !strings.HasSuffix(baseline, "-baseline") {
			t.Errorf("Run %q: search Job %q, baseline Job %q", run, search, baseline)
		}
	}
	if BaselineJobName(long) == BaselineJobName(other) {
		t.Errorf("two Runs share the baseline Job %q", BaselineJobName(long))
	}
}
