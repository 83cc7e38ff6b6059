// Package ui is the browser test of dgdrctl ui: headless Chromium on the pages of the real UI
// server on the sandbox, after the demo searches (make test-ui, -tags ui).
package ui
