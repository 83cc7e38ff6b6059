package controlplane

import (
	"path/filepath"
	"strings"
)

// OperatorNamespace is the namespace whose ServiceAccounts the sandbox's API server audits: the
// operator runs there under its chart's ServiceAccount.
const OperatorNamespace = "dgdr-system"

// AuditLogPath is the API server's audit log in the sandbox state directory stateDir. The API
// server keeps at most one rotated file beside it (audit-<time>.log).
func AuditLogPath(stateDir string) string { return filepath.Join(stateDir, "logs", "audit.log") }

// AuditPolicy is the API server's audit policy: one event per request (ResponseComplete, with
// the response code) of every ServiceAccount of namespace, without bodies, and nothing for anyone
// else, so that the log holds what the audit scan reads and stays small. The policy is
// evaluated for the authenticated user: a request that an admin makes impersonating one of those
// ServiceAccounts is not logged.
func AuditPolicy(namespace string) []byte {
	return []byte(strings.ReplaceAll(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted, Panic]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts:NAMESPACE"]
  - level: None
`, "NAMESPACE", namespace))
}

// auditArgs are the API server's audit flags: the log backend in blocking mode (its default,
// stated here because the scan relies on it) writes each event before the request's handler
// returns, so a scan right after a suite sees every request the suite caused.
func (c *Cluster) auditArgs() []string {
	return []string{
		"--audit-policy-file=" + c.PKI.AuditPolicy(),
		"--audit-log-path=" + AuditLogPath(c.StateDir),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=100",
		"--audit-log-maxbackup=1",
	}
}
