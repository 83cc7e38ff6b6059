// Package chart checks the Helm chart with the real helm and kubectl and a real API server:
// rendered templates against goldens, and the RBAC table of docs/operate/security.md against the
// generated rules.
package chart
