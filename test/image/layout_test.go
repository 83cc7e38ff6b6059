//go:build image

package image_test

// The image test: reads the OCI layout `make images` wrote (DGDR_IMAGE_LAYOUT; `make test-image`
// sets it), checks each platform's runtime configuration and labels, runs the amd64 binary from
// the extracted root filesystem as the image's user, and rebuilds the image from the same commit
// to compare digests. Behind the build tag image: building two platforms is for the release and
// CI step, not for every `go test ./...`.

import (
	"context"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/tools/release"
	"github.com/dgdr-operator/dgdr-operator/tools/release/ociimage"
)

var wantPlatforms = []ociimage.Platform{{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}}

func builtLayout(t *testing.T) *ociimage.Layout {
	t.Helper()
	dir := os.Getenv("DGDR_IMAGE_LAYOUT")
	if dir == "" {
		t.Fatal("set DGDR_IMAGE_LAYOUT to an image layout built by `make images` (make test-image does)")
	}
	l, err := ociimage.ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// TestBuiltImageConfiguration: both platforms, each running the operator as a numeric non-root user
// with the OCI labels of the release.
func TestBuiltImageConfiguration(t *testing.T) {
	l := builtLayout(t)
	m, err := l.Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []ociimage.Platform
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		got = append(got, ociimage.Platform{OS: d.Platform.OS, Arch: d.Platform.Architecture})
	}
	if diff := cmp.Diff(wantPlatforms, got); diff != "" {
		t.Errorf("platforms of %s (-want +got):\n%s", l.Digest, diff)
	}
	for _, p := range wantPlatforms {
		img, err := l.Image(p)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != p.OS || cf.Architecture != p.Arch {
			t.Errorf("%s: config says %s/%s", p, cf.OS, cf.Architecture)
		}
		if diff := cmp.Diff([]string{ociimage.Entrypoint}, cf.Config.Entrypoint); diff != "" {
			t.Errorf("%s: entrypoint (-want +got):\n%s", p, diff)
		}
		if len(cf.Config.Cmd) != 0 {
			t.Errorf("%s: cmd %v; want none (the chart passes args only)", p, cf.Config.Cmd)
		}
		if cf.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532 (numeric, so runAsNonRoot can verify it)", p, cf.Config.User)
		}
		labels := cf.Config.Labels
		if labels[ociimage.LabelVersion] != l.Ref {
			t.Errorf("%s: label %s=%q, want the layout's ref %q", p, ociimage.LabelVersion, labels[ociimage.LabelVersion], l.Ref)
		}
		if !commitRE.MatchString(labels[ociimage.LabelRevision]) {
			t.Errorf("%s: label %s=%q, want a git commit", p, ociimage.LabelRevision, labels[ociimage.LabelRevision])
		}
		if !strings.HasPrefix(labels[ociimage.LabelSource], "https://") {
			t.Errorf("%s: label %s=%q, want the repository URL", p, ociimage.LabelSource, labels[ociimage.LabelSource])
		}
		if labels[ociimage.LabelLicenses] == "" {
			t.Errorf("%s: label %s is empty", p, ociimage.LabelLicenses)
		}
		if _, err := time.Parse(time.RFC3339, labels[ociimage.LabelCreated]); err != nil || !cf.Created.Equal(mustTime(t, labels[ociimage.LabelCreated])) {
			t.Errorf("%s: created %v, label %s=%q; want the same commit time", p, cf.Created, ociimage.LabelCreated, labels[ociimage.LabelCreated])
		}
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return v
}

