package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// monotone polls the tail and fails when an error occurs or a progress field went down.
type monotone struct {
	t    *testing.T
	tl   *Tail
	last v1beta2.RunProgress
}

func (m *monotone) poll() v1beta2.RunProgress {
	m.t.Helper()
	if err := m.tl.Poll(); err != nil {
		m.t.Fatal(err)
	}
	p := m.tl.tally.Progress()
	if p.Budget < m.last.Budget || p.Settled < m.last.Settled || p.Feasible < m.last.Feasible || p.Infeasible < m.last.Infeasible ||
		p.Failed < m.last.Failed || p.TimedOut < m.last.TimedOut || p.Unsupported < m.last.Unsupported {
		m.t.Fatalf("progress went backwards: %+v after %+v", p, m.last)
	}
	m.last = p
	return p
}

func bestIDs(tl *Tail) []string {
	var ids []string
	for _, c := range tl.tally.Best.List() {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestTailReadsTheRealLedger feeds the real AISimulate's ledger to the tail as a search writes
// it, a half-written line included: the budget comes from requested_config, each
// candidate_completed settles one candidate, wave_admitted is skipped, and the best feasible
// candidates so far are the ones recommendation.json would rank first.
func TestTailReadsTheRealLedger(t *testing.T) {
	lines := outputtest.RealLedger(t)
	dir := t.TempDir()
	ledger := filepath.Join(dir, output.EventsFile)
	tl := NewTail(dir, "", candidates.BestSoFar{Limit: 3})
	m := &monotone{t: t, tl: tl}
	if p := m.poll(); p != (v1beta2.RunProgress{}) {
		t.Errorf("before the ledger exists: %+v", p)
	}
	settled := 0
	for i, l := range lines {
		if i == 7 {
			// Half a line: nothing of it counts until its newline arrives.
			outputtest.Append(t, ledger, l[:len(l)/2])
			if p := m.poll(); p.Settled != int64(settled) {
				t.Errorf("half of line %d: settled %d, want %d", i+1, p.Settled, settled)
			}
			outputtest.Append(t, ledger, l[len(l)/2:])
		} else {
			outputtest.Append(t, ledger, l)
		}
		if strings.Contains(l, `"candidate_completed"`) {
			settled++
		}
		p := m.poll()
		want := v1beta2.RunProgress{Budget: 48, Settled: int64(settled), Feasible: int64(settled)}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("after line %d (-want +got):\n%s", i+1, diff)
		}
	}
	if diff := cmp.Diff([]string{"candidate-000004", "candidate-000003", "candidate-000001"}, bestIDs(tl)); diff != "" {
		t.Errorf("best so far (-want +got):\n%s", diff)
	}
	best := tl.tally.Best.List()[0]
	if *best.Record.Score != 3260.8098732350354 || best.Record.UsedGPUs != 4 || best.Record.Metrics["output_throughput_tok_s"] != *best.Record.Score ||
		!strings.Contains(best.Config, `"mode":"aggregated"`) || best.Record.Status != output.StatusFeasible {
		t.Errorf("best candidate %+v", best)
	}
	if len(tl.tally.ReasonCounts()) != 0 {
		t.Errorf("not-feasible reasons %v of an all-feasible ledger", tl.tally.ReasonCounts())
	}
}

// TestTailFollowsTheLiveMonitor plays the real AISimulate's supervisor: the search appends its
// ledger to $TMPDIR/aisimulate-monitor-XXXX/events.jsonl; when the workers stop, the supervisor
// copies the complete lines into the output directory and deletes the monitor directory. The
// tail follows the monitor, goes on with the output copy after what it applied, never counts a
// candidate twice, and progress never goes backwards.
func TestTailFollowsTheLiveMonitor(t *testing.T) {
	lines := outputtest.RealLedger(t)
	out, tmp := t.TempDir(), t.TempDir()
	// The search's tmp holds other things too.
	for _, d := range []string{"aisimulate-wave-k2j4x_1q", "aisimulate-execution-ab12cd34", "pymp-xyz"} {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	outputtest.Append(t, filepath.Join(tmp, "aisimulate-monitor-notes.txt.bak"), "x") // not a monitor's name
	monitorDir := filepath.Join(tmp, "aisimulate-monitor-3h_9zk0p")
	monitor := filepath.Join(monitorDir, "events.jsonl")
	copyPath := filepath.Join(out, output.EventsFile)
	tl := NewTail(out, tmp, candidates.BestSoFar{Limit: 3})
	m := &monotone{t: t, tl: tl}

	// The monitor directory exists before its ledger.
	if err := os.Mkdir(monitorDir, 0o700); err != nil {
		t.Fatal(err)
	}
	m.poll()
	// Lines 1-9 (three candidates), then half of line 10.
	outputtest.Append(t, monitor, strings.Join(lines[:5], ""))
	if p := m.poll(); p.Settled != 2 || p.Budget != 48 || tl.monitor != "aisimulate-monitor-3h_9zk0p" {
		t.Fatalf("following the monitor: %+v (monitor %q)", p, tl.monitor)
	}
	outputtest.Append(t, monitor, strings.Join(lines[5:9], "")+lines[9][:100])
	if p := m.poll(); p.Settled != 4 {
		t.Fatalf("after 4 candidates and half a line: %+v", p)
	}
	// The supervisor starts copying while the monitor still exists: the tail stays on the monitor.
	outputtest.Append(t, copyPath, strings.Join(lines[:3], ""))
	if p := m.poll(); p.Settled != 4 || tl.final {
		t.Fatalf("while the copy is written: %+v, final %v", p, tl.final)
	}
	// Between two polls the search completes its line and writes the last candidate, the
	// supervisor copies everything and deletes the monitor.
	outputtest.Append(t, monitor, lines[9][100:]+lines[10])
	outputtest.Append(t, copyPath, strings.Join(lines[3:], ""))
	if err := os.RemoveAll(monitorDir); err != nil {
		t.Fatal(err)
	}
	p := m.poll()
	if !tl.final || tl.verify {
		t.Fatalf("after the monitor went: final %v verify %v", tl.final, tl.verify)
	}
	if diff := cmp.Diff(v1beta2.RunProgress{Budget: 48, Settled: 5, Feasible: 5}, p); diff != "" {
		t.Errorf("after the switch to the output copy (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"candidate-000004", "candidate-000003", "candidate-000001"}, bestIDs(tl)); diff != "" {
		t.Errorf("best so far (-want +got):\n%s", diff)
	}
	for range 3 {
		if p := m.poll(); p.Settled != 5 {
			t.Errorf("polling the finished copy again: %+v", p)
		}
	}
	// A monitor appearing later is not followed any more.
	outputtest.Append(t, filepath.Join(tmp, "aisimulate-monitor-late0000", "events.jsonl"), strings.Join(lines, ""))
	if p := m.poll(); p.Settled != 5 {
		t.Errorf("a second monitor was counted: %+v", p)
	}
}

// TestTailSearchKilledMidLine: the worker is killed in the middle of a line; the supervisor copies
// only the complete lines. The half line was never counted, and is not after the switch either.
func TestTailSearchKilledMidLine(t *testing.T) {
	lines := outputtest.RealLedger(t)
	out, tmp := t.TempDir(), t.TempDir()
	monitorDir := filepath.Join(tmp, "aisimulate-monitor-abcdefgh")
	tl := NewTail(out, tmp, candidates.BestSoFar{})
	m := &monotone{t: t, tl: tl}
	outputtest.Append(t, filepath.Join(monitorDir, "events.jsonl"), strings.Join(lines[:6], "")+lines[6][:50])
	if p := m.poll(); p.Settled != 2 {
		t.Fatalf("%+v", p)
	}
	outputtest.Append(t, filepath.Join(out, output.EventsFile), strings.Join(lines[:6], ""))
	if err := os.RemoveAll(monitorDir); err != nil {
		t.Fatal(err)
	}
	if p := m.poll(); p.Settled != 2 || !tl.final || tl.applied != tl.offset {
		t.Errorf("after the switch: %+v (applied %d offset %d)", p, tl.applied, tl.offset)
	}
}

// TestTailOutputCopyThatDiffers: when the output copy does not start with the bytes applied from
// the monitor (a search that writes something else), it is read from its start with the progress
// shown as the floor: nothing goes backwards and nothing is counted twice.
func TestTailOutputCopyThatDiffers(t *testing.T) {
	lines := outputtest.RealLedger(t)
	out, tmp := t.TempDir(), t.TempDir()
	monitorDir := filepath.Join(tmp, "aisimulate-monitor-abcdefgh")
	tl := NewTail(out, tmp, candidates.BestSoFar{Limit: 5})
	m := &monotone{t: t, tl: tl}
	outputtest.Append(t, filepath.Join(monitorDir, "events.jsonl"), strings.Join(lines[:7], ""))
	if p := m.poll(); p.Settled != 3 {
		t.Fatalf("%+v", p)
	}
	// The copy holds candidates 1, 2, 4 and 5 (not 3), and wave lines are gone.
	copyPath := filepath.Join(out, output.EventsFile)
	outputtest.Append(t, copyPath, lines[0]+lines[2]+lines[4])
	if err := os.RemoveAll(monitorDir); err != nil {
		t.Fatal(err)
	}
	if p := m.poll(); p.Settled != 3 || p.Feasible != 3 {
		t.Errorf("a differing copy with 2 candidates: %+v, want the floor of 3", p)
	}
	outputtest.Append(t, copyPath, lines[8]+lines[10])
	if p := m.poll(); p.Settled != 4 || p.Feasible != 4 || p.Budget != 48 {
		t.Errorf("the differing copy with 4 candidates: %+v, want 4 (not 3 + 4)", p)
	}
	// Every candidate either copy named is in the ranking once.
	if diff := cmp.Diff([]string{"candidate-000004", "candidate-000003", "candidate-000001", "candidate-000005", "candidate-000002"}, bestIDs(tl)); diff != "" {
		t.Errorf("best so far (-want +got):\n%s", diff)
	}
	// A rewritten (shrunk) copy is read again, still above the floor.
	if err := os.WriteFile(copyPath, []byte(lines[0]+lines[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := m.poll(); p.Settled != 4 {
		t.Errorf("a shrunk copy: %+v", p)
	}
}

// TestTailAisimHasNoMonitor: aisim writes the output copy live; a tmp directory without a monitor
// changes nothing.
func TestTailAisimHasNoMonitor(t *testing.T) {
	lines := outputtest.RealLedger(t)
	out, tmp := t.TempDir(), t.TempDir()
	tl := NewTail(out, tmp, candidates.BestSoFar{})
	m := &monotone{t: t, tl: tl}
	m.poll()
	outputtest.Append(t, filepath.Join(out, output.EventsFile), strings.Join(lines[:5], ""))
	if p := m.poll(); p.Settled != 2 || !tl.final {
		t.Fatalf("%+v final %v", p, tl.final)
	}
	outputtest.Append(t, filepath.Join(out, output.EventsFile), strings.Join(lines[5:], ""))
	if p := m.poll(); p.Settled != 5 {
		t.Fatalf("%+v", p)
	}
	// A search tmp that is not mounted is no error either.
	tl = NewTail(out, filepath.Join(tmp, "absent"), candidates.BestSoFar{})
	if err := tl.Poll(); err != nil || tl.tally.Progress().Settled != 5 {
		t.Errorf("without the search tmp: %v, %+v", err, tl.tally.Progress())
	}
}

// TestTailHostileMonitor: the search's tmp is untrusted like its output. A monitor directory or
// ledger that is a symbolic link, not a directory, not a regular file, or over a cap rejects the
// output; a tmp with several monitors, or monitors not named like AISimulate's, is not followed.
func TestTailHostileMonitor(t *testing.T) {
	lines := outputtest.RealLedger(t)
	const mon = "aisimulate-monitor-abcdefgh"
	valid := func(t *testing.T, dir string) {
		outputtest.Append(t, filepath.Join(dir, "events.jsonl"), strings.Join(lines, ""))
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, tmp string)
		want  string // "": not followed, no error
	}{
		{"the monitor directory is a link", func(t *testing.T, tmp string) {
			real := filepath.Join(t.TempDir(), "real")
			valid(t, real)
			if err := os.Symlink(real, filepath.Join(tmp, mon)); err != nil {
				t.Fatal(err)
			}
		}, "/tmp/" + mon + " is a symbolic link (refused)"},
		{"the monitor is a file", func(t *testing.T, tmp string) {
			outputtest.Append(t, filepath.Join(tmp, mon), strings.Join(lines, ""))
		}, "/tmp/" + mon + " is not a directory"},
		{"the ledger links to /dev/zero", func(t *testing.T, tmp string) {
			if err := os.Mkdir(filepath.Join(tmp, mon), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/dev/zero", filepath.Join(tmp, mon, "events.jsonl")); err != nil {
				t.Fatal(err)
			}
		}, "/tmp/" + mon + "/events.jsonl is a symbolic link (refused)"},
		{"the ledger is a FIFO", func(t *testing.T, tmp string) {
			if err := os.Mkdir(filepath.Join(tmp, mon), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(tmp, mon, "events.jsonl"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "/tmp/" + mon + "/events.jsonl is not a regular file"},
		{"the ledger is a directory", func(t *testing.T, tmp string) {
			if err := os.MkdirAll(filepath.Join(tmp, mon, "events.jsonl"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "/tmp/" + mon + "/events.jsonl is not a regular file"},
		{"a 1 GiB ledger", func(t *testing.T, tmp string) {
			if err := os.Mkdir(filepath.Join(tmp, mon), 0o700); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(filepath.Join(tmp, mon, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(1 << 30); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
		}, "/tmp/" + mon + "/events.jsonl is 1073741824 bytes, over the reporter's cap of 64 MiB"},
		{"a line over the cap", func(t *testing.T, tmp string) {
			outputtest.Append(t, filepath.Join(tmp, mon, "events.jsonl"), lines[0]+strings.Repeat("x", int(searchoutput.MaxEventLineBytes)+1))
		}, "/tmp/" + mon + "/events.jsonl has a line longer than the reporter's cap of 1 MiB"},
		{"two monitors", func(t *testing.T, tmp string) {
			valid(t, filepath.Join(tmp, mon))
			valid(t, filepath.Join(tmp, "aisimulate-monitor-zzzzzzzz"))
		}, ""},
		{"names AISimulate does not use", func(t *testing.T, tmp string) {
			valid(t, filepath.Join(tmp, "aisimulate-monitor-"))
			valid(t, filepath.Join(tmp, "aisimulate-monitor-a b"))
			valid(t, filepath.Join(tmp, "aisimulate-monitor-"+strings.Repeat("a", 65)))
			valid(t, filepath.Join(tmp, "x-aisimulate-monitor-abcdefgh"))
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, tmp := t.TempDir(), t.TempDir()
			tc.setup(t, tmp)
			tl := NewTail(out, tmp, candidates.BestSoFar{})
			err := tl.Poll()
			if tc.want == "" {
				if err != nil || tl.tally.Progress().Settled != 0 || tl.monitor != "" {
					t.Errorf("err %v, progress %+v, monitor %q: want nothing followed", err, tl.tally.Progress(), tl.monitor)
				}
				return
			}
			var rejected *searchoutput.RejectedError
			if !errors.As(err, &rejected) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an output rejection containing %q", err, tc.want)
			}
			if err := tl.Poll(); !errors.Is(err, rejected) {
				t.Errorf("the rejection does not stick: %v", err)
			}
		})
	}
}
