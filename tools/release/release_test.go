package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/tools/release/ociimage"
)

var digest = "sha256:" + strings.Repeat("ab", 32)

func TestPinDigest(t *testing.T) {
	cases := []struct {
		name    string
		values  string
		digest  string
		want    string
		wantErr string
	}{
		{
			name:   "only the digest line changes, comments stay",
			values: "# -- top\nimage:\n  # -- Repository.\n  repository: r\n  # -- Digest.\n  digest: \"\"\nother:\n  digest: keep\n",
			digest: digest,
			want:   "# -- top\nimage:\n  # -- Repository.\n  repository: r\n  # -- Digest.\n  digest: " + digest + "\nother:\n  digest: keep\n",
		},
		{
			name:   "a last line without a newline",
			values: "image:\n  digest: \"\"",
			digest: digest,
			want:   "image:\n  digest: " + digest,
		},
		{name: "no image.digest", values: "image:\n  repository: r\n", digest: digest, wantErr: "image.digest"},
		{name: "not a digest", values: "image:\n  digest: \"\"\n", digest: "latest", wantErr: "want sha256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := PinDigest([]byte(c.values), c.digest)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, string(got)); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPinDigestOfTheChart: the chart's own values.yaml can be pinned.
func TestPinDigestOfTheChart(t *testing.T) {
	values, err := os.ReadFile(filepath.Join("..", "..", "charts", "dgdr-operator", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := PinDigest(values, digest)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(got), "\n") != strings.Count(string(values), "\n") {
		t.Error("pinning changed the number of lines")
	}
}

func TestKrewManifest(t *testing.T) {
	archives := []CLIArchive{
		{Platform: ociimage.Platform{OS: "linux", Arch: "amd64"}, Name: CLIArchiveName("v0.1.0", ociimage.Platform{OS: "linux", Arch: "amd64"}), SHA256: strings.Repeat("1", 64)},
		{Platform: ociimage.Platform{OS: "darwin", Arch: "arm64"}, Name: CLIArchiveName("v0.1.0", ociimage.Platform{OS: "darwin", Arch: "arm64"}), SHA256: strings.Repeat("2", 64)},
	}
	b, err := KrewManifest("v0.1.0", "https://example.com/dgdr", "https://example.com/dl/v0.1.0", archives)
	if err != nil {
		t.Fatal(err)
	}
	var got KrewPlugin
	if err := yaml.UnmarshalStrict(b, &got); err != nil {
		t.Fatal(err)
	}
	want := []KrewPlatform{
		{Selector: KrewSelector{MatchLabels: map[string]string{"os": "linux", "arch": "amd64"}},
			URI: "https://example.com/dl/v0.1.0/dgdrctl_v0.1.0_linux_amd64.tar.gz", SHA256: strings.Repeat("1", 64), Bin: "dgdrctl"},
		{Selector: KrewSelector{MatchLabels: map[string]string{"os": "darwin", "arch": "arm64"}},
			URI: "https://example.com/dl/v0.1.0/dgdrctl_v0.1.0_darwin_arm64.tar.gz", SHA256: strings.Repeat("2", 64), Bin: "dgdrctl"},
	}
	if diff := cmp.Diff(want, got.Spec.Platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	if got.Kind != "Plugin" || got.Metadata.Name != "dgdr" || got.Spec.Version != "v0.1.0" {
		t.Errorf("manifest %s %s %s, want Plugin dgdr v0.1.0", got.Kind, got.Metadata.Name, got.Spec.Version)
	}
	if _, err := KrewManifest("v0.1.0", "h", "u", []CLIArchive{{Name: "x", SHA256: "short"}}); err == nil {
		t.Error("a manifest with a bad checksum was written")
	}
}

// TestWriteTarAndChecksums: the same files give the same archive bytes whenever written, and
// SHA256SUMS lists every top-level file but itself, in sha256sum's format.
func TestWriteTarAndChecksums(t *testing.T) {
	dir := t.TempDir()
	files := []ociimage.File{{Path: "dgdrctl", Mode: 0o755, Data: []byte("binary")}}
	mtime := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range []string{"a.tar.gz", "b.tar.gz"} {
		if err := WriteTar(filepath.Join(dir, name), files, mtime); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := SHA256File(filepath.Join(dir, "a.tar.gz"))
	b, _ := SHA256File(filepath.Join(dir, "b.tar.gz"))
	if a != b || len(a) != 64 {
		t.Errorf("the same archive twice: %s and %s", a, b)
	}
	if err := os.Mkdir(filepath.Join(dir, "oci"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteChecksums(dir); err != nil {
		t.Fatal(err)
	}
	if err := WriteChecksums(dir); err != nil { // again: SHA256SUMS does not list itself
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := a + "  a.tar.gz\n" + b + "  b.tar.gz\n"; string(got) != want {
		t.Errorf("SHA256SUMS = %q, want %q", got, want)
	}
}

func TestLDFlags(t *testing.T) {
	s := Stamp{Version: "v0.1.0", Commit: "abc", Date: time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("x", 3600))}
	want := "-s -w -X " + VersionPackage + ".version=v0.1.0 -X " + VersionPackage + ".commit=abc -X " + VersionPackage + ".buildDate=2026-12-01T09:00:00Z"
	if got := s.LDFlags(); got != want {
		t.Errorf("LDFlags = %q, want %q", got, want)
	}
}

func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{"v0.1.0": true, "v1.12.3": true, "v1.2.0-rc.1": true,
		"0.1.0": false, "v0.1": false, "v01.1.0": false, "v0.1.0+build": false, "": false, "latest": false} {
		if err := CheckVersion(v); (err == nil) != ok {
			t.Errorf("CheckVersion(%q) = %v, want ok=%v", v, err, ok)
		}
	}
}

func TestStampSBOM(t *testing.T) {
	s := Stamp{Date: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	got, err := stampSBOM([]byte(`{"bomFormat":"CycloneDX","metadata":{"component":{"name":"x"}}}`), s)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"bomFormat\": \"CycloneDX\",\n  \"metadata\": {\n    \"component\": {\n      \"name\": \"x\"\n    },\n    \"timestamp\": \"2026-12-01T10:00:00Z\"\n  }\n}\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("stamped SBOM (-want +got):\n%s", diff)
	}
	if _, err := stampSBOM([]byte(`{"spdxVersion":"SPDX-2.3"}`), s); err == nil {
		t.Error("a document that is not CycloneDX was stamped")
	}
}
