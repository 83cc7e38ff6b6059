// Package admitfuzz fuzzes the admission pipeline dgdrctl shares with the webhooks: decode,
// schema and CEL, default, validate, lower. It lives apart from the dgdrctl tests, whose
// TestMain starts an API server in every fuzz worker.
package admitfuzz
