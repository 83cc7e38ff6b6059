package searchoutput

import "github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"

// What the reporter accepts from the search output (docs/operate/security.md, "Bad output cannot
// hurt"): each file it needs is read through these caps (ReadCapped, or incrementally for the
// ledger).
const (
	// MaxRecommendationBytes caps recommendation.json. The real AISimulate writes about 36 KB per
	// evaluated candidate (its default 320 trials: about 11.5 MB), so a search of more than about
	// 900 evaluated candidates is refused; aisim writes about 5 KB per candidate.
	MaxRecommendationBytes int64 = 32 << 20
	// MaxConfigurationBytes caps each recommendations/NNNN.yaml (about 1 KB each).
	MaxConfigurationBytes int64 = 1 << 20
	// MaxEventsBytes caps execution-events.jsonl, and the live ledger in the search's /tmp (a
	// 2,000-trial search of the real AISimulate writes about 43 MB, aisim about 6 MB): AISimulate's
	// own limit. The ledger is read incrementally, so memory stays bounded by MaxEventLineBytes.
	MaxEventsBytes int64 = output.EventsMaxBytes
	// MaxEventLineBytes caps one line of the events ledger: AISimulate's own limit on a
	// checkpoint record.
	MaxEventLineBytes int64 = output.EventRecordMaxBytes
	// MaxPredictionBytes caps the baseline's prediction.json: one flat summary of a few KB
	// (with power diagnostics), far below the cap.
	MaxPredictionBytes int64 = 1 << 20
)
