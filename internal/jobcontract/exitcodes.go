package jobcontract

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
	// InputExitWindowTooLarge: the trace window is over one of its bounds (requests, bytes, Frontend
	// pods merged, directory entries); the termination message names it. Nothing was written.
	InputExitWindowTooLarge = 6
	// InputExitWindowMalformed: a request of the trace window has a malformed record; the
	// termination message names its segment, line and field. Nothing was written.
	InputExitWindowMalformed = 7
)
