// Package ociimage builds the operator image as an OCI image layout without a container engine
// and without pulling a base image: the root filesystem is assembled from files given to it (the
// build machine's CA certificates, a passwd and group file naming the non-root user), and every
// byte of the result depends only on its inputs, so the same commit gives the same digest.
// It also reads such a layout back and extracts one platform's root filesystem (the image test
// and the sandbox's node agent run the binary extracted from it).
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's runtime identity.
const (
	// UID and GID of the non-root user the image runs as (distroless' "nonroot").
	UID = 65532
	GID = 65532
	// User is the image config's User: numeric, so that runAsNonRoot can verify it.
	User = "65532:65532"
	// Entrypoint is where the operator binary lives; the chart runs the image with args only.
	Entrypoint = "/usr/local/bin/dgdr-operator"
	// CABundlePath is where Go's crypto/x509 looks first on Linux.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// Home is the non-root user's home directory.
	Home = "/home/nonroot"
)

// OCI annotation and label keys (image-spec annotations.md).
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
	// AnnotationRefName names the image in the layout's index.json (the release tag).
	AnnotationRefName = "org.opencontainers.image.ref.name"
)

// Platform is an os/arch pair.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatform parses "linux/arm64".
func ParsePlatform(s string) (Platform, error) {
	os, arch, ok := strings.Cut(s, "/")
	if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q: want os/arch, e.g. linux/arm64", s)
	}
	return Platform{OS: os, Arch: arch}, nil
}

// File is one entry of a layer. A Dir has no Data.
type File struct {
	Path string
	Mode int64
	UID  int
	GID  int
	Dir  bool
	Data []byte
}

// BaseFiles is the minimal root filesystem: the CA bundle, passwd and group with root and the
// non-root user, its home, and a world-writable /tmp.
func BaseFiles(caBundle []byte) []File {
	return []File{
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:" + Home + ":/sbin/nologin\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Path: strings.TrimPrefix(CABundlePath, "/"), Mode: 0o644, Data: caBundle},
		{Path: strings.TrimPrefix(Home, "/"), Mode: 0o700, UID: UID, GID: GID, Dir: true},
		{Path: "tmp", Mode: 0o1777, Dir: true},
		{Path: "root", Mode: 0o700, Dir: true},
	}
}

// LayerTar is a deterministic tar of files: entries sorted by path, every parent directory
// listed before its children (root-owned, 0755 unless given), one fixed modification time, no
// user or group names.
func LayerTar(files []File, mtime time.Time) ([]byte, error) {
	entries := map[string]File{}
	for _, f := range files {
		p := path.Clean(strings.TrimPrefix(f.Path, "/"))
		if p == "." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("layer entry %q: want a path inside the root", f.Path)
		}
		if _, dup := entries[p]; dup {
			return nil, fmt.Errorf("layer entry %q: listed twice", f.Path)
		}
		f.Path = p
		entries[p] = f
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = File{Path: d, Mode: 0o755, Dir: true}
			}
		}
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := entries[p]
		h := &tar.Header{Name: p, Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: mtime, Format: tar.FormatPAX}
		if f.Dir {
			if len(f.Data) > 0 {
				return nil, fmt.Errorf("layer entry %q: a directory with data", p)
			}
			h.Typeflag, h.Name = tar.TypeDir, p+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layer is an OCI gzip layer of files.
func layer(files []File, mtime time.Time) (v1.Layer, error) {
	b, err := LayerTar(files, mtime)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// Options are the inputs of the image; the digest depends on nothing else.
type Options struct {
	// Binaries is the operator binary (its bytes) of each platform.
	Binaries map[Platform][]byte
	// CABundle is the PEM bundle installed at CABundlePath.
	CABundle []byte
	// Labels are the image config's labels (and the index's annotations).
	Labels map[string]string
	// Created is the image's creation time: the commit's time, for reproducibility.
	Created time.Time
}

// Index builds the multi-platform image index: per platform, a base layer (shared) and a layer
// with the binary at Entrypoint; the config runs Entrypoint as User.
func Index(o Options) (v1.ImageIndex, error) {
	if len(o.Binaries) == 0 {
		return nil, fmt.Errorf("no platform binaries")
	}
	if len(o.CABundle) == 0 {
		return nil, fmt.Errorf("the CA bundle is empty")
	}
	created := o.Created.UTC()
	base, err := layer(BaseFiles(o.CABundle), created)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	platforms := make([]Platform, 0, len(o.Binaries))
	for p := range o.Binaries {
		platforms = append(platforms, p)
	}
	slices.SortFunc(platforms, func(a, b Platform) int { return strings.Compare(a.String(), b.String()) })
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		bin, err := layer([]File{{Path: Entrypoint, Mode: 0o755, Data: o.Binaries[p]}}, created)
		if err != nil {
			return nil, fmt.Errorf("%s binary layer: %w", p, err)
		}
		img, err := mutate.AppendLayers(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), base, bin)
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = p.OS, p.Arch
		cf.Created = v1.Time{Time: created}
		cf.Config = v1.Config{
			Entrypoint: []string{Entrypoint},
			User:       User,
			WorkingDir: Home,
			Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + Home},
			Labels:     o.Labels,
		}
		cf.History = []v1.History{
			{Created: cf.Created, CreatedBy: "base: CA certificates, passwd and group with user 65532"},
			{Created: cf.Created, CreatedBy: "dgdr-operator " + p.String()},
		}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}}})
	}
	return mutate.Annotations(idx, o.Labels).(v1.ImageIndex), nil
}
