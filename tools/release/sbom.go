package release

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
)

// SBOM writes a CycloneDX JSON SBOM of a Go binary from its embedded build information (the
// main module and every linked module with its version and checksum, and the standard library)
// with cyclonedx-gomod. Its timestamp is the stamp's date, not the clock's, and it has no random
// serial number, so that the same binary gives the same SBOM.
func SBOM(ctx context.Context, cyclonedx, binary, version, out string, s Stamp) error {
	raw, err := run(ctx, "", nil, cyclonedx, "bin", "-json", "-std", "-noserial", "-notimestamp", "-version", version, binary)
	if err != nil {
		return err
	}
	b, err := stampSBOM(raw, s)
	if err != nil {
		return fmt.Errorf("SBOM of %s: %w", binary, err)
	}
	return os.WriteFile(out, b, 0o644)
}

// stampSBOM sets metadata.timestamp of a CycloneDX document to the stamp's date.
func stampSBOM(raw []byte, s Stamp) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc["bomFormat"] != "CycloneDX" {
		return nil, fmt.Errorf("not a CycloneDX document (bomFormat %v)", doc["bomFormat"])
	}
	meta, ok := doc["metadata"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no metadata")
	}
	meta["timestamp"] = s.DateString()
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
