// Package release builds the release artifacts of dgdr-operator from a work tree: stamped,
// reproducible binaries (go build), the operator's OCI image layout (ociimage), SBOMs
// (cyclonedx-gomod), the packaged Helm chart pinned to the image's digest, the krew plugin
// manifest of dgdrctl, and SHA256SUMS. cmd/dgdr-release drives it from the Makefile; the image
// test rebuilds the image with it to prove the digest is reproducible. Never imported by the
// operator.
package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dgdr-operator/dgdr-operator/tools/release/ociimage"
)

// VersionPackage is the package whose variables the linker stamps.
const VersionPackage = "github.com/dgdr-operator/dgdr-operator/internal/version"

// Stamp is the build identity linked into every binary.
type Stamp struct {
	// Version is the release version, v0.1.0.
	Version string
	// Commit is the full git commit.
	Commit string
	// Date is the commit's time (UTC): the reproducible build date.
	Date time.Time
}

// DateString is Date in RFC 3339, UTC.
func (s Stamp) DateString() string { return s.Date.UTC().Format(time.RFC3339) }

// LDFlags are the linker flags: stripped, with the stamp.
func (s Stamp) LDFlags() string {
	return strings.Join([]string{"-s", "-w",
		"-X", VersionPackage + ".version=" + s.Version,
		"-X", VersionPackage + ".commit=" + s.Commit,
		"-X", VersionPackage + ".buildDate=" + s.DateString(),
	}, " ")
}

var releaseVersion = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// CheckVersion accepts a release version: v and a SemVer version without build metadata
// (v0.1.0, v1.2.0-rc.1), so that the chart's version is valid SemVer and the image tag valid.
func CheckVersion(v string) error {
	if !releaseVersion.MatchString(v) {
		return fmt.Errorf("version %q: want vMAJOR.MINOR.PATCH[-PRERELEASE], e.g. v0.1.0 (VERSION file, or make release VERSION=...)", v)
	}
	return nil
}

// StampFromGit is the stamp of the work tree's HEAD.
func StampFromGit(ctx context.Context, root, version string) (Stamp, error) {
	out, err := run(ctx, root, nil, "git", "log", "-1", "--format=%H %ct")
	if err != nil {
		return Stamp{}, err
	}
	commit, ts, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	var sec int64
	if _, err := fmt.Sscan(ts, &sec); !ok || err != nil {
		return Stamp{}, fmt.Errorf("git log: unexpected output %q", out)
	}
	return Stamp{Version: version, Commit: commit, Date: time.Unix(sec, 0).UTC()}, nil
}

// GoBuild builds pkg (./cmd/dgdrctl) of the module at root for platform p into out: static,
// -trimpath, no VCS stamping (the stamp carries the commit), so the bytes depend only on the
// sources, the toolchain and the stamp.
func GoBuild(ctx context.Context, root, pkg string, p ociimage.Platform, out string, s Stamp) error {
	env := []string{"CGO_ENABLED=0", "GOOS=" + p.OS, "GOARCH=" + p.Arch}
	_, err := run(ctx, root, env, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", s.LDFlags(), "-o", out, pkg)
	return err
}

// run runs a command in dir with extra environment, at low CPU priority (builds share the
// machine), and returns its stdout.
func run(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "nice", append([]string{"-n", "10", name}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// ImageOptions are the inputs of the operator image.
type ImageOptions struct {
	// Root is the module's work tree.
	Root string
	// Stamp is linked into the binary and labels the image.
	Stamp Stamp
	// Platforms to build (linux/amd64, linux/arm64).
	Platforms []ociimage.Platform
	// CABundle is the CA certificate bundle file of the build machine.
	CABundle string
	// Source is the org.opencontainers.image.source label (the repository URL).
	Source string
	// Licenses is the org.opencontainers.image.licenses label (SPDX expression).
	Licenses string
	// Out is the OCI layout directory to write.
	Out string
	// BinDir receives the operator binary of each platform (os_arch/dgdr-operator); SBOMs are
	// made from them.
	BinDir string
}

// Labels are the image's OCI labels.
func (o ImageOptions) Labels() map[string]string {
	return map[string]string{
		ociimage.LabelTitle:    "dgdr-operator",
		ociimage.LabelSource:   o.Source,
		ociimage.LabelVersion:  o.Stamp.Version,
		ociimage.LabelRevision: o.Stamp.Commit,
		ociimage.LabelLicenses: o.Licenses,
		ociimage.LabelCreated:  o.Stamp.DateString(),
	}
}

// BuildImage builds the operator for every platform and writes the image layout; it returns
// the image index's digest.
func BuildImage(ctx context.Context, o ImageOptions) (string, error) {
	ca, err := os.ReadFile(o.CABundle)
	if err != nil {
		return "", fmt.Errorf("the CA bundle: %w", err)
	}
	bins := map[ociimage.Platform][]byte{}
	for _, p := range o.Platforms {
		path := filepath.Join(o.BinDir, p.OS+"_"+p.Arch, "dgdr-operator")
		if err := GoBuild(ctx, o.Root, "./cmd/dgdr-operator", p, path, o.Stamp); err != nil {
			return "", err
		}
		if bins[p], err = os.ReadFile(path); err != nil {
			return "", err
		}
	}
	idx, err := ociimage.Index(ociimage.Options{Binaries: bins, CABundle: ca, Labels: o.Labels(), Created: o.Stamp.Date})
	if err != nil {
		return "", err
	}
	d, err := ociimage.WriteLayout(o.Out, idx, o.Stamp.Version)
	if err != nil {
		return "", err
	}
	return d.String(), nil
}
