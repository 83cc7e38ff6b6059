package nodeagent

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// maxHandoffFile bounds the files rewriteHandoffs reads: configuration handed between
// containers is small.
const maxHandoffFile = 1 << 20

// rewriteHandoffs rewrites the container paths in the text files the init containers left in
// the pod's emptyDir volumes, as rewriteFiles does for ConfigMap volumes: a file written by one
// container for another (the search input naming the trace at its mount path) must name the
// host directories, since the sandbox's containers are processes on the host.
func (r *podRunner) rewriteHandoffs(pod *corev1.Pod) error {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.EmptyDir == nil {
			continue
		}
		err := filepath.WalkDir(r.volumeDir(v), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			info, err := d.Info()
			if err != nil || info.Size() > maxHandoffFile {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil || !utf8.Valid(b) {
				return err
			}
			if out := []byte(rewrite(string(b), r.mounts)); !bytes.Equal(out, b) {
				return os.WriteFile(path, out, info.Mode().Perm())
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
