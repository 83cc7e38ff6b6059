// Package e2eupstream runs the demo's searches on the sandbox with the real AISimulate as the
// Planner image (make test-e2e-upstream, -tags e2eupstream).
package e2eupstream
