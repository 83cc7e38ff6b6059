package searchoutput

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadsStayInTheCheckedDirectory: the search swaps the recommendations directory for a
// symbolic link to a directory of its choosing (here one holding another 0002.yaml) after the
// reader opened and checked it. Reads through the descriptor held (ReadCappedIn) still get the
// checked directory's file; a fresh open by path is refused as a symbolic link.
func TestReadsStayInTheCheckedDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "result")
	recs := filepath.Join(out, "recommendations")
	planted := filepath.Join(t.TempDir(), "planted")
	for dir, content := range map[string]string{recs: "checked", planted: "planted"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "0002.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := OpenSubdir(out, "recommendations")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()

	// The swap, between the check and the read.
	if err := os.Rename(recs, recs+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(planted, recs); err != nil {
		t.Fatal(err)
	}

	got, err := ReadCappedIn(dir, "0002.yaml", "recommendations/0002.yaml", 1<<20)
	if err != nil || string(got) != "checked" {
		t.Errorf("read through the checked directory: %q, %v; want %q", got, err, "checked")
	}
	if _, err := ReadCapped(filepath.Join(recs, "0002.yaml"), "recommendations/0002.yaml", 1<<20); !IsRejected(err) {
		t.Errorf("open by path through the swapped directory: err = %v, want it refused as a symbolic link", err)
	}
	if _, err := OpenSubdir(out, "recommendations"); !IsRejected(err) {
		t.Errorf("opening the swapped recommendations directory: err = %v, want it refused as a symbolic link", err)
	}
}
