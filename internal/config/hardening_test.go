package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

// TestSearchPodHardeningDefaults: the search pod's identity, volume limits and start-failure
// grace have documented defaults (docs/operate/operator.md, docs/operate/security.md).
func TestSearchPodHardeningDefaults(t *testing.T) {
	cfg, err := config.Decode([]byte(header + "planner: {image: example.com/planner:1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	j := cfg.Job
	got := map[string]any{"output": j.OutputSizeLimit.String(), "tmp": j.TmpSizeLimit.String(), "uid": *j.RunAsUser,
		"gid": *j.RunAsGroup, "fsGroup": *j.FSGroup, "grace": *j.StartFailureGraceSeconds}
	want := map[string]any{"output": "256Mi", "tmp": "1Gi", "uid": int64(65532), "gid": int64(65532), "fsGroup": int64(65532), "grace": int32(120)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestSearchPodHardeningValidation(t *testing.T) {
	for _, tc := range []struct{ job, wantInError string }{
		{"runAsUser: 0", "job.runAsUser"},
		{"runAsGroup: -1", "job.runAsGroup"},
		{"fsGroup: -1", "job.fsGroup"},
		{"outputSizeLimit: 0", "job.outputSizeLimit"},
		{"tmpSizeLimit: -1Gi", "job.tmpSizeLimit"},
		{"startFailureGraceSeconds: 0", "job.startFailureGraceSeconds"},
		{"baselineDeadlineSeconds: 0", "job.baselineDeadlineSeconds"},
	} {
		t.Run(tc.job, func(t *testing.T) {
			_, err := config.Decode([]byte(header + "planner: {image: x}\njob: {" + tc.job + "}\n"))
			if err == nil || !strings.Contains(err.Error(), tc.wantInError) {
				t.Fatalf("err = %v, want one naming %s", err, tc.wantInError)
			}
		})
	}
	if _, err := config.Decode([]byte(header + "planner: {image: x}\njob: {runAsUser: 1000, runAsGroup: 0, outputSizeLimit: 64Mi, startFailureGraceSeconds: 30}\n")); err != nil {
		t.Errorf("a valid configuration: %v", err)
	}
}