// TestBuiltImageRunsAsNonRoot extracts the host platform's root filesystem and runs the
// entrypoint inside it (chroot) as uid/gid 65532, as a container runtime would: `--version`
// prints the labelled version and commit, and `report --help` shows the reporter. The CA bundle
// and the passwd entry of the user are in place.
func TestBuiltImageRunsAsNonRoot(t *testing.T) {
	l := builtLayout(t)
	p := ociimage.Platform{OS: "linux", Arch: runtime.GOARCH}
	img, err := l.Image(p)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	if err := ociimage.Extract(img, rootfs); err != nil {
		t.Fatal(err)
	}
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	if err != nil || !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd %q (%v): want user 65532", passwd, err)
	}
	ca, err := os.ReadFile(filepath.Join(rootfs, ociimage.CABundlePath))
	if err != nil || !x509.NewCertPool().AppendCertsFromPEM(ca) {
		t.Errorf("%s: not a PEM bundle (%v)", ociimage.CABundlePath, err)
	}

	out := runInImage(t, rootfs, cf.Config.Entrypoint, "--version")
	labels := cf.Config.Labels
	want := "dgdr-operator " + labels[ociimage.LabelVersion] + " (commit " + labels[ociimage.LabelRevision] + ", built " + labels[ociimage.LabelCreated]
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "linux/"+runtime.GOARCH) {
		t.Errorf("--version printed %q, want it to start with %q and name linux/%s", out, want, runtime.GOARCH)
	}
	if out := runInImage(t, rootfs, cf.Config.Entrypoint, "report", "--help"); !strings.Contains(out, "report") || !strings.Contains(out, "Usage:") {
		t.Errorf("report --help printed %q", out)
	}

	// The process really is not root: a configuration file only root may read is refused.
	if os.Geteuid() == 0 {
		if err := os.WriteFile(filepath.Join(rootfs, "root-only.yaml"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := inImage(ctx, rootfs, cf.Config.Entrypoint, "--config", "/root-only.yaml").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "permission denied") {
			t.Errorf("--config with a root-only file: %v, %q; want permission denied (the binary ran as root?)", err, out)
		}
	}
}

// runInImage runs the image's entrypoint with args chrooted into rootfs as uid/gid 65532 and
// returns its combined output. As root it changes to that user directly (the kernel's real
// setuid); otherwise it maps the caller's uid to 65532 in a new user namespace (the process then
// is 65532 for every check inside it, and has no other uid to fall back to).
func runInImage(t *testing.T, rootfs string, entrypoint []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := inImage(ctx, rootfs, entrypoint, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v %v in the image as 65532: %v\n%s", entrypoint, args, err, b)
	}
	return string(b)
}

// inImage is the command of runInImage.
func inImage(ctx context.Context, rootfs string, entrypoint []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, entrypoint[0], append(entrypoint[1:], args...)...)
	cmd.Dir = ociimage.Home
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ociimage.Home}
	attr := &syscall.SysProcAttr{Chroot: rootfs}
	if os.Geteuid() == 0 {
		attr.Credential = &syscall.Credential{Uid: ociimage.UID, Gid: ociimage.GID, Groups: []uint32{}}
	} else {
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: ociimage.UID, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: ociimage.GID, HostID: os.Getgid(), Size: 1}}
	}
	cmd.SysProcAttr = attr
	return cmd
}

// TestBuiltImageIsReproducible rebuilds the image from this work tree with the build identity its
// labels record (version, commit, commit time) and expects the very same digest.
func TestBuiltImageIsReproducible(t *testing.T) {
	l := builtLayout(t)
	img, err := l.Image(wantPlatforms[0])
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	labels := cf.Config.Labels
	stamp := release.Stamp{Version: labels[ociimage.LabelVersion], Commit: labels[ociimage.LabelRevision], Date: mustTime(t, labels[ociimage.LabelCreated])}
	dir := t.TempDir()
	digest, err := release.BuildImage(context.Background(), release.ImageOptions{
		Root: testenv.Root(), Stamp: stamp, Platforms: wantPlatforms, CABundle: "/etc/ssl/certs/ca-certificates.crt",
		Source: labels[ociimage.LabelSource], Licenses: labels[ociimage.LabelLicenses],
		Out: filepath.Join(dir, "layout"), BinDir: filepath.Join(dir, "bin"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if digest != l.Digest.String() {
		t.Errorf("rebuilding %s at %s gave %s, the layout has %s: the build is not reproducible", stamp.Version, stamp.Commit, digest, l.Digest)
	}
}
