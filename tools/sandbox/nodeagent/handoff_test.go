package nodeagent

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A file an init container leaves in an emptyDir for another container names mounted paths as
// the containers see them; the sandbox rewrites them to the host directories. Binary files are
// left alone.
func TestRewriteHandoffs(t *testing.T) {
	dir := t.TempDir()
	r := &podRunner{dir: dir, mounts: []mapping{{from: "/var/run/dgdr/trace", to: filepath.Join(dir, "volumes", "trace")}}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "input", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "trace", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
	}}}
	in := filepath.Join(dir, "volumes", "input")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	text := "traffic:\n  source: {type: trace, paths: [/var/run/dgdr/trace/trace.jsonl]}\n"
	binary := []byte{0xff, 0xfe, '/', 'v', 'a', 'r'}
	_ = os.WriteFile(filepath.Join(in, "input.yaml"), []byte(text), 0o644)
	_ = os.WriteFile(filepath.Join(in, "blob"), binary, 0o644)
	if err := r.rewriteHandoffs(pod); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(in, "input.yaml"))
	if want := "traffic:\n  source: {type: trace, paths: [" + filepath.Join(dir, "volumes", "trace") + "/trace.jsonl]}\n"; string(got) != want {
		t.Errorf("input.yaml:\n%s\nwant:\n%s", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(in, "blob")); string(b) != string(binary) {
		t.Error("a binary file was rewritten")
	}
}
