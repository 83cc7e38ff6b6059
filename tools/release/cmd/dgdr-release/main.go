// Command dgdr-release builds the release artifacts into a dist directory; the Makefile's
// images, cli, sbom, chart-package and release targets run it (see `make help`).
//
//	dgdr-release image   the operator image as an OCI layout (dist/oci/dgdr-operator) and its archive
//	dgdr-release cli     dgdrctl for linux and darwin, amd64 and arm64, as tar.gz archives
//	dgdr-release sbom    a CycloneDX SBOM per image platform and per dgdrctl binary
//	dgdr-release chart   the Helm chart packaged with image.digest pinned to the layout's image
//	dgdr-release krew    the kubectl dgdr krew manifest with the archives' checksums
//	dgdr-release sums    dist/SHA256SUMS over every artifact
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dgdr-operator/dgdr-operator/tools/release"
	"github.com/dgdr-operator/dgdr-operator/tools/release/ociimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "dgdr-release:", err)
		os.Exit(1)
	}
}

// flags shared by the subcommands.
type flags struct {
	root, dist, version, source, licenses, downloadURL string
	imagePlatforms, cliPlatforms                       []string
	caBundle, helm, chart, cyclonedx                   string
}

func (f *flags) layoutDir() string { return filepath.Join(f.dist, "oci", "dgdr-operator") }
func (f *flags) buildDir() string  { return filepath.Join(f.dist, "build") }

func (f *flags) stamp(ctx context.Context) (release.Stamp, error) {
	if err := release.CheckVersion(f.version); err != nil {
		return release.Stamp{}, err
	}
	return release.StampFromGit(ctx, f.root, f.version)
}

