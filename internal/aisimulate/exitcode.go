package aisimulate

// Exit codes of `aisimulate recommend` and `aisimulate predict` (contract §13). The Run
// controller classifies a finished search by them and the local recommender returns them.
const (
	// ExitOK: success (some candidates may still have failed).
	ExitOK = 0
	// ExitFailure: execution failure, or a finished search with no selected configuration.
	ExitFailure = 1
	// ExitInvalidInput: CLI syntax, YAML, schema, domain, override or unsupported combination.
	ExitInvalidInput = 2
	// ExitResourceLimited: host-resource refusal, or any resource-limited candidate.
	ExitResourceLimited = 3
	// ExitTimeout: supervisor initialization or shutdown timeout.
	ExitTimeout = 124
	// ExitInterrupted: interrupted (SIGINT).
	ExitInterrupted = 130
	// ExitKilled is not AISimulate's own: 128+SIGKILL, what a container killed for its memory
	// limit reports.
	ExitKilled = 137
)
