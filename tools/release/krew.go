package release

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/tools/release/ociimage"
)

// KrewPlugin is a krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2).
type KrewPlugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   KrewMetadata   `json:"metadata"`
	Spec       KrewPluginSpec `json:"spec"`
}

// KrewMetadata names the plugin (kubectl dgdr).
type KrewMetadata struct {
	Name string `json:"name"`
}

// KrewPluginSpec is the plugin's versioned description and its per-platform archives.
type KrewPluginSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []KrewPlatform `json:"platforms"`
}

// KrewPlatform is one archive: where it is, its checksum, and the executable in it.
type KrewPlatform struct {
	Selector KrewSelector `json:"selector"`
	URI      string       `json:"uri"`
	SHA256   string       `json:"sha256"`
	Bin      string       `json:"bin"`
}

// KrewSelector selects a platform by krew's os and arch labels.
type KrewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// CLIArchive is a dgdrctl archive of the release.
type CLIArchive struct {
	Platform ociimage.Platform
	// Name is the archive's file name under the release's download URL.
	Name string
	// SHA256 is its hex checksum.
	SHA256 string
}

// CLIArchiveName is the archive name of dgdrctl for a platform.
func CLIArchiveName(version string, p ociimage.Platform) string {
	return fmt.Sprintf("dgdrctl_%s_%s_%s.tar.gz", version, p.OS, p.Arch)
}

// KrewManifest is the `kubectl dgdr` plugin manifest of a release whose archives are under
// downloadURL.
func KrewManifest(version, homepage, downloadURL string, archives []CLIArchive) ([]byte, error) {
	p := KrewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   KrewMetadata{Name: "dgdr"},
		Spec: KrewPluginSpec{
			Version:          version,
			Homepage:         homepage,
			ShortDescription: "Search for NVIDIA Dynamo deployments of an LLM",
			Description: "kubectl dgdr works with DynamoGraphDeploymentRequests of the dgdr-operator: validate and\n" +
				"lower a request offline, follow its search, rank its candidates, promote one, and browse\n" +
				"the results (kubectl dgdr ui).\n",
		},
	}
	for _, a := range archives {
		if len(a.SHA256) != 64 {
			return nil, fmt.Errorf("%s: sha256 %q is not a hex sha256", a.Name, a.SHA256)
		}
		p.Spec.Platforms = append(p.Spec.Platforms, KrewPlatform{
			Selector: KrewSelector{MatchLabels: map[string]string{"os": a.Platform.OS, "arch": a.Platform.Arch}},
			URI:      downloadURL + "/" + a.Name,
			SHA256:   a.SHA256,
			Bin:      "dgdrctl",
		})
	}
	return yaml.Marshal(p)
}
