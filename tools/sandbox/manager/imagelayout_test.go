package manager

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/tools/release/ociimage"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

// writeLayout writes a layout whose host-platform image has the given binary.
func writeLayout(t *testing.T, binary string) (dir, digest string) {
	t.Helper()
	idx, err := ociimage.Index(ociimage.Options{
		Binaries: map[ociimage.Platform][]byte{{OS: "linux", Arch: runtime.GOARCH}: []byte(binary)},
		CABundle: []byte("ca"),
		Created:  time.Unix(0, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "layout")
	d, err := ociimage.WriteLayout(dir, idx, "v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	return dir, d.String()
}

// TestExtractImageLayouts: the pinned reference maps to the entrypoint of the extracted root
// filesystem; a reference whose digest is not the layout's, or that is not pinned, is refused.
func TestExtractImageLayouts(t *testing.T) {
	dir, digest := writeLayout(t, "the operator")
	state := t.TempDir()
	ref := "ghcr.io/dgdr-operator/dgdr-operator:v0.1.0@" + digest
	got, err := extractImageLayouts(state, []ImageLayout{{Ref: ref, Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(state, "images", strings.TrimPrefix(digest, "sha256:"), "rootfs", ociimage.Entrypoint)
	want := map[string]nodeagent.Image{ref: {Binary: bin, Entrypoint: []string{ociimage.Entrypoint}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node agent images (-want +got):\n%s", diff)
	}
	if b, err := os.ReadFile(bin); err != nil || string(b) != "the operator" {
		t.Errorf("extracted entrypoint %q (%v)", b, err)
	}

	other := "sha256:" + strings.Repeat("0", 64)
	for _, bad := range []string{"ghcr.io/dgdr-operator/dgdr-operator:v0.1.0", "ghcr.io/dgdr-operator/dgdr-operator@" + other} {
		if _, err := extractImageLayouts(state, []ImageLayout{{Ref: bad, Dir: dir}}); err == nil {
			t.Errorf("image %s mapped to a layout holding %s", bad, digest)
		}
	}
}

func TestParseImageLayout(t *testing.T) {
	got, err := ParseImageLayout("repo:v1@sha256:abc=/dist/oci/dgdr-operator")
	if err != nil || got != (ImageLayout{Ref: "repo:v1@sha256:abc", Dir: "/dist/oci/dgdr-operator"}) {
		t.Errorf("ParseImageLayout = %+v, %v", got, err)
	}
	for _, bad := range []string{"repo:v1", "=dir", "repo="} {
		if _, err := ParseImageLayout(bad); err == nil {
			t.Errorf("ParseImageLayout(%q) succeeded", bad)
		}
	}
}
