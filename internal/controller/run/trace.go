package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"path"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/jobcache"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/podstart"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
)

// The trace source is read once per search start, by name, around the cache (ConfigMaps and
// claims of tenants are not cached):
// +kubebuilder:rbac:groups="",resources=configmaps;persistentvolumeclaims,verbs=get

// checkTraceSource finds the Run's trace source before its Job is created and records what it
// found in status.aisimulate.trace. A missing ConfigMap, key or claim ends the Run (returned
// Completion) instead of leaving a pod stuck in ContainerCreating until the deadline.
func (r *Reconciler) checkTraceSource(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) (*Completion, error) {
	w := searchedSpec(run).Workload
	if w == nil || w.Trace == nil {
		return nil, nil
	}
	missing := func(format string, args ...any) *Completion {
		return &Completion{Reason: v1beta2.ReasonTraceSourceMissing, Message: fmt.Sprintf(format, args...) +
			"; create it (or fix spec.workload.trace.source) and edit the request to search again"}
	}
	status := &v1beta2.TraceSourceStatus{}
	src := w.Trace.Source
	if src == nil {
		return missing("spec.workload.trace.source is not set"), nil
	}
	switch {
	case src.ConfigMap != nil:
		var cm corev1.ConfigMap
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: src.ConfigMap.Name}, &cm)
		if apierrors.IsNotFound(err) {
			return missing("the trace ConfigMap %s/%s does not exist", run.Namespace, src.ConfigMap.Name), nil
		}
		if err != nil {
			return nil, err
		}
		var content []byte
		if v, ok := cm.Data[src.ConfigMap.Key]; ok {
			content = []byte(v)
		} else if b, ok := cm.BinaryData[src.ConfigMap.Key]; ok {
			content = b
		} else {
			return missing("the trace ConfigMap %s/%s has no key %q", run.Namespace, cm.Name, src.ConfigMap.Key), nil
		}
		sum := sha256.Sum256(content)
		status.ConfigMap = &v1beta2.TraceConfigMapStatus{Name: cm.Name, Key: src.ConfigMap.Key,
			ResourceVersion: cm.ResourceVersion, SHA256: "sha256:" + hex.EncodeToString(sum[:])}
	case src.PVC != nil:
		var pvc corev1.PersistentVolumeClaim
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: src.PVC.ClaimName}, &pvc)
		if apierrors.IsNotFound(err) {
			return missing("the trace PersistentVolumeClaim %s/%s does not exist", run.Namespace, src.PVC.ClaimName), nil
		}
		if err != nil {
			return nil, err
		}
		if end, ok := research.WindowEnd(run); ok {
			status.Window = &v1beta2.TraceWindowStatus{ClaimName: pvc.Name,
				Start: ptr.To(metav1.NewTime(end.Add(-research.Window(&run.Spec)))), End: ptr.To(metav1.NewTime(end))}
			if old := run.Status.AISimulate; old != nil && old.Trace != nil && old.Trace.Window != nil {
				status.Window = old.Trace.Window.DeepCopy()
			}
		} else {
			status.PVC = src.PVC.DeepCopy()
		}
	}
	if run.Status.AISimulate != nil {
		run.Status.AISimulate.Trace = status
	}
	return nil, nil
}

// TraceWindowVolumeLimit is the sizeLimit of a re-search's trace volume: the largest window file
// (requesttrace.DefaultMaxWindowBytes uncompressed, which its gzip stream exceeds by well under
// 1%), with room for the file system's own blocks.
const TraceWindowVolumeLimit = requesttrace.DefaultMaxWindowBytes + 16<<20

// traceMount returns the search pod's trace volume and the search container's read-only mount
// of it at aisimulate.TraceMountDir (nothing without a trace).
func traceMount(run *v1beta2.DynamoGraphDeploymentRun) ([]corev1.Volume, []corev1.VolumeMount) {
	w := searchedSpec(run).Workload
	if w == nil || w.Trace == nil {
		return nil, nil
	}
	vol := corev1.Volume{Name: jobcontract.TraceVolume}
	src := w.Trace.Source
	if src == nil {
		return nil, nil
	}
	switch {
	case research.IsRun(run):
		// The input container writes the window here (windowCut); the claim itself is never
		// mounted into the search. The window is bounded, and so is the volume: whatever writes
		// past the bound gets the pod evicted, not the node's disk filled.
		vol.EmptyDir = &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(TraceWindowVolumeLimit, resource.BinarySI)}
	case src.ConfigMap != nil:
		vol.ConfigMap = &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: src.ConfigMap.Name},
			Items:                []corev1.KeyToPath{{Key: src.ConfigMap.Key, Path: aisimulate.TraceConfigMapFile}},
		}
	case src.PVC != nil:
		vol.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.PVC.ClaimName, ReadOnly: true}
	default:
		return nil, nil
	}
	return []corev1.Volume{vol}, []corev1.VolumeMount{{Name: jobcontract.TraceVolume, MountPath: aisimulate.TraceMountDir, ReadOnly: true}}
}

