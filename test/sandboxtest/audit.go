package sandboxtest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/audit"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// DenialGrace is how long an ExpectDenials window stays open after its test: the API server's
// RBAC authorizer follows a restored binding from an informer, so a request the operator makes
// right after the test may still be refused.
const DenialGrace = 2 * time.Second

// expectedDenials are the windows ExpectDenials registered in this test binary.
var expectedDenials struct {
	sync.Mutex
	windows []audit.Exclusion
}

// ExpectDenials tells CheckAudit that the operator may be refused during t and DenialGrace
// after it, on the given resources (each "resource" in the core group or "resource.group", as
// RBAC names them; none: every resource). A test that takes a right away from the operator on
// purpose calls it first.
func ExpectDenials(t testing.TB, resources ...string) {
	t.Helper()
	expectedDenials.Lock()
	i := len(expectedDenials.windows)
	expectedDenials.windows = append(expectedDenials.windows, audit.Exclusion{From: time.Now(), Resources: resources})
	expectedDenials.Unlock()
	t.Cleanup(func() {
		expectedDenials.Lock()
		expectedDenials.windows[i].To = time.Now().Add(DenialGrace)
		expectedDenials.Unlock()
	})
}

// ExpectDenialsFor is ExpectDenials for a part of a test: the window opens now and closes
// DenialGrace after end is called.
func ExpectDenialsFor(resources ...string) (end func()) {
	expectedDenials.Lock()
	i := len(expectedDenials.windows)
	expectedDenials.windows = append(expectedDenials.windows, audit.Exclusion{From: time.Now(), Resources: resources})
	expectedDenials.Unlock()
	return func() {
		expectedDenials.Lock()
		expectedDenials.windows[i].To = time.Now().Add(DenialGrace)
		expectedDenials.Unlock()
	}
}

// AuditLogPath is the audit log of the sandbox's API server.
func (e *Env) AuditLogPath() string {
	return controlplane.AuditLogPath(manager.StateDir(e.Root))
}

// CheckAudit scans the sandbox's audit log for the requests of user received since then that
// the API server refused (403) or, for a list or a watch, did not answer with success, other
// than those ExpectDenials expected; it returns an error listing them. user is a ServiceAccount
// of controlplane.OperatorNamespace (the API server audits no one else), e.g.
// system:serviceaccount:dgdr-system:dgdr-operator.
func (e *Env) CheckAudit(user string, since time.Time) error {
	expectedDenials.Lock()
	windows := append([]audit.Exclusion(nil), expectedDenials.windows...)
	expectedDenials.Unlock()
	findings, err := audit.ScanFile(e.AuditLogPath(), audit.Options{User: user, Since: since, Exclusions: windows})
	if err != nil {
		return fmt.Errorf("audit check: %w", err)
	}
	if len(findings) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "audit check: the API server refused %d requests of %s (a missing right, or a list or watch that never synced; a test that refuses on purpose calls sandboxtest.ExpectDenials):", len(findings), user)
	for _, f := range findings {
		b.WriteString("\n  " + f.String())
	}
	return errors.New(b.String())
}
