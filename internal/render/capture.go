package render

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

// The request trace of the Dynamo Frontend (ai-dynamo 1.6.1, lib/llm/src/request_trace/config.rs
// and lib/llm/src/telemetry/jsonl_gz.rs). The sink, path and roll variables are spelt the way
// every release with the request trace reads them: 1.6.1 also reads newer spellings
// (DYN_REQUEST_TRACE_FILE_PATH, DYN_REQUEST_TRACE_FILE_ROLL_BYTES, sink "file"), which take
// precedence, so applyCapture removes any other request-trace variable from the Frontend.
const (
	// EnvRequestTrace is the master switch ("1").
	EnvRequestTrace = "DYN_REQUEST_TRACE"
	// EnvRequestTraceRecords selects the record kinds; request_end records carry lengths,
	// timings and prefix hashes only (request_payload would carry the request body).
	EnvRequestTraceRecords = "DYN_REQUEST_TRACE_RECORDS"
	// EnvRequestTraceSinks selects the sinks; jsonl_gz is the rotating gzip JSONL file sink
	// (the plain jsonl sink never rotates).
	EnvRequestTraceSinks = "DYN_REQUEST_TRACE_SINKS"
	// EnvRequestTraceOutputPath is the segments' path prefix: the sink writes
	// <prefix>.000000.jsonl.gz, <prefix>.000001.jsonl.gz, ..., continuing after the highest
	// index it finds when it starts.
	EnvRequestTraceOutputPath = "DYN_REQUEST_TRACE_OUTPUT_PATH"
	// EnvRequestTraceRollBytes is the uncompressed size at which the sink starts a new segment.
	EnvRequestTraceRollBytes = "DYN_REQUEST_TRACE_JSONL_GZ_ROLL_BYTES"
	// EnvCapturePod is the Frontend pod's name (downward API); the claim's directory of each pod
	// is named after it.
	EnvCapturePod = "DGDR_CAPTURE_POD"
)

// CaptureDirectory is a request's directory of a capture claim: the Frontend pods of every
// deployment rendered for the request write under it, one directory per pod, and its re-searches
// read and prune only it. It is the request's UID, which no other request has, so two requests
// naming one claim never meet in it.
func CaptureDirectory(requestUID string) string { return requestUID }

// Where the capture claim appears in the Frontend.
const (
	CaptureVolume    = "request-trace"
	CaptureMountPath = "/opt/dgdr/request-trace"
	// CaptureFilePrefix is the segments' prefix inside the pod's directory of the claim.
	CaptureFilePrefix = CaptureMountPath + "/request-trace"
)

// Values the renderer writes for the request trace.
const (
	captureRecords = "request_end"
	captureSink    = "jsonl_gz"
	mebibyte       = 1 << 20
)

// captureEnabled reports whether spec.deployment.capture is on with a claim.
func captureEnabled(d *v1beta2.DeploymentSpec) bool {
	return d != nil && d.Capture != nil && d.Capture.Enabled != nil && *d.Capture.Enabled && d.Capture.ClaimName != ""
}

// captureRollBytes is the segment size of the capture: rotation.maxSegmentMiB, else its default,
// which a Run admitted before capture existed never materialized.
func captureRollBytes(c *v1beta2.CaptureSpec) int64 {
	mib := int64(specdefaults.CaptureMaxSegmentMiB)
	if r := c.Rotation; r != nil && r.MaxSegmentMiB != nil && *r.MaxSegmentMiB > 0 {
		mib = int64(*r.MaxSegmentMiB)
	}
	return mib * mebibyte
}

// isRequestTraceEnv reports whether an env var configures the Frontend's request trace or its
// audit records (which older releases write through the same sinks, with the request body).
func isRequestTraceEnv(name string) bool {
	return strings.HasPrefix(name, "DYN_REQUEST_TRACE") || strings.HasPrefix(name, "DYN_AUDIT") || name == EnvCapturePod
}

// applyCapture makes the Frontend write request_end records to the capture claim: the claim as
// a volume, mounted read-write into main at CaptureMountPath with the pod's own directory of
// the request's directory of the claim as its subPath, and the request-trace variables. It runs after the pod template
// overrides so that what the Frontend records and where is the renderer's alone: an override's
// request-trace or audit variables, or a volume or mount of the same name or path, are
// replaced.
func applyCapture(c *dgdv1beta1.Component, capture *v1beta2.CaptureSpec, requestUID string) {
	spec := &c.PodTemplate.Spec
	i := slices.IndexFunc(spec.Containers, func(ct corev1.Container) bool { return ct.Name == dgdv1beta1.MainContainer })
	if i < 0 {
		return // every rendered component has main; overrides merge containers by name
	}
	main := &spec.Containers[i]
	main.Env = slices.DeleteFunc(main.Env, func(e corev1.EnvVar) bool { return isRequestTraceEnv(e.Name) })
	main.Env = append(main.Env,
		corev1.EnvVar{Name: EnvCapturePod, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		corev1.EnvVar{Name: EnvRequestTrace, Value: "1"},
		corev1.EnvVar{Name: EnvRequestTraceRecords, Value: captureRecords},
		corev1.EnvVar{Name: EnvRequestTraceSinks, Value: captureSink},
		corev1.EnvVar{Name: EnvRequestTraceOutputPath, Value: CaptureFilePrefix},
		corev1.EnvVar{Name: EnvRequestTraceRollBytes, Value: strconv.FormatInt(captureRollBytes(capture), 10)},
	)
	main.VolumeMounts = slices.DeleteFunc(main.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == CaptureVolume || m.MountPath == CaptureMountPath
	})
	main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{
		Name: CaptureVolume, MountPath: CaptureMountPath,
		// Each Frontend pod sees only its own directory of its request's directory of the claim, so
		// replicas, and the deployments of other requests sharing the claim, never write into each
		// other's segments.
		SubPathExpr: CaptureDirectory(requestUID) + "/$(" + EnvCapturePod + ")",
	})
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == CaptureVolume })
	spec.Volumes = append(spec.Volumes, corev1.Volume{
		Name: CaptureVolume,
		VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: capture.ClaimName},
		},
	})
}
