package manager

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/tools/release/ociimage"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

// ImageLayout makes the node agent run an image reference from an OCI image layout built by
// `make images`: the agent runs the entrypoint of the root filesystem extracted from the
// layout's linux/<host arch> image, so a chart pinned to the built image runs the very binary
// the image ships.
type ImageLayout struct {
	// Ref is the image reference pods name, pinned by digest (repo:tag@sha256:...). Its digest
	// must be the layout's.
	Ref string `json:"ref"`
	// Dir is the OCI image layout directory.
	Dir string `json:"dir"`
}

// ParseImageLayout parses REF=DIR.
func ParseImageLayout(s string) (ImageLayout, error) {
	ref, dir, ok := strings.Cut(s, "=")
	if !ok || ref == "" || dir == "" {
		return ImageLayout{}, fmt.Errorf("image layout %q: want IMAGE@sha256:...=DIR", s)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ImageLayout{}, err
	}
	return ImageLayout{Ref: ref, Dir: abs}, nil
}

// extractImageLayouts extracts each layout's host-platform root filesystem under
// stateDir/images/<digest> and returns the node agent's image map entries.
func extractImageLayouts(stateDir string, layouts []ImageLayout) (map[string]nodeagent.Image, error) {
	images := map[string]nodeagent.Image{}
	for _, il := range layouts {
		_, digest, ok := strings.Cut(il.Ref, "@")
		if !ok {
			return nil, fmt.Errorf("image %s: not pinned by digest (want IMAGE@sha256:...)", il.Ref)
		}
		l, err := ociimage.ReadLayout(il.Dir)
		if err != nil {
			return nil, err
		}
		if l.Digest.String() != digest {
			return nil, fmt.Errorf("image %s: the layout %s holds %s, not that digest (rebuild the chart package and the image together)", il.Ref, il.Dir, l.Digest)
		}
		img, err := l.Image(ociimage.Platform{OS: "linux", Arch: runtime.GOARCH})
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		if len(cf.Config.Entrypoint) == 0 || !filepath.IsAbs(cf.Config.Entrypoint[0]) {
			return nil, fmt.Errorf("image %s: entrypoint %v is not an absolute path", il.Ref, cf.Config.Entrypoint)
		}
		rootfs := filepath.Join(stateDir, "images", l.Digest.Hex, "rootfs")
		if err := os.RemoveAll(rootfs); err != nil {
			return nil, err
		}
		if err := ociimage.Extract(img, rootfs); err != nil {
			return nil, fmt.Errorf("image %s: %w", il.Ref, err)
		}
		images[il.Ref] = nodeagent.Image{Binary: filepath.Join(rootfs, cf.Config.Entrypoint[0]), Entrypoint: cf.Config.Entrypoint}
	}
	return images, nil
}
