// Package chartinstall is the suite that installs the Helm chart into a sandbox started without
// its own operator and checks admission over the webhook Service and reconciliation (make
// test-chart-install, -tags chartinstall).
package chartinstall
