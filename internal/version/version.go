// Package version is the build identity of the dgdr-operator binaries: the release version, the
// commit and the build date, stamped at link time by the Makefile (-ldflags -X) and, when a
// binary was built without them (go build, go install), read from the Go build information.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Stamped by the Makefile's LDFLAGS:
//
//	-X github.com/dgdr-operator/dgdr-operator/internal/version.version=v0.1.0
//	-X github.com/dgdr-operator/dgdr-operator/internal/version.commit=<git commit>
//	-X github.com/dgdr-operator/dgdr-operator/internal/version.buildDate=<commit time, RFC 3339>
//
// The build date is the commit's time, not the wall clock, so that the same commit builds the
// same bytes (reproducible images).
var (
	version   string
	commit    string
	buildDate string
)

// Unknown is what a field says when neither the linker nor the build information set it.
const Unknown = "unknown"

// Info is the build identity of the running binary.
type Info struct {
	// Version is the release version (v0.1.0), or the module version a go install recorded,
	// or "devel" for a build from a work tree without the Makefile.
	Version string `json:"version"`
	// Commit is the git commit the binary was built from.
	Commit string `json:"commit"`
	// BuildDate is the commit's time in RFC 3339 (the reproducible build date).
	BuildDate string `json:"buildDate"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns the running binary's build identity.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Stamped{Version: version, Commit: commit, BuildDate: buildDate}, bi, runtime.GOOS+"/"+runtime.GOARCH)
}

// Stamped are the values the linker set (empty when it set none).
type Stamped struct{ Version, Commit, BuildDate string }

// resolve prefers the linker's values, then the build information's (a go install of a tagged
// module records its version; a build with VCS stamping records the revision and its time).
func resolve(s Stamped, bi *debug.BuildInfo, platform string) Info {
	info := Info{Version: s.Version, Commit: s.Commit, BuildDate: s.BuildDate, GoVersion: runtime.Version(), Platform: platform}
	if bi != nil {
		info.GoVersion = bi.GoVersion
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, kv := range bi.Settings {
			switch {
			case kv.Key == "vcs.revision" && info.Commit == "":
				info.Commit = kv.Value
			case kv.Key == "vcs.time" && info.BuildDate == "":
				info.BuildDate = kv.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = Unknown
	}
	if info.BuildDate == "" {
		info.BuildDate = Unknown
	}
	return info
}

// String is the one-line form that --version prints and the operator logs.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s %s)", i.Version, i.Commit, i.BuildDate, i.GoVersion, i.Platform)
}

// KeysAndValues are the fields as logr key/value pairs.
func (i Info) KeysAndValues() []any {
	return []any{"version", i.Version, "commit", i.Commit, "buildDate", i.BuildDate, "goVersion", i.GoVersion, "platform", i.Platform}
}
