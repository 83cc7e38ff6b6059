package v1beta2

// Condition types and reasons of DynamoGraphDeploymentRequest.
const (
	// ConditionAccepted tells whether the current generation was turned into a Run.
	ConditionAccepted = "Accepted"

	// ReasonRunCreated: the Run for the current generation exists.
	ReasonRunCreated = "RunCreated"
	// ReasonInvalidSpec: the spec cannot be lowered (for example an object admitted before a
	// stricter operator version); fix the spec.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonRunCreationFailed: creating the Run failed; the controller retries.
	ReasonRunCreationFailed = "RunCreationFailed"

	// ConditionDeployed (with spec.deployment.autoApply) tells whether the DynamoGraphDeployment
	// of the best candidate exists and is ready; it follows the deployment's own readiness.
	ConditionDeployed = "Deployed"

	// ReasonDeploymentReady: the DynamoGraphDeployment is ready.
	ReasonDeploymentReady = "Ready"
	// ReasonDeploymentProgressing: the DynamoGraphDeployment was created or updated and is not
	// ready yet.
	ReasonDeploymentProgressing = "Progressing"
	// ReasonAwaitingResult: no search of the current generation has succeeded yet, so nothing
	// was deployed for it.
	ReasonAwaitingResult = "AwaitingResult"
	// ReasonDeploymentConflict: a DynamoGraphDeployment of that name exists and this request did
	// not create it; it is left unchanged.
	ReasonDeploymentConflict = "Conflict"
	// ReasonDeploymentCRDMissing: the cluster does not serve DynamoGraphDeployments.
	ReasonDeploymentCRDMissing = "CRDNotInstalled"
	// ReasonCandidateNotReproduced: the best Candidate's stored graphDeployment is not what the
	// operator renders from the Candidate's recorded parameters and the Run's spec, so it was
	// not written by the operator's renderer (or the operator's configuration changed since the
	// search); autoApply does not deploy it.
	ReasonCandidateNotReproduced = "CandidateNotReproduced"
	// ReasonNoCandidateFits: no Candidate of the current generation's Run fits the GPUs of the
	// cluster's Nodes of its SKU (status.fitsCluster); nothing is deployed until Nodes are
	// added or a new search finds a smaller one.
	ReasonNoCandidateFits = "NoCandidateFits"
	// ReasonDeploymentFailed: creating, updating or reading the DynamoGraphDeployment failed
	// (the message says why); the controller retries.
	ReasonDeploymentFailed = "DeploymentFailed"
	// ReasonAutoApplyDisabled: the operator's configuration has autoApply.enabled false (a
	// request stored before it was turned off); nothing is deployed.
	ReasonAutoApplyDisabled = "AutoApplyDisabled"
	// ReasonRightsRevoked: the user whose rights admission last reviewed for the request
	// (AnnotationReviewedUser) no longer holds a right the operator would exercise on their
	// behalf (the message names each), or the request records no such user. The operator
	// writes nothing for the request (no DynamoGraphDeployment created or updated, no
	// verification Job, no re-search Run) until the rights are back or a user who holds them
	// edits the spec.
	ReasonRightsRevoked = "RightsRevoked"
	// ReasonDeploymentDeleted: the DynamoGraphDeployment autoApply created was deleted by
	// someone else (the operator never deletes one). It is not created again for this
	// generation: edit the spec (a new generation) to deploy again.
	ReasonDeploymentDeleted = "DeploymentDeleted"

	// ConditionPredictionHeld (with spec.deployment.verification) tells whether the deployed
	// candidate's measured metrics are within tolerance of its predicted ones
	// (status.verification).
	ConditionPredictionHeld = "PredictionHeld"

	// ReasonWithinErrorBand: every compared metric is within its tolerance.
	ReasonWithinErrorBand = "WithinErrorBand"
	// ReasonOutsideErrorBand: at least one metric is outside its tolerance; the message names
	// each.
	ReasonOutsideErrorBand = "OutsideErrorBand"
	// ReasonVerifying: the verification Job is measuring (condition Unknown).
	ReasonVerifying = "Verifying"
	// ReasonVerificationFailed: nothing usable was measured (condition Unknown);
	// status.verification.reason says why.
	ReasonVerificationFailed = "VerificationFailed"

	// ConditionImprovementAvailable (with spec.research) tells whether the latest re-search
	// found a candidate that beats the deployed one under the same window by
	// spec.deployment.replaceMargin; autoApply replaces the deployment only then.
	ConditionImprovementAvailable = "ImprovementAvailable"

	// ReasonBetterCandidate: the new best beats the deployed candidate by the margin and meets
	// the SLA (True).
	ReasonBetterCandidate = "BetterCandidate"
	// ReasonBaselineMissesSLA: the deployed candidate misses the SLA under the window and the
	// new best meets it (True).
	ReasonBaselineMissesSLA = "BaselineMissesSLA"
	// ReasonBaselineStillBest: the deployed candidate stays (False; also Deployed's reason
	// while it is ready).
	ReasonBaselineStillBest = "BaselineStillBest"
	// ReasonBaselineUnavailable: the re-search has no usable baseline or best candidate
	// (Unknown); the deployment is kept.
	ReasonBaselineUnavailable = "BaselineUnavailable"
	// ReasonAwaitingResearch: no re-search has finished since the deployment (Unknown).
	ReasonAwaitingResearch = "AwaitingResearch"
)

