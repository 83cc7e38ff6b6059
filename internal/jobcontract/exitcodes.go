package jobcontract

// Exit codes of the reporter container. The Run controller's Classify reads them from the
// reporter's terminated state; they are defined here only.
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
)
