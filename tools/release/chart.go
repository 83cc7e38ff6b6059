package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

var imageDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// PinDigest sets image.digest in a chart's values.yaml to digest, changing only that line
// (the comments helm-docs reads stay).
func PinDigest(values []byte, digest string) ([]byte, error) {
	if !imageDigest.MatchString(digest) {
		return nil, fmt.Errorf("image digest %q: want sha256:<64 hex>", digest)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	node := lookup(&doc, "image", "digest")
	if node == nil || node.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("values.yaml: image.digest: no such scalar to pin")
	}
	lines := strings.SplitAfter(string(values), "\n")
	i := node.Line - 1
	prefix := lines[i][:node.Column-1]
	end := "\n"
	if !strings.HasSuffix(lines[i], "\n") {
		end = ""
	}
	lines[i] = prefix + digest + end
	out := []byte(strings.Join(lines, ""))
	// The edit must mean what it says.
	var check struct {
		Image struct {
			Digest string `yaml:"digest"`
		} `yaml:"image"`
	}
	if err := yaml.Unmarshal(out, &check); err != nil || check.Image.Digest != digest {
		return nil, fmt.Errorf("values.yaml: pinning image.digest failed (read back %q, %v)", check.Image.Digest, err)
	}
	return out, nil
}

// lookup finds the value node at a path of mapping keys.
func lookup(n *yaml.Node, path ...string) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// ChartVersion is the chart's SemVer version of a release version: v0.1.0 → 0.1.0.
func ChartVersion(version string) string { return strings.TrimPrefix(version, "v") }

// PackageChart packages the chart at dir with helm into out: version and appVersion from the
// release version, image.digest pinned to digest. It returns the package's path.
func PackageChart(ctx context.Context, helm, dir, version, digest, out string) (string, error) {
	// helm runs in a temporary directory: relative paths would not resolve there.
	if strings.ContainsRune(helm, filepath.Separator) {
		var err error
		if helm, err = filepath.Abs(helm); err != nil {
			return "", err
		}
	}
	out, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "dgdr-chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, filepath.Base(dir))
	if err := os.CopyFS(staged, os.DirFS(dir)); err != nil {
		return "", err
	}
	valuesPath := filepath.Join(staged, "values.yaml")
	values, err := os.ReadFile(valuesPath)
	if err != nil {
		return "", err
	}
	if values, err = PinDigest(values, digest); err != nil {
		return "", err
	}
	if err := os.WriteFile(valuesPath, values, 0o644); err != nil {
		return "", err
	}
	home := filepath.Join(tmp, "helm")
	env := []string{"HELM_CACHE_HOME=" + home, "HELM_CONFIG_HOME=" + home, "HELM_DATA_HOME=" + home}
	if _, err := run(ctx, tmp, env, helm, "lint", staged); err != nil {
		return "", err
	}
	if _, err := run(ctx, tmp, env, helm, "package", staged, "--version", ChartVersion(version), "--app-version", version, "--destination", out); err != nil {
		return "", err
	}
	return filepath.Join(out, fmt.Sprintf("%s-%s.tgz", filepath.Base(dir), ChartVersion(version))), nil
}
