// Package hostile is a hostile search for the attack suite (test/attack): the sandbox maps the
// image HostileSearchImage to `dgdr-sandbox hostile-search`, which takes the search
// container's arguments (--output-dir ...) and writes output that breaks the output contract
// (internal/jobcontract), then exits 0 as a successful search would. docs/operate/security.md.
package hostile

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Attacks are the values of --attack.
const (
	// AttackHugeResult writes a 1 GiB recommendation.json (a valid JSON start, then the file is
	// extended to 1 GiB; the extension is sparse so the sandbox's disk is not filled, but reading
	// the file yields 1 GiB like any other file of that size).
	AttackHugeResult = "huge-result"
	// AttackDevZero makes recommendation.json a symbolic link to /dev/zero.
	AttackDevZero = "dev-zero"
)

// HugeResultBytes is the size of the result AttackHugeResult writes.
const HugeResultBytes = 1 << 30

// Search runs the hostile search with the search container's arguments and returns its exit
// code.
func Search(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("hostile-search", flag.ContinueOnError)
	fs.SetOutput(stderr)
	outDir := fs.String("output-dir", "", "the search's output directory")
	attack := fs.String("attack", "", strings.Join([]string{AttackHugeResult, AttackDevZero}, " or "))
	_ = fs.String("config", "", "ignored")
	_ = fs.String("format", "", "ignored")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := write(*outDir, *attack); err != nil {
		fmt.Fprintln(stderr, "hostile-search:", err)
		return 1
	}
	fmt.Fprintf(stderr, "hostile-search: wrote the %s attack into %s\n", *attack, *outDir)
	return 0
}

func write(dir, attack string) error {
	if dir == "" {
		return errors.New("--output-dir is required")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A plausible ledger (AISimulate's format, output.Event): the requested budget of one trial,
	// and that trial's record.
	events := `{"event":"requested_config","value":{"optimizer":{"max_trials":1}}}` + "\n" +
		`{"event":"candidate_completed","value":{"candidate_id":"candidate-000001","status":"failed","reason_category":"unknown","config":{},"used_gpus":1,"score":null}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, output.EventsFile), []byte(events), 0o644); err != nil {
		return err
	}
	path := filepath.Join(dir, output.RecommendationFile)
	switch attack {
	case AttackHugeResult:
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		_, werr := f.WriteString(`{"schema_version":"1.1","candidate_retention":"all","candidates":[` + strings.Repeat(" ", 1<<20))
		return errors.Join(werr, f.Truncate(HugeResultBytes), f.Close())
	case AttackDevZero:
		return os.Symlink("/dev/zero", path)
	default:
		return fmt.Errorf("unknown --attack %q", attack)
	}
}
