package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var created = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func options(binaries map[Platform][]byte) Options {
	return Options{
		Binaries: binaries,
		CABundle: []byte("-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n"),
		Labels:   map[string]string{LabelVersion: "v0.1.0", LabelRevision: "abc"},
		Created:  created,
	}
}

var (
	amd64 = Platform{OS: "linux", Arch: "amd64"}
	arm64 = Platform{OS: "linux", Arch: "arm64"}
)

// TestLayerTar: parents come before children, entries are sorted, every entry has the fixed
// time and no owner names, and the non-root home belongs to 65532.
func TestLayerTar(t *testing.T) {
	b, err := LayerTar(BaseFiles([]byte("ca")), created)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name     string
		Mode     int64
		UID, GID int
	}
	var got []entry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(created) || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mtime %v, owner names %q/%q; want %v and none", h.Name, h.ModTime, h.Uname, h.Gname, created)
		}
		got = append(got, entry{h.Name, h.Mode, h.Uid, h.Gid})
	}
	want := []entry{
		{"etc/", 0o755, 0, 0},
		{"etc/group", 0o644, 0, 0},
		{"etc/passwd", 0o644, 0, 0},
		{"etc/ssl/", 0o755, 0, 0},
		{"etc/ssl/certs/", 0o755, 0, 0},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, 0, 0},
		{"home/", 0o755, 0, 0},
		{"home/nonroot/", 0o700, UID, GID},
		{"root/", 0o700, 0, 0},
		{"tmp/", 0o1777, 0, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("base layer entries (-want +got):\n%s", diff)
	}
}

func TestLayerTarRejects(t *testing.T) {
	cases := []struct {
		name  string
		files []File
	}{
		{name: "outside the root", files: []File{{Path: "../etc/passwd"}}},
		{name: "the root itself", files: []File{{Path: "/"}}},
		{name: "twice", files: []File{{Path: "a"}, {Path: "/a"}}},
		{name: "a directory with data", files: []File{{Path: "d", Dir: true, Data: []byte("x")}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := LayerTar(c.files, created); err == nil {
				t.Errorf("LayerTar(%+v) succeeded", c.files)
			}
		})
	}
}

// TestIndexIsReproducible: the same inputs give the same digest; a different binary or label
// a different one.
func TestIndexIsReproducible(t *testing.T) {
	digest := func(o Options) string {
		idx, err := Index(o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	bins := map[Platform][]byte{amd64: []byte("amd64 binary"), arm64: []byte("arm64 binary")}
	first := digest(options(bins))
	if again := digest(options(map[Platform][]byte{arm64: []byte("arm64 binary"), amd64: []byte("amd64 binary")})); again != first {
		t.Errorf("same inputs, digests %s and %s", first, again)
	}
	if other := digest(options(map[Platform][]byte{amd64: []byte("amd64 binary 2"), arm64: []byte("arm64 binary")})); other == first {
		t.Error("a different binary gave the same digest")
	}
	o := options(bins)
	o.Labels = map[string]string{LabelVersion: "v0.1.1", LabelRevision: "abc"}
	if other := digest(o); other == first {
		t.Error("a different version label gave the same digest")
	}
}

// TestLayoutRoundTrip writes a layout, reads it back and extracts one platform: the config
// runs the entrypoint as 65532, the binary is at the entrypoint, the base files are there.
func TestLayoutRoundTrip(t *testing.T) {
	idx, err := Index(options(map[Platform][]byte{amd64: []byte("amd64 binary"), arm64: []byte("arm64 binary")}))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	digest, err := WriteLayout(dir, idx, "v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.Digest != digest || l.Ref != "v0.1.0" {
		t.Errorf("read back digest %s ref %q, want %s v0.1.0", l.Digest, l.Ref, digest)
	}
	img, err := l.Image(arm64)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	type runtimeConfig struct {
		OS, Arch, User string
		Entrypoint     []string
		Labels         map[string]string
	}
	got := runtimeConfig{cf.OS, cf.Architecture, cf.Config.User, cf.Config.Entrypoint, cf.Config.Labels}
	want := runtimeConfig{"linux", "arm64", User, []string{Entrypoint}, map[string]string{LabelVersion: "v0.1.0", LabelRevision: "abc"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("arm64 config (-want +got):\n%s", diff)
	}
	if _, err := l.Image(Platform{OS: "linux", Arch: "s390x"}); err == nil {
		t.Error("a platform the index lacks was found")
	}

	root := filepath.Join(t.TempDir(), "rootfs")
	if err := Extract(img, root); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{Entrypoint: "arm64 binary", "/etc/group": "root:x:0:\nnonroot:x:65532:\n"} {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q (%v), want %q", path, b, err, want)
		}
	}
	st, err := os.Stat(filepath.Join(root, Entrypoint))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("%s: mode %v (%v), want 0755", Entrypoint, st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(root, "tmp")); err != nil || st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Errorf("/tmp: mode %v (%v), want sticky 0777", st.Mode(), err)
	}
}

func TestParsePlatform(t *testing.T) {
	if p, err := ParsePlatform("linux/arm64"); err != nil || p != arm64 {
		t.Errorf("ParsePlatform(linux/arm64) = %v, %v", p, err)
	}
	for _, bad := range []string{"linux", "linux/", "/arm64", "linux/arm64/v8"} {
		if _, err := ParsePlatform(bad); err == nil {
			t.Errorf("ParsePlatform(%q) succeeded", bad)
		}
	}
}
