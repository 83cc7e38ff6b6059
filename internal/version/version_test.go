package version

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}}}
	cases := []struct {
		name    string
		stamped Stamped
		bi      *debug.BuildInfo
		want    Info
	}{
		{
			name:    "the linker's values win over the build information",
			stamped: Stamped{Version: "v0.2.0", Commit: "def456", BuildDate: "2026-12-02T09:00:00Z"},
			bi:      vcs,
			want:    Info{Version: "v0.2.0", Commit: "def456", BuildDate: "2026-12-02T09:00:00Z", GoVersion: "go1.26.8", Platform: "linux/arm64"},
		},
		{
			name: "a work tree build with VCS stamping",
			bi:   vcs,
			want: Info{Version: "devel", Commit: "abc123", BuildDate: "2026-12-01T10:00:00Z", GoVersion: "go1.26.8", Platform: "linux/arm64"},
		},
		{
			name: "go install of a tagged module",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.1"}},
			want: Info{Version: "v0.3.1", Commit: Unknown, BuildDate: Unknown, GoVersion: "go1.26.8", Platform: "linux/arm64"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, resolve(c.stamped, c.bi, "linux/arm64")); diff != "" {
				t.Errorf("resolve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := Info{Version: "v0.2.0", Commit: "def456", BuildDate: "2026-12-02T09:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"}.String()
	const want = "v0.2.0 (commit def456, built 2026-12-02T09:00:00Z, go1.26.8 linux/amd64)"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
