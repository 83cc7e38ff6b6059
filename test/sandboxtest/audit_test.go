package sandboxtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditLog appends to the sandbox's audit log events as the API server writes them.
type auditLog struct {
	t    *testing.T
	path string
}

func (l auditLog) refused(user, resource string) {
	l.t.Helper()
	now := metav1.NowMicro()
	ev := auditv1.Event{
		TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
		Level:    auditv1.LevelMetadata, Stage: auditv1.StageResponseComplete, Verb: "get",
		RequestURI:               "/api/v1/namespaces/tenant/" + resource + "/x",
		ObjectRef:                &auditv1.ObjectReference{Resource: resource, Namespace: "tenant", Name: "x", APIVersion: "v1"},
		ResponseStatus:           &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: 403},
		RequestReceivedTimestamp: now, StageTimestamp: now,
	}
	ev.User.Username = user
	line, err := json.Marshal(ev)
	if err != nil {
		l.t.Fatal(err)
	}
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		l.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		l.t.Fatal(err)
	}
}

// TestCheckAudit: CheckAudit reports the user's refusals since the given time, except those on
// the resources a test expected with ExpectDenials while it ran (and DenialGrace after).
func TestCheckAudit(t *testing.T) {
	e := &Env{Root: t.TempDir()}
	if err := os.MkdirAll(filepath.Dir(e.AuditLogPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	log := auditLog{t: t, path: e.AuditLogPath()}
	const user = "system:serviceaccount:dgdr-system:dgdr-operator"

	log.refused(user, "configmaps") // before the suite: not reported
	time.Sleep(10 * time.Millisecond)
	since := time.Now()
	t.Run("takes the secrets right away", func(t *testing.T) {
		ExpectDenials(t, "secrets")
		log.refused(user, "secrets") // expected
		log.refused(user, "pods")    // not expected: another resource
	})
	log.refused(user, "secrets") // within the grace
	log.refused("system:serviceaccount:dgdr-system:other", "services")
	t.Run("takes every right away", func(t *testing.T) {
		ExpectDenials(t)
		log.refused(user, "jobs")
	})

	err := e.CheckAudit(user, since)
	if err == nil {
		t.Fatal("CheckAudit found nothing; want the pods refusal")
	}
	var got []string
	for _, l := range strings.Split(err.Error(), "\n")[1:] {
		_, what, _ := strings.Cut(strings.TrimSpace(l), " ")
		got = append(got, what)
	}
	if diff := cmp.Diff([]string{"get pods x in namespace tenant: 403"}, got); diff != "" {
		t.Errorf("reported (-want +got):\n%s\nerror: %v", diff, err)
	}
	if !strings.HasPrefix(err.Error(), "audit check: the API server refused 1 requests of "+user) {
		t.Errorf("error = %v", err)
	}

	// After the grace the window is closed: the same refusal is reported again.
	time.Sleep(DenialGrace + 100*time.Millisecond)
	after := time.Now()
	log.refused(user, "secrets")
	if err := e.CheckAudit(user, after); err == nil || !strings.Contains(err.Error(), "get secrets x") {
		t.Errorf("a refusal after the window: %v, want it reported", err)
	}
	if err := e.CheckAudit("system:serviceaccount:dgdr-system:absent", since); err != nil {
		t.Errorf("a user without refusals: %v", err)
	}
	if err := (&Env{Root: t.TempDir()}).CheckAudit(user, since); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a sandbox without an audit log: %v, want an error", err)
	}
}