// windowCut returns, for a re-search Run, the capture claim's volume and the input container's
// window arguments and mounts: the claim read-only at jobcontract.CaptureMountDir, the trace
// volume writable at aisimulate.TraceMountDir. Nil for other Runs.
func windowCut(run *v1beta2.DynamoGraphDeploymentRun) (*corev1.Volume, []string, []corev1.VolumeMount) {
	end, ok := research.WindowEnd(run)
	d := run.Spec.Deployment
	if !ok || d == nil || d.Capture == nil || d.Capture.ClaimName == "" {
		return nil, nil, nil
	}
	start := end.Add(-research.Window(&run.Spec))
	// The age bound makes the cut delete old segments: then, and only then, the claim is writable.
	var pruneBefore *time.Time
	if r := d.Capture.Rotation; r != nil && r.MaxAgeHours != nil {
		t := end.Add(-time.Duration(*r.MaxAgeHours) * time.Hour)
		pruneBefore = &t
	}
	vol, args, mounts := cutFrom(run, d.Capture.ClaimName, start, end, pruneBefore == nil,
		"--trace-window-min-requests", strconv.Itoa(int(research.MinRequests(&run.Spec))))
	if pruneBefore != nil {
		args = append(args, "--trace-prune-before", pruneBefore.UTC().Format(time.RFC3339))
	}
	return vol, args, mounts
}

// windowRecut is windowCut for a re-search's baseline Job: the window the Run recorded, cut
// again from the claim, read-only (the search's cut pruned what was to prune), and checked
// against the hash of the search's cut, so the baseline replays the traffic the search
// replayed. Nil while the search's input container has not reported its window.
func windowRecut(run *v1beta2.DynamoGraphDeploymentRun) (*corev1.Volume, []string, []corev1.VolumeMount) {
	w := recordedWindow(run)
	if w == nil || w.SHA256 == "" || w.Start == nil || w.End == nil {
		return nil, nil, nil
	}
	return cutFrom(run, w.ClaimName, w.Start.Time, w.End.Time, true, "--trace-window-sha256", w.SHA256)
}

// recordedWindow is the window status.aisimulate.trace.window records, or nil.
func recordedWindow(run *v1beta2.DynamoGraphDeploymentRun) *v1beta2.TraceWindowStatus {
	if a := run.Status.AISimulate; a != nil && a.Trace != nil {
		return a.Trace.Window
	}
	return nil
}

// cutFrom is the capture claim's volume, the input container's arguments cutting [start, end)
// from the run's request's directory of it into the trace volume (with check, the arguments
// checking the cut), and its mounts. The Frontend pods of a request write only under its
// directory (render.CaptureDirectory), so requests sharing a claim neither read nor prune each
// other's segments.
func cutFrom(run *v1beta2.DynamoGraphDeploymentRun, claim string, start, end time.Time, readOnly bool, check ...string) (*corev1.Volume, []string, []corev1.VolumeMount) {
	vol := &corev1.Volume{Name: jobcontract.CaptureVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
		ClaimName: claim, ReadOnly: readOnly}}}
	args := []string{
		"--trace-window-source", jobcontract.CaptureMountDir,
		"--trace-window-directory", render.CaptureDirectory(run.Labels[v1beta2.LabelRequestUID]),
		"--trace-window-start", start.UTC().Format(time.RFC3339),
		"--trace-window-end", end.UTC().Format(time.RFC3339),
		"--trace-window-out", path.Join(aisimulate.TraceMountDir, jobcontract.TraceWindowFile),
	}
	// The window's report is the container's termination message (the Run controller reads it).
	args = append(append(args, check...), "--termination-log", corev1.TerminationMessagePathDefault)
	mounts := []corev1.VolumeMount{
		{Name: jobcontract.CaptureVolume, MountPath: jobcontract.CaptureMountDir, ReadOnly: readOnly},
		{Name: jobcontract.TraceVolume, MountPath: aisimulate.TraceMountDir},
	}
	return vol, args, mounts
}

// recordWindow copies what a re-search's input container found in its window (its termination
// message) into status.aisimulate.trace.window, once, and returns the Run's Completion when the
// window held too little traffic to search, or could not be cut.
func (r *Reconciler) recordWindow(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, job *batchv1.Job) (*Completion, error) {
	a := run.Status.AISimulate
	if a == nil || a.Trace == nil || a.Trace.Window == nil || a.Trace.Window.Requests != nil {
		return nil, nil
	}
	pods, err := podstart.Pods(ctx, r.Client, job)
	if err == nil && inputTermination(pods) == nil && jobcache.Finished(job) != nil {
		// The cache holds no pod that succeeded (jobcache): the report is on the API server's.
		pods, err = podstart.Pods(ctx, r.APIReader, job)
	}
	if err != nil {
		return nil, err
	}
	// A refused window fails the input container: that is not a start failure.
	if c := windowRejected(pods); c != nil {
		return c, nil
	}
	sum, code := WindowReport(pods)
	if sum == nil {
		return nil, nil
	}
	w := a.Trace.Window
	w.Requests = ptr.To(int64(sum.Requests))
	w.SHA256 = "sha256:" + sum.SHA256
	w.Segments = int32(min(sum.Segments, math.MaxInt32))
	w.Pods = int32(min(sum.Pods, math.MaxInt32))
	w.SkippedSegments = int32(min(sum.SkippedSegments, math.MaxInt32))
	w.SkippedDirectories = int32(min(sum.SkippedDirectories, math.MaxInt32))
	w.SkippedLines = int64(sum.SkippedLines)
	if code == jobcontract.InputExitInsufficientTraffic {
		return insufficientTraffic(sum), nil
	}
	return nil, nil
}
