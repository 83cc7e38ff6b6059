package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ResearchSpec schedules searches over the deployment's captured traffic.
type ResearchSpec struct {
	// intervalMinutes is the time between two re-searches, in minutes: ticks fall on multiples
	// of it since the Unix epoch (docs/design/keep-optimal.md). Required. At least the operator
	// configuration's research.minInterval (an hour by default; admission checks it), at most
	// 43200 (30 days).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=43200
	IntervalMinutes int32 `json:"intervalMinutes,omitempty"`

	// windowMinutes is how much of the most recent captured traffic a re-search replays, in
	// minutes, ending at the tick. Admission materializes intervalMinutes. Minimum 1, maximum
	// 10080 (7 days).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10080
	WindowMinutes *int32 `json:"windowMinutes,omitempty"`

	// minRequests is the fewest captured requests in the window that are worth a search; a
	// tick with fewer ends its Run InsufficientTraffic without searching. Admission
	// materializes 100. Minimum 1, maximum 10000000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000000
	MinRequests *int32 `json:"minRequests,omitempty"`
}

// CaptureSpec configures the request trace that the rendered Frontend writes.
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !self.enabled || has(self.claimName)",message="claimName is required when capture is enabled",fieldPath=".claimName",reason="FieldValueRequired"
type CaptureSpec struct {
	// enabled makes the Frontend write its request trace to the claim. Defaults to false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// claimName is the PersistentVolumeClaim, in the request's namespace, that the Frontend
	// mounts read-write and writes the trace to: a DNS-1123 subdomain of at most 253
	// characters. Required when enabled. The claim must exist when the deployment starts and
	// be writable by every Frontend pod (ReadWriteMany when they may run on different nodes);
	// each Frontend pod writes its own directory on it, named after the pod.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClaimName string `json:"claimName,omitempty"`

	// rotation bounds the trace's segments by size. Admission materializes its defaults when
	// capture is set.
	// +optional
	Rotation *CaptureRotation `json:"rotation,omitempty"`
}

// CaptureRotation bounds the captured trace's segments. The Frontend closes a gzip segment and
// starts the next one when the segment's records reach maxSegmentMiB; it deletes none itself
// (it has no age-based retention): maxAgeHours is enforced by the re-searches.
type CaptureRotation struct {
	// maxSegmentMiB is the uncompressed size at which the Frontend rolls over to a new gzip
	// segment (the Frontend's DYN_REQUEST_TRACE_JSONL_GZ_ROLL_BYTES). Defaults to 64. Minimum
	// 1, maximum 4096.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	MaxSegmentMiB *int32 `json:"maxSegmentMiB,omitempty"`

	// maxAgeHours bounds the age of the kept traffic: at every re-search tick (spec.research),
	// the re-search deletes the complete segments all of whose requests arrived more than
	// maxAgeHours before the tick; a segment still being written is never deleted. It needs
	// spec.research, whose re-searches are its only reader, and must cover
	// spec.research.windowMinutes. Unset, nothing is deleted. Minimum 1, maximum 8760 (a year).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8760
	MaxAgeHours *int32 `json:"maxAgeHours,omitempty"`
}

// ResearchDecision is what a re-search led to.
// +kubebuilder:validation:Enum=Replaced;Kept;Skipped;Undecided
type ResearchDecision string

// ResearchStatus is the re-search history of a request.
type ResearchStatus struct {
	// nextTime is when the next re-search is due.
	// +optional
	NextTime *metav1.Time `json:"nextTime,omitempty"`

	// history holds the latest re-searches, newest first, at most 10.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	History []ResearchRecord `json:"history,omitempty"`

	// runRefs are the re-search Runs the operator created, newest first, at most 10 (name and
	// UID, recorded when it created each): only these are judged, and only their candidates may
	// replace the deployment.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	RunRefs []RunReference `json:"runRefs,omitempty"`
}

// ResearchRecord is one re-search tick and what it decided.
type ResearchRecord struct {
	// run is the re-search Run.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Run string `json:"run,omitempty"`

	// windowStart is the earliest arrival time of the replayed traffic.
	// +required
	WindowStart *metav1.Time `json:"windowStart,omitempty"`

	// windowEnd is the arrival time the replayed traffic stops before: the tick.
	// +required
	WindowEnd *metav1.Time `json:"windowEnd,omitempty"`

	// requests is how many captured requests the window held, when known.
	// +optional
	Requests int64 `json:"requests,omitempty"`

	// deployedCandidate is the candidate that was deployed when the Run was created.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DeployedCandidate string `json:"deployedCandidate,omitempty"`

	// baselineObjective is the deployed candidate's objective under the window, in the unit of
	// spec.objective.target, when evaluated.
	// +optional
	BaselineObjective *float64 `json:"baselineObjective,omitempty"`

	// bestCandidate is the re-search's best candidate, when it has one.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	BestCandidate string `json:"bestCandidate,omitempty"`

	// bestObjective is the best candidate's objective, in the same unit.
	// +optional
	BestObjective *float64 `json:"bestObjective,omitempty"`

	// decision is what the re-search led to.
	// +required
	Decision ResearchDecision `json:"decision,omitempty"`

	// reason is a CamelCase reason for the decision (the ImprovementAvailable reasons, or the
	// Run's Completed reason).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`

	// message explains the decision with both numbers.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}
