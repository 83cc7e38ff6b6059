package v1beta2

// WorkloadSpec describes the traffic a deployment must serve: a synthetic static workload or a
// recorded trace.
// +kubebuilder:validation:XValidation:rule="!(has(self.static) && has(self.trace))",message="static and trace are mutually exclusive: a search replays either synthetic traffic or a trace",fieldPath=".trace",reason="FieldValueForbidden"
type WorkloadSpec struct {
	// static is a synthetic workload with fixed token lengths and one load variant. An explicitly
	// empty static ({}) is the opt-out from typed traffic: it stays empty and the lowering emits no
	// traffic source or load, so inputOverrides can describe the traffic instead. Admission adds
	// it (completed with defaults) unless trace is set.
	// +optional
	Static *StaticWorkload `json:"static,omitempty"`

	// trace replays the team's own recorded traffic: a mooncake JSONL trace from a ConfigMap or a
	// PersistentVolumeClaim, mounted read-only into the search container. Mutually exclusive with
	// static.
	// +optional
	Trace *TraceWorkload `json:"trace,omitempty"`
}

// TraceFormat is the format of a traffic trace.
// +kubebuilder:validation:Enum=mooncake;dynamo
type TraceFormat string

// TraceWorkload is a recorded trace to replay. Lowers to traffic.source {type: trace, paths,
// format}, traffic.load and traffic.stop (docs/design/lowering.md).
type TraceWorkload struct {
	// format of the trace file: mooncake or dynamo. Both are supported end to end (AISimulate and
	// the local recommender replay them; docs/design/aisim.md). Admission materializes mooncake.
	// +optional
	Format TraceFormat `json:"format,omitempty"`

	// source is where the trace file is: exactly one of configMap or pvc.
	// +required
	Source *TraceSource `json:"source,omitempty"`

	// replay is how the trace is replayed: exactly one of arrivalSpeedupRatio or concurrency.
	// Admission materializes {arrivalSpeedupRatio: 1} (the trace's own timestamps).
	// +optional
	Replay *TraceReplay `json:"replay,omitempty"`

	// maxVirtualTimeSeconds stops the replay after this much simulated time. Lowers to
	// traffic.stop.max_virtual_time_seconds. When omitted the whole trace is replayed. Minimum
	// 0.001, maximum 604800 (a week).
	// +optional
	// +kubebuilder:validation:Minimum=0.001
	// +kubebuilder:validation:Maximum=604800
	MaxVirtualTimeSeconds *float64 `json:"maxVirtualTimeSeconds,omitempty"`
}

// TraceSource is where a trace file is, in the request's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.configMap) != has(self.pvc)",message="exactly one of configMap or pvc must be set"
type TraceSource struct {
	// configMap holds a small trace (a ConfigMap holds at most 1 MiB) under one key.
	// +optional
	ConfigMap *TraceConfigMapSource `json:"configMap,omitempty"`

	// pvc holds a large trace as a file on a PersistentVolumeClaim.
	// +optional
	PVC *TracePVCSource `json:"pvc,omitempty"`
}

// TraceConfigMapSource is a trace stored under one key of a ConfigMap.
type TraceConfigMapSource struct {
	// name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// key of the ConfigMap whose value is the trace (JSONL).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// TracePVCSource is a trace file on a PersistentVolumeClaim.
type TracePVCSource struct {
	// claimName is the PersistentVolumeClaim.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName,omitempty"`

	// path of the trace file inside the claim: relative, without ".." elements.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`
}

// TraceReplay is how a trace is replayed.
// +kubebuilder:validation:XValidation:rule="has(self.arrivalSpeedupRatio) != has(self.concurrency)",message="exactly one of arrivalSpeedupRatio or concurrency must be set"
type TraceReplay struct {
	// arrivalSpeedupRatio replays the trace's arrival timestamps, compressed by this factor (2
	// offers twice the rate). Lowers to traffic.load {type: trace_timestamps, speedup}. Minimum
	// 0.001, maximum 1000.
	// +optional
	// +kubebuilder:validation:Minimum=0.001
	// +kubebuilder:validation:Maximum=1000
	ArrivalSpeedupRatio *float64 `json:"arrivalSpeedupRatio,omitempty"`

	// concurrency replays the trace's requests closed-loop with this many in flight, ignoring
	// its timestamps. Lowers to traffic.load {type: concurrency, concurrency}. Minimum 1,
	// maximum 100000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Concurrency *int32 `json:"concurrency,omitempty"`
}

// StaticWorkload is a synthetic workload. Admission completes a non-empty static with
// inputTokens 1024, outputTokens 128 and load {concurrency: 10} where missing.
type StaticWorkload struct {
	// inputTokens is the prompt length of every request. Lowers to traffic.source.input_tokens.
	// Defaults to 1024 (when static is not empty). Minimum 1, maximum 2097152.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2097152
	InputTokens *int32 `json:"inputTokens,omitempty"`

	// outputTokens is the generated length of every request. Lowers to
	// traffic.source.output_tokens. Defaults to 128 (when static is not empty). Minimum 1, maximum 2097152.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2097152
	OutputTokens *int32 `json:"outputTokens,omitempty"`

	// load is how requests arrive: exactly one of concurrency, requestsPerSecond or
	// kvCapacityFraction. Defaults to {concurrency: 10} (when static is not empty).
	// +optional
	Load *LoadSpec `json:"load,omitempty"`
}

// LoadSpec is a field-discriminated union: exactly one variant must be set whenever load exists.
// +kubebuilder:validation:XValidation:rule="(has(self.concurrency) ? 1 : 0) + (has(self.requestsPerSecond) ? 1 : 0) + (has(self.kvCapacityFraction) ? 1 : 0) == 1",message="exactly one of concurrency, requestsPerSecond or kvCapacityFraction must be set"
type LoadSpec struct {
	// concurrency keeps this many requests in flight (closed loop). Lowers to
	// traffic.load {type: concurrency, concurrency: N}. Minimum 1, maximum 1000000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	Concurrency *int32 `json:"concurrency,omitempty"`

	// requestsPerSecond is an open-loop Poisson arrival rate. Lowers to
	// traffic.load {type: poisson, requests_per_second: R}. Must be greater than 0.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	RequestsPerSecond *float64 `json:"requestsPerSecond,omitempty"`

	// kvCapacityFraction sizes a closed-loop concurrency per candidate as a fraction of its
	// KV-cache capacity. Lowers to traffic.load {type: kv_capacity_fraction, fraction: ...}.
	// +optional
	KVCapacityFraction *KVCapacityFraction `json:"kvCapacityFraction,omitempty"`
}

// KVCapacityFraction is either one value or a range the search explores.
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.range)",message="exactly one of value or range must be set"
type KVCapacityFraction struct {
	// value is the fraction of KV-cache capacity to load. Greater than 0; may exceed 1
	// (oversubscription). Maximum 100.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Value *float64 `json:"value,omitempty"`

	// range lets the search explore fractions between min and max. A native range also sets
	// the search budget (optimizer.max_trials) to 320 unless overridden.
	// +optional
	Range *FractionRange `json:"range,omitempty"`
}

// FractionRange is a closed interval 0 < min ≤ max.
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="min must be less than or equal to max"
type FractionRange struct {
	// min is the lower bound. Greater than 0, maximum 100.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Min float64 `json:"min,omitempty"`

	// max is the upper bound. Greater than 0, at least min, maximum 100.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Max float64 `json:"max,omitempty"`
}
