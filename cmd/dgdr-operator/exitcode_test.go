package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// TestExitCode: the reporter's output rejection leaves the process with the exit code the Run
// controller classifies as OutputRejected, also when wrapped; every other error exits 1.
func TestExitCode(t *testing.T) {
	rejected := &searchoutput.RejectedError{File: "recommendation.json", Problem: "is a symbolic link (refused)"}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{rejected, jobcontract.ReporterExitOutputRejected},
		{fmt.Errorf("publishing: %w", rejected), jobcontract.ReporterExitOutputRejected},
		{errors.New("forbidden"), jobcontract.ReporterExitFailed},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