// Condition types and reasons of DynamoGraphDeploymentRun.
const (
	// ConditionCompleted is the terminal condition: False while the search is pending or
	// running, True once the Run ended; the reason says how.
	ConditionCompleted = "Completed"
	// ConditionQueued is True while the Run waits for a free slot (concurrency limit) or for
	// Kueue admission.
	ConditionQueued = "Queued"
	// ConditionSearched, on a re-search Run with a baseline Job, is True once its search Job
	// ended successfully: its reason and message are how the search ended, which the Completed
	// condition takes over once the baseline ended too (Completed is False with reason
	// EvaluatingBaseline meanwhile). Absent on other Runs, and on a re-search whose search
	// failed: that ends the Run at once.
	ConditionSearched = "Searched"

	// ReasonPending: the Run waits for its Job to start.
	ReasonPending = "Pending"
	// ReasonWaitingForSlot: the namespace has the maximum number of active Runs.
	ReasonWaitingForSlot = "WaitingForSlot"
	// ReasonPendingLimitExceeded: the Run was not queued because its namespace already had
	// limits.maxPendingRunsPerNamespace Runs waiting for a slot; it ended without a search. The
	// message names the limit. Edit the request (a new generation) once the backlog has drained.
	ReasonPendingLimitExceeded = "PendingLimitExceeded"
	// ReasonWaitingForAdmission: the Job is suspended until Kueue admits it.
	ReasonWaitingForAdmission = "WaitingForAdmission"
	// ReasonEvaluatingCandidates: the search is running.
	ReasonEvaluatingCandidates = "EvaluatingCandidates"
	// ReasonEvaluatingBaseline: a re-search's search succeeded and the Run waits for its
	// baseline Job to publish status.baseline (at most job.baselineDeadlineSeconds).
	ReasonEvaluatingBaseline = "EvaluatingBaseline"
	// ReasonSucceeded: the search finished and its candidates are published.
	ReasonSucceeded = "Succeeded"
	// ReasonNoFeasibleCandidate: the search finished but no candidate met the constraints.
	ReasonNoFeasibleCandidate = "NoFeasibleCandidate"
	// ReasonInvalidInput: AISimulate rejected the effective input (exit code 2), or the operator
	// could not lower the spec.
	ReasonInvalidInput = "InvalidInput"
	// ReasonResourceLimited: AISimulate refused to run for lack of host resources (exit code 3).
	ReasonResourceLimited = "ResourceLimited"
	// ReasonDeadlineExceeded: the Job hit activeDeadlineSeconds.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonOOMKilled: the search container was killed for exceeding its memory limit (137).
	ReasonOOMKilled = "OOMKilled"
	// ReasonSearchFailed: the search failed for another reason (AISimulate's exit code 1 without
	// a result, 124 for its supervisor's start or stop timeout, ...).
	ReasonSearchFailed = "SearchFailed"
	// ReasonPublishFailed: the search succeeded but its result could not be published.
	ReasonPublishFailed = "PublishFailed"
	// ReasonOutputRejected: the search output broke the reporter's rules (a file over its size
	// cap, a symbolic link, a file that is not a regular file); nothing was published. The
	// message names the file and the cap.
	ReasonOutputRejected = "OutputRejected"
	// ReasonSearchPodFailedToStart: a container of the search pod could not start (image pull
	// error, invalid image name, container configuration error, crash loop, a failed init
	// container) for longer than job.startFailureGraceSeconds; the Job was deleted. The message
	// names the container and the cause.
	ReasonSearchPodFailedToStart = "SearchPodFailedToStart"
	// ReasonInsufficientTraffic: a re-search window held fewer captured requests than
	// spec.research.minRequests; nothing was searched.
	ReasonInsufficientTraffic = "InsufficientTraffic"
	// ReasonTraceWindowTooLarge: a re-search window is over one of the cut's bounds (its requests,
	// its bytes, the Frontend pods it merges); the message names it. Nothing was searched.
	ReasonTraceWindowTooLarge = "TraceWindowTooLarge"
	// ReasonTraceWindowMalformed: a request of a re-search window has a malformed record; the
	// message names its segment, line and field. Nothing was searched.
	ReasonTraceWindowMalformed = "TraceWindowMalformed"
	// ReasonTraceSourceMissing: the ConfigMap, key or PersistentVolumeClaim named by
	// spec.workload.trace.source does not exist; no Job was created.
	ReasonTraceSourceMissing = "TraceSourceMissing"
	// ReasonCancelled: a user cancelled the Run; published candidates are kept.
	ReasonCancelled = "Cancelled"
	// ReasonSuperseded: a newer request generation replaced this Run.
	ReasonSuperseded = "Superseded"
)