func platforms(ss []string) ([]ociimage.Platform, error) {
	var out []ociimage.Platform
	for _, s := range ss {
		p, err := ociimage.ParsePlatform(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func newRootCommand() *cobra.Command {
	f := &flags{}
	root := &cobra.Command{Use: "dgdr-release", Short: "Build the release artifacts of dgdr-operator", SilenceUsage: true, SilenceErrors: true}
	pf := root.PersistentFlags()
	pf.StringVar(&f.root, "root", ".", "the module's work tree")
	pf.StringVar(&f.dist, "dist", "dist", "output directory")
	pf.StringVar(&f.version, "version", "", "release version (v0.1.0)")
	pf.StringVar(&f.source, "source", "https://github.com/dgdr-operator/dgdr-operator", "repository URL (image source label, krew homepage)")
	pf.StringVar(&f.licenses, "licenses", "Apache-2.0", "SPDX license expression of the image label")
	pf.StringSliceVar(&f.imagePlatforms, "image-platforms", []string{"linux/amd64", "linux/arm64"}, "platforms of the operator image")
	pf.StringSliceVar(&f.cliPlatforms, "cli-platforms", []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}, "platforms of dgdrctl")
	pf.StringVar(&f.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA certificate bundle of the build machine, installed in the image")
	pf.StringVar(&f.helm, "helm", "bin/helm", "helm binary")
	pf.StringVar(&f.chart, "chart", "charts/dgdr-operator", "chart directory")
	pf.StringVar(&f.cyclonedx, "cyclonedx-gomod", "bin/cyclonedx-gomod", "cyclonedx-gomod binary")
	pf.StringVar(&f.downloadURL, "download-url", "", "URL of the release's assets (default: <source>/releases/download/<version>)")
	root.AddCommand(
		&cobra.Command{Use: "image", Short: "Build the operator image as an OCI layout and its archive", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return buildImage(cmd.Context(), f) }},
		&cobra.Command{Use: "cli", Short: "Build the dgdrctl archives", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return buildCLI(cmd.Context(), f) }},
		&cobra.Command{Use: "sbom", Short: "Write an SBOM per image platform and dgdrctl binary (after image and cli)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return writeSBOMs(cmd.Context(), f) }},
		&cobra.Command{Use: "chart", Short: "Package the chart pinned to the layout's image digest (after image)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return packageChart(cmd.Context(), f) }},
		&cobra.Command{Use: "krew", Short: "Write the krew plugin manifest (after cli)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return writeKrew(f) }},
		&cobra.Command{Use: "sums", Short: "Write SHA256SUMS over the artifacts", Args: cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error { return release.WriteChecksums(f.dist) }},
	)
	return root
}

func buildImage(ctx context.Context, f *flags) error {
	s, err := f.stamp(ctx)
	if err != nil {
		return err
	}
	ps, err := platforms(f.imagePlatforms)
	if err != nil {
		return err
	}
	digest, err := release.BuildImage(ctx, release.ImageOptions{Root: f.root, Stamp: s, Platforms: ps, CABundle: f.caBundle,
		Source: f.source, Licenses: f.licenses, Out: f.layoutDir(), BinDir: f.buildDir()})
	if err != nil {
		return err
	}
	files, err := release.DirFiles(f.layoutDir())
	if err != nil {
		return err
	}
	archive := filepath.Join(f.dist, fmt.Sprintf("dgdr-operator_%s_oci.tar", f.version))
	if err := release.WriteTar(archive, files, s.Date); err != nil {
		return err
	}
	fmt.Printf("image %s@%s in %s (%s)\n", f.version, digest, f.layoutDir(), archive)
	return nil
}

func buildCLI(ctx context.Context, f *flags) error {
	s, err := f.stamp(ctx)
	if err != nil {
		return err
	}
	ps, err := platforms(f.cliPlatforms)
	if err != nil {
		return err
	}
	for _, p := range ps {
		bin := filepath.Join(f.buildDir(), p.OS+"_"+p.Arch, "dgdrctl")
		if err := release.GoBuild(ctx, f.root, "./cmd/dgdrctl", p, bin, s); err != nil {
			return err
		}
		files, err := release.DirFiles(filepath.Dir(bin))
		if err != nil {
			return err
		}
		var keep []ociimage.File
		for _, file := range files {
			if file.Path == "dgdrctl" {
				keep = append(keep, file)
			}
		}
		archive := filepath.Join(f.dist, release.CLIArchiveName(f.version, p))
		if err := release.WriteTar(archive, keep, s.Date); err != nil {
			return err
		}
		fmt.Println("dgdrctl", p, archive)
	}
	return nil
}

func writeSBOMs(ctx context.Context, f *flags) error {
	s, err := f.stamp(ctx)
	if err != nil {
		return err
	}
	targets := map[string][]string{"dgdr-operator": f.imagePlatforms, "dgdrctl": f.cliPlatforms}
	for _, name := range []string{"dgdr-operator", "dgdrctl"} {
		ps, err := platforms(targets[name])
		if err != nil {
			return err
		}
		for _, p := range ps {
			bin := filepath.Join(f.buildDir(), p.OS+"_"+p.Arch, name)
			kind := "image"
			if name == "dgdrctl" {
				kind = "cli"
			}
			out := filepath.Join(f.dist, fmt.Sprintf("%s_%s_%s_%s.%s.cdx.json", name, f.version, p.OS, p.Arch, kind))
			if err := release.SBOM(ctx, f.cyclonedx, bin, f.version, out, s); err != nil {
				return fmt.Errorf("SBOM of %s: %w", bin, err)
			}
			fmt.Println("sbom", out)
		}
	}
	return nil
}

func packageChart(ctx context.Context, f *flags) error {
	if err := release.CheckVersion(f.version); err != nil {
		return err
	}
	l, err := ociimage.ReadLayout(f.layoutDir())
	if err != nil {
		return err
	}
	if l.Ref != f.version {
		return fmt.Errorf("the image in %s is %s, not %s: run the image step for this version first", f.layoutDir(), l.Ref, f.version)
	}
	pkg, err := release.PackageChart(ctx, f.helm, f.chart, f.version, l.Digest.String(), f.dist)
	if err != nil {
		return err
	}
	fmt.Printf("chart %s (image digest %s)\n", pkg, l.Digest)
	return nil
}

func writeKrew(f *flags) error {
	if err := release.CheckVersion(f.version); err != nil {
		return err
	}
	ps, err := platforms(f.cliPlatforms)
	if err != nil {
		return err
	}
	var archives []release.CLIArchive
	for _, p := range ps {
		name := release.CLIArchiveName(f.version, p)
		sum, err := release.SHA256File(filepath.Join(f.dist, name))
		if err != nil {
			return fmt.Errorf("%w (run the cli step first)", err)
		}
		archives = append(archives, release.CLIArchive{Platform: p, Name: name, SHA256: sum})
	}
	url := f.downloadURL
	if url == "" {
		url = strings.TrimSuffix(f.source, "/") + "/releases/download/" + f.version
	}
	b, err := release.KrewManifest(f.version, f.source, url, archives)
	if err != nil {
		return err
	}
	out := filepath.Join(f.dist, "dgdr.krew.yaml")
	fmt.Println("krew manifest", out)
	return os.WriteFile(out, b, 0o644)
}
