package jobcontract

// What the reporter accepts from the search output (docs/operate/security.md, "Bad output cannot hurt").
// The search container is not trusted: it may write anything into the output emptyDir. The
// reporter reads each file it needs through these caps, refuses symbolic links and anything that
// is not a regular file, and checks the whole result before it publishes any of it.
const (
	// MaxRecommendationBytes caps recommendation.json. The real AISimulate writes about 36 KB per
	// evaluated candidate (its default 320 trials: about 11.5 MB), so a search of more than about
	// 900 evaluated candidates is refused; aisim writes about 5 KB per candidate.
	MaxRecommendationBytes int64 = 32 << 20
	// MaxConfigurationBytes caps each recommendations/NNNN.yaml (about 1 KB each).
	MaxConfigurationBytes int64 = 1 << 20
	// MaxEventsBytes caps execution-events.jsonl, and the live ledger in the search's /tmp (a
	// 2,000-trial search of the real AISimulate writes about 43 MB, aisim about 6 MB). It is
	// AISimulate's own limit (output.EventsMaxBytes). The ledger is read incrementally, so memory
	// stays bounded by MaxEventLineBytes.
	MaxEventsBytes int64 = 64 << 20
	// MaxEventLineBytes caps one line of the events ledger: AISimulate's own limit on a
	// checkpoint record (output.EventRecordMaxBytes).
	MaxEventLineBytes int64 = 1 << 20
	// MaxPredictionBytes caps the baseline's prediction.json: one flat summary of a few KB
	// (with power diagnostics), far below the cap.
	MaxPredictionBytes int64 = 1 << 20
)

// Exit codes of the reporter's publication: the reporter writes them into OutcomeFile and the
// publication container exits with them, where the Run controller's Classify reads them; they
// are defined here only.
const (
	// ReporterExitFailed: publication failed (API errors, RBAC, an unreadable result).
	ReporterExitFailed = 1
	// ReporterExitOutputRejected: the search output broke a rule of the contract (a file over
	// its cap, a symbolic link, a file that is not a regular file); nothing was published.
	ReporterExitOutputRejected = 3
)

// Exit codes of the input init container besides 1 (any failure). The Run controller reads them
// from the container's terminated state; they are defined here only.
const (
	// InputExitInsufficientTraffic: the trace window (--trace-window-*) holds fewer requests than
	// --trace-window-min-requests. The container wrote the window and its summary (the termination
	// message, as on success) but not the input, so the search never starts.
	InputExitInsufficientTraffic = 4
	// InputExitWindowMismatch: the window cut again for the baseline does not hash to
	// --trace-window-sha256, the hash of the window the search replayed; the baseline does not
	// run, since it would not be compared under the same traffic.
	InputExitWindowMismatch = 5
)
