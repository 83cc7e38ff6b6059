package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testdata/audit.log holds the events of a real kube-apiserver (the sandbox's audit policy) for
// the requests of TestAPIServerAuditsTheOperatorNamespace, one per second from 07:41:01, and
// variants of them: the numbers below are the lines.
//
//	1 list configmaps 200           2 get configmaps/absent 404       3 get secrets/token 403
//	4 watch pods 403 (cluster)      5 list dynamographdeployments 404 6 admin impersonating: 403
//	7 watch configmaps 200          8 another ServiceAccount: 403     9 list leases 500
//	10 get /metrics 403             11 patch pods/status 403
//	12 create events in a namespace being deleted: 403 (NamespaceLifecycle, not a missing right)
//	13 the same create, refused while the REST mapper lags a CRD's new version: 403 (transient)
const operator = "system:serviceaccount:dgdr-system:dgdr-operator"

func at(sec int) time.Time {
	return time.Date(2026, 12, 6, 7, 41, sec, 100000, time.UTC)
}

func forbidden(what, verb, resource, scope string) string {
	return what + ` is forbidden: User "` + operator + `" cannot ` + verb + ` resource "` + resource + `" in API group "" ` + scope
}

var (
	line3 = Finding{Time: at(3), Verb: "get", Resource: "secrets", Namespace: "tenant", Name: "token", Code: 403,
		Message: forbidden(`secrets "token"`, "get", "secrets", `in the namespace "tenant"`)}
	line4 = Finding{Time: at(4), Verb: "watch", Resource: "pods", Code: 403,
		Message: forbidden("pods", "watch", "pods", "at the cluster scope")}
	line5  = Finding{Time: at(5), Verb: "list", Group: "nvidia.com", Resource: "dynamographdeployments", Namespace: "tenant", Code: 404}
	line10 = Finding{Time: at(10), Verb: "get", Path: "/metrics", Code: 403, Message: `forbidden: User "` + operator + `" cannot get path "/metrics"`}
	line11 = Finding{Time: at(11), Verb: "patch", Resource: "pods", Subresource: "status", Namespace: "tenant", Name: "search-0", Code: 403,
		Message: forbidden(`pods "search-0"`, "patch", "pods/status", `in the namespace "tenant"`)}
)

func TestScan(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []Finding
	}{
		{
			name: "every refusal and every list or watch of the user that a retry does not mend (not line 9's 500), nobody else's",
			opts: Options{User: operator},
			want: []Finding{line3, line4, line5, line10, line11},
		},
		{
			name: "another user of the same namespace",
			opts: Options{User: "system:serviceaccount:dgdr-system:default"},
			want: []Finding{{Time: at(8), Verb: "get", Resource: "secrets", Namespace: "tenant", Name: "token", Code: 403,
				Message: strings.ReplaceAll(line3.Message, "dgdr-operator", "default")}},
		},
		{
			name: "the admin who impersonated the user: the request is the admin's",
			opts: Options{User: "sandbox-admin"},
			want: []Finding{{Time: at(6), Verb: "get", Resource: "secrets", Namespace: "tenant", Name: "impersonated", Code: 403,
				Message: forbidden(`secrets "impersonated"`, "get", "secrets", `in the namespace "tenant"`)}},
		},
		{
			name: "since is inclusive, until exclusive",
			opts: Options{User: operator, Since: at(4), Until: at(9)},
			want: []Finding{line4, line5},
		},
		{
			name: "an exclusion window of every resource, bounds inclusive",
			opts: Options{User: operator, Exclusions: []Exclusion{{From: at(4), To: at(5)}}},
			want: []Finding{line3, line10, line11},
		},
		{
			name: "an exclusion of named resources: a subresource counts as its resource, a group must match",
			opts: Options{User: operator, Exclusions: []Exclusion{{From: at(1), To: at(11), Resources: []string{"pods", "leases.coordination.k8s.io", "dynamographdeployments"}}}},
			want: []Finding{line3, line5, line10},
		},
		{
			name: "an open exclusion window",
			opts: Options{User: operator, Exclusions: []Exclusion{{From: at(9)}}},
			want: []Finding{line3, line4, line5},
		},
		{
			name: "a user with nothing found",
			opts: Options{User: "system:serviceaccount:dgdr-system:absent"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ScanFile(filepath.Join("testdata", "audit.log"), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScanInput(t *testing.T) {
	events, err := os.ReadFile(filepath.Join("testdata", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(events), "\n")
	secret := lines[2] // line 3, a finding
	tests := []struct {
		name    string
		input   string
		opts    Options
		want    []Finding
		wantErr string
	}{
		{
			name:  "a last line still being written is skipped",
			input: secret + secret[:100],
			opts:  Options{User: operator},
			want:  []Finding{line3},
		},
		{
			name:  "a complete last line without its newline counts",
			input: secret + strings.TrimSuffix(lines[3], "\n"),
			opts:  Options{User: operator},
			want:  []Finding{line3, line4},
		},
		{
			name:  "blank lines are skipped",
			input: "\n" + secret + "\n\n",
			opts:  Options{User: operator},
			want:  []Finding{line3},
		},
		{
			name:  "events of other stages are not the request's outcome",
			input: strings.Replace(secret, `"stage":"ResponseComplete"`, `"stage":"ResponseStarted"`, 1),
			opts:  Options{User: operator},
		},
		{
			name:    "a broken line names the file and line",
			input:   secret + "{not json\n" + secret,
			opts:    Options{User: operator},
			wantErr: "audit.log:2: not an audit event",
		},
		{
			name:    "a user is required",
			input:   secret,
			wantErr: "audit scan: no user given",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(strings.NewReader(tt.input), "audit.log", tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScanFileReadsRotatedFiles: the API server rotates the log into audit-<time>.log; the scan
// reads the rotated files oldest first, then the log, and ignores other files beside them.
func TestScanFileReadsRotatedFiles(t *testing.T) {
	events, err := os.ReadFile(filepath.Join("testdata", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(events), "\n")
	dir := t.TempDir()
	for name, content := range map[string]string{
		"audit-2026-12-06T07-41-04.000.log": lines[2],                   // older: line 3
		"audit-2026-12-06T07-41-06.000.log": lines[3],                   // newer: line 4
		"audit.log":                         lines[4],                   // current: line 5
		"audit-policy.yaml":                 "not an audit log\n",       // not the log's
		"kube-apiserver.log":                "I1206 not an audit log\n", // not the log's
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ScanFile(filepath.Join(dir, "audit.log"), Options{User: operator})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Finding{line3, line4, line5}, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if _, err := ScanFile(filepath.Join(t.TempDir(), "audit.log"), Options{User: operator}); !os.IsNotExist(err) {
		t.Errorf("scan of a missing log: %v, want not exist", err)
	}
}

func TestFindingString(t *testing.T) {
	tests := []struct {
		f    Finding
		want string
	}{
		{line3, `2026-12-06T07:41:03.0001Z get secrets token in namespace tenant: 403 ` + line3.Message},
		{line4, `2026-12-06T07:41:04.0001Z watch pods: 403 ` + line4.Message},
		{line5, `2026-12-06T07:41:05.0001Z list dynamographdeployments.nvidia.com in namespace tenant: 404`},
		{line10, `2026-12-06T07:41:10.0001Z get /metrics: 403 ` + line10.Message},
		{line11, `2026-12-06T07:41:11.0001Z patch pods/status search-0 in namespace tenant: 403 ` + line11.Message},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.f.String()); diff != "" {
			t.Errorf("String (-want +got):\n%s", diff)
		}
	}
}

// TestPersistent: a list or watch that a retry mends (410 Gone, 429, server errors) is not a
// finding; client errors that come back on every retry are.
func TestPersistent(t *testing.T) {
	got := map[int32]bool{}
	for _, code := range []int32{200, 400, 401, 403, 404, 410, 422, 429, 500, 503, 504} {
		got[code] = persistent(code)
	}
	want := map[int32]bool{200: false, 400: true, 401: true, 403: true, 404: true, 410: false, 422: true, 429: false, 500: false, 503: false, 504: false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("persistent (-want +got):\n%s", diff)
	}
}