// Condition types and reasons of DynamoGraphDeploymentCandidate.
const (
	// ConditionEvaluated is True when the candidate's metrics come from a completed evaluation.
	ConditionEvaluated = "Evaluated"
	// ReasonFeasible: the candidate met every constraint.
	ReasonFeasible = "Feasible"

	// ConditionDeployable tells whether spec.graphDeployment deploys what was predicted: True
	// when the renderer lowered every deployment setting of spec.parameters; False when it
	// cannot lower one (reason NotRenderable; the message names each field), and then
	// spec.graphDeployment is empty. Evaluated stays True either way. autoApply skips a
	// Candidate that is not deployable and promote refuses it.
	ConditionDeployable = "Deployable"
	// ReasonRendered: every deployment setting of spec.parameters is in spec.graphDeployment.
	ReasonRendered = "Rendered"
	// ReasonNotRenderable: a field of spec.parameters cannot be rendered for the candidate's
	// backend and mode (docs/design/results.md, "Render or refuse"). On a request's Deployed
	// condition: no Candidate of the Run is deployable, so nothing was deployed.
	ReasonNotRenderable = "NotRenderable"

	// ConditionVersionSkew tells whether the engine version of the performance data the
	// prediction used differs from the engine version of the runtime image the candidate
	// deploys (status.engineVersions): True when they differ (the prediction rests on another
	// engine release than the one deployed), False when they are the same, Unknown when either
	// is not known.
	ConditionVersionSkew = "VersionSkew"
	// ReasonEngineVersionsDiffer: status.engineVersions.performanceData and runtime differ.
	ReasonEngineVersionsDiffer = "EngineVersionsDiffer"
	// ReasonEngineVersionsMatch: status.engineVersions.performanceData and runtime are the same.
	ReasonEngineVersionsMatch = "EngineVersionsMatch"
	// ReasonEngineVersionUnknown: the performance data's or the runtime image's engine version
	// is not known (a runtimeImages entry without engineVersion).
	ReasonEngineVersionUnknown = "EngineVersionUnknown"
)

