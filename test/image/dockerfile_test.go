// Package image_test checks the operator image: the OCI layout `make images` builds
// (layout_test.go), and the Dockerfile for container engines, without one (none runs on the
// build machines): it parses the Dockerfile with BuildKit's own parser, checks the final stage
// (distroless static base, non-root user, the operator as entrypoint), and runs the build stage's
// `go build` commands on the host to prove they produce the static binaries the final stage
// copies.
package image_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"

	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

func parseDockerfile(t *testing.T) []instructions.Stage {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.Root(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("parsing the Dockerfile: %v", err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("the Dockerfile's instructions: %v", err)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages; want a multi-stage build (build, then a minimal runtime)", len(stages))
	}
	return stages
}

func commands[T instructions.Command](s instructions.Stage) []T {
	var out []T
	for _, c := range s.Commands {
		if v, ok := c.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestFinalStage: the runtime stage is distroless static, runs as a numeric non-root user, has
// the operator as entrypoint and copies dgdr-operator and dgdrctl from the build stage.
func TestFinalStage(t *testing.T) {
	stages := parseDockerfile(t)
	final := stages[len(stages)-1]
	if !strings.HasPrefix(final.BaseName, "gcr.io/distroless/static") && final.BaseName != "scratch" {
		t.Errorf("final base image %s; want distroless static or scratch", final.BaseName)
	}
	users := commands[*instructions.UserCommand](final)
	if len(users) == 0 {
		t.Fatal("the final stage sets no USER")
	}
	uid, _, _ := strings.Cut(users[len(users)-1].User, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %s; want a numeric non-root uid (runAsNonRoot can only verify numbers)", users[len(users)-1].User)
	}
	entry := commands[*instructions.EntrypointCommand](final)
	if len(entry) == 0 || !cmp.Equal(entry[len(entry)-1].CmdLine, []string{"/usr/local/bin/dgdr-operator"}) {
		t.Errorf("ENTRYPOINT %v; want [/usr/local/bin/dgdr-operator] (the chart runs the image with args only)", entry)
	}
	var copied []string
	for _, c := range commands[*instructions.CopyCommand](final) {
		if c.From != stages[0].Name {
			continue
		}
		for _, src := range c.SourcePaths {
			copied = append(copied, filepath.Base(src))
		}
	}
	if diff := cmp.Diff([]string{"dgdr-operator", "dgdrctl"}, copied); diff != "" {
		t.Errorf("binaries copied from the build stage (-want +got):\n%s", diff)
	}
}

// buildOutput is where the build stage writes binaries (the final stage copies from there).
var buildOutput = regexp.MustCompile(`(^|\s)-o\s+/out/`)

// TestBuildStageProducesStaticBinaries runs the build stage's RUN commands that build binaries,
// on the host in the repository (the stage's WORKDIR after `COPY . .`), with /out/ redirected to
// a temporary directory, and checks that each binary the final stage copies is a static ELF
// executable (no interpreter, no shared libraries: distroless static has no libc) that runs.
func TestBuildStageProducesStaticBinaries(t *testing.T) {
	stages := parseDockerfile(t)
	out := t.TempDir()
	ran := 0
	for _, run := range commands[*instructions.RunCommand](stages[0]) {
		line := strings.Join(run.CmdLine, " ")
		if !buildOutput.MatchString(line) {
			continue // go mod download
		}
		cmd := exec.Command("sh", "-c", buildOutput.ReplaceAllString(line, "${1}-o "+out+"/"))
		cmd.Dir = testenv.Root()
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("RUN %s: %v\n%s", line, err, b)
		}
		ran++
	}
	if ran == 0 {
		t.Fatal("the build stage has no RUN that builds into /out/")
	}
	for _, name := range []string{"dgdr-operator", "dgdrctl"} {
		path := filepath.Join(out, name)
		f, err := elf.Open(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has an ELF interpreter: not a static binary", name)
			}
		}
		if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
			t.Errorf("%s links shared libraries %v (%v)", name, libs, err)
		}
		f.Close()
		if b, err := exec.Command(path, "--help").CombinedOutput(); err != nil {
			t.Errorf("%s --help: %v\n%s", name, err, b)
		}
	}
}
