package release

import (
	"context"
	"strconv"
)

// SBOM writes a CycloneDX JSON SBOM of a Go binary from its embedded build information (the
// main module and every linked module with its version and checksum) with cyclonedx-gomod,
// whose timestamp is the stamp's date so that the same binary gives the same SBOM.
func SBOM(ctx context.Context, cyclonedx, binary, version, out string, s Stamp) error {
	env := []string{"SOURCE_DATE_EPOCH=" + strconv.FormatInt(s.Date.Unix(), 10)}
	_, err := run(ctx, "", env, cyclonedx, "bin", "-json", "-std", "-noserial", "-version", version, "-output", out, binary)
	return err
}