// Well-known labels and annotations.
const (
	// LabelRequestName is set on Runs, Jobs, ConfigMaps and Candidates: the request's name.
	LabelRequestName = "nvidia.com/dgdr-request-name"
	// LabelRequestUID is the request's UID (names may be reused).
	LabelRequestUID = "nvidia.com/dgdr-request-uid"
	// LabelRequestGeneration is the accepted request generation.
	LabelRequestGeneration = "nvidia.com/dgdr-request-generation"
	// LabelRunName is set on Jobs, ConfigMaps and Candidates: the Run's name.
	LabelRunName = "nvidia.com/dgdr-run-name"
	// LabelRunUID is the Run's UID.
	LabelRunUID = "nvidia.com/dgdr-run-uid"
	// LabelCandidateRank is the candidate's rank.
	LabelCandidateRank = "nvidia.com/dgdc-rank"
	// LabelDeployedForName and LabelDeployedForNamespace are set on the DynamoGraphDeployments
	// made from a request's candidates (autoApply, promote): the request's name and namespace,
	// under the keys of the Dynamo platform's v1beta1 requests, which tools built on those
	// select a request's deployment by.
	LabelDeployedForName      = "dgdr.nvidia.com/name"
	LabelDeployedForNamespace = "dgdr.nvidia.com/namespace"
	// AnnotationSpecHash is the sha256 of the accepted typed spec (on Runs).
	AnnotationSpecHash = "nvidia.com/dgdr-spec-hash"
	// AnnotationInputHash is the sha256 of the effective AISimulate input (on Runs).
	AnnotationInputHash = "nvidia.com/dgdr-input-hash"
	// AnnotationBaselineInputHash is status.aisimulate.baseline.inputHash as the operator
	// recorded it (on a re-search Run's baseline Job and pod).
	AnnotationBaselineInputHash = "nvidia.com/dgdr-baseline-input-hash"
	// AnnotationOperatorVersion is set by the operator on each Run it creates: the version of
	// that operator (`dgdr-operator --version`), so a Run says which release accepted its request
	// generation. The operator never changes it afterwards.
	AnnotationOperatorVersion = "nvidia.com/dgdr-operator-version"
	// AnnotationCancel, set to "true" on a request or a Run, stops the active search and keeps
	// what was already published.
	AnnotationCancel = "nvidia.com/dgdr-cancel"
	// AnnotationResearchWindowEnd marks a re-search Run with the end of its window (RFC 3339),
	// set by the operator when it creates the Run.
	AnnotationResearchWindowEnd = "nvidia.com/dgdr-research-window-end"
	// AnnotationResearchBaseline names the Candidate that was deployed when the operator
	// created the re-search Run: the one its baseline evaluates.
	AnnotationResearchBaseline = "nvidia.com/dgdr-research-baseline"
	// AnnotationSupersededBy is set by the operator on a Run that a newer request generation
	// replaced; its value is the newer Run's name. The Run controller then stops the search and
	// ends the Run with Completed=True, reason Superseded.
	AnnotationSupersededBy = "nvidia.com/dgdr-superseded-by"
	// AnnotationReviewedUser, on a request, is the user whose rights the validating webhook last
	// reviewed for it (JSON: username, uid, groups, extra), on create and on every update that
	// needed a review (internal/admission NeedsAccessReview). Only admission writes it: the
	// mutating webhook sets it to the requesting user on such an update and keeps the stored
	// value on any other, and the validating webhook refuses any other value. The operator asks
	// the API server again whether that user holds the rights before it acts on their behalf.
	AnnotationReviewedUser = "nvidia.com/dgdr-reviewed-user"
	// LabelKueueQueueName, on a request, makes its search Jobs Kueue workloads: the Job is
	// created suspended with this label and Kueue admits it.
	LabelKueueQueueName = "kueue.x-k8s.io/queue-name"
)
