// Package e2e holds the end-to-end tests on the sandbox; they build only with -tags e2e and run
// only with DGDR_E2E=1 (make test-e2e). See docs/develop/sandbox.md.
package e2e
