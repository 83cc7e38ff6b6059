package release

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dgdr-operator/dgdr-operator/tools/release/ociimage"
)

// DirFiles are the regular files under dir as archive entries, relative to dir, with their
// modes' executable bit kept.
func DirFiles(dir string) ([]ociimage.File, error) {
	var files []ociimage.File
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		files = append(files, ociimage.File{Path: filepath.ToSlash(rel), Mode: mode, Data: data})
		return nil
	})
	return files, err
}

// WriteTar writes a deterministic tar (sorted, root-owned, fixed time) of files; gzipped when
// the name ends in .gz (a gzip header without name or time).
func WriteTar(path string, files []ociimage.File, mtime time.Time) error {
	b, err := ociimage.LayerTar(files, mtime)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if strings.HasSuffix(path, ".gz") {
		var gz bytes.Buffer
		w, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		b = gz.Bytes()
	}
	return os.WriteFile(path, b, 0o644)
}

// SHA256File is the hex sha256 of a file.
func SHA256File(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// WriteChecksums writes dir/SHA256SUMS (sha256sum's format, sorted by name) over every regular
// file directly in dir except SHA256SUMS itself.
func WriteChecksums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "SHA256SUMS" {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		sum, err := SHA256File(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}
