package ociimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// WriteLayout writes idx as the only image of a new OCI image layout at dir (replacing what
// was there), named refName in index.json, and returns the image index's digest: the digest
// the image keeps when pushed to a registry.
func WriteLayout(dir string, idx v1.ImageIndex, refName string) (v1.Hash, error) {
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{AnnotationRefName: refName})); err != nil {
		return v1.Hash{}, fmt.Errorf("writing the layout %s: %w", dir, err)
	}
	return idx.Digest()
}

// Layout is an OCI image layout holding one multi-platform image.
type Layout struct {
	// Dir is the layout's directory.
	Dir string
	// Ref is the image's name in index.json (the release tag).
	Ref string
	// Digest is the image index's digest.
	Digest v1.Hash
	// Index is the image index.
	Index v1.ImageIndex
}

// ReadLayout opens the layout at dir and its one image index.
func ReadLayout(dir string) (*Layout, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("%s/index.json: want exactly one image index, got %d descriptors", dir, len(m.Manifests))
	}
	d := m.Manifests[0]
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		return nil, err
	}
	return &Layout{Dir: dir, Ref: d.Annotations[AnnotationRefName], Digest: d.Digest, Index: idx}, nil
}

// Image is the image of one platform.
func (l *Layout) Image(p Platform) (v1.Image, error) {
	m, err := l.Index.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Arch {
			return l.Index.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("the image %s in %s has no %s manifest", l.Digest, l.Dir, p)
}

// Extract writes the flattened root filesystem of img into dest (created). Entries are
// confined to dest; ownership is kept when the process may change it (root), so that the
// non-root user's home belongs to it.
func Extract(img v1.Image, dest string) error {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	// The root is the container's /: traversable by every user.
	if err := os.Chmod(dest, 0o755); err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	chown := os.Geteuid() == 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("layer entry %q leaves the root", h.Name)
		}
		target := filepath.Join(dest, name)
		mode := os.FileMode(h.Mode).Perm()
		if h.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("layer entry %q: unsupported type %q", h.Name, h.Typeflag)
		}
		// chmod after creation: the umask must not narrow the image's modes.
		if err := os.Chmod(target, mode); err != nil {
			return err
		}
		if chown {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return err
			}
		}
	}
}
