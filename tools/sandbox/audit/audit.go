// Package audit scans the sandbox API server's audit log for the requests of one user that the
// API server refused (403) and for the lists and watches of that user that failed in a way a
// retry does not mend (persistent): rights the user lacks, and informers that never synced.
package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Finding is one request of the user that the scan reports.
type Finding struct {
	// Time is when the API server received the request.
	Time time.Time
	Verb string
	// Group, Resource and Subresource name what the request was for; empty for a non-resource
	// request, which Path names instead.
	Group       string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Path is the request's path (without its query) for a non-resource request.
	Path string
	// Code is the HTTP status the API server answered.
	Code int32
	// Message is the API server's message, if it gave one.
	Message string
}

// GroupResource is the finding's resource as RBAC and kubectl name it: "resource" in the core
// group, otherwise "resource.group"; empty for a non-resource request.
func (f Finding) GroupResource() string {
	if f.Group == "" {
		return f.Resource
	}
	return f.Resource + "." + f.Group
}

func (f Finding) String() string {
	what := f.Path
	if f.Resource != "" {
		what = f.GroupResource()
		if f.Subresource != "" {
			what += "/" + f.Subresource
		}
		if f.Name != "" {
			what += " " + f.Name
		}
		if f.Namespace != "" {
			what += " in namespace " + f.Namespace
		}
	}
	s := fmt.Sprintf("%s %s %s: %d", f.Time.UTC().Format(time.RFC3339Nano), f.Verb, what, f.Code)
	if f.Message != "" {
		s += " " + f.Message
	}
	return s
}

// Exclusion is a time window whose findings a scan leaves out: a test that takes a right away
// on purpose registers one for its own duration.
type Exclusion struct {
	// From and To bound the window (inclusive); a zero To leaves it open.
	From, To time.Time
	// Resources limits the exclusion to findings on these resources, each named as
	// Finding.GroupResource names it (a subresource counts as its resource); empty: every finding
	// in the window.
	Resources []string
}

func (x Exclusion) excludes(f Finding) bool {
	if f.Time.Before(x.From) || (!x.To.IsZero() && f.Time.After(x.To)) {
		return false
	}
	return len(x.Resources) == 0 || slices.Contains(x.Resources, f.GroupResource())
}

// Options select what a scan reports.
type Options struct {
	// User is the username whose requests are scanned, e.g.
	// system:serviceaccount:dgdr-system:dgdr-operator. A request an admin makes impersonating
	// the user is the admin's, not the user's.
	User string
	// Since and Until bound the time the requests were received (Since inclusive, Until
	// exclusive); zero: unbounded.
	Since, Until time.Time
	// Exclusions are windows whose findings are left out.
	Exclusions []Exclusion
}

// Scan reads audit events (JSON lines of audit.k8s.io/v1 Event, as the API server's log backend
// writes them) from r and returns the findings of opts.User in log order. name is r's name in
// errors. A last line without its newline that does not decode is a write in progress and is
// skipped.
func Scan(r io.Reader, name string, opts Options) ([]Finding, error) {
	if opts.User == "" {
		return nil, errors.New("audit scan: no user given")
	}
	br := bufio.NewReader(r)
	var out []Finding
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		complete := err == nil
		if len(bytes.TrimSpace(line)) > 0 {
			var ev auditv1.Event
			if uerr := json.Unmarshal(line, &ev); uerr != nil {
				if !complete {
					break
				}
				return nil, fmt.Errorf("%s:%d: not an audit event: %w", name, n, uerr)
			}
			if f, ok := finding(&ev, opts); ok {
				out = append(out, f)
			}
		}
		if !complete {
			break
		}
	}
	return out, nil
}

// transientRefusals are parts of the messages of 403s that admission plugins give for a moment,
// which say nothing of the user's rights: NamespaceLifecycle refusing a create in a namespace
// being deleted (an event about an object of a namespace a test just deleted), and
// OwnerReferencesPermissionEnforcement before the API server's REST mapper knows a version a CRD
// just gained (the operator's first Runs after it installed its CRDs; retried).
var transientRefusals = []string{"because it is being terminated", "cannot find RESTMapping"}

// transientRefusal tells whether a 403's message is one of transientRefusals.
func transientRefusal(msg string) bool {
	return slices.ContainsFunc(transientRefusals, func(s string) bool { return strings.Contains(msg, s) })
}

// persistent tells whether a list or watch answered code fails again when retried, so that the
// informer behind it never syncs: a client error other than 410 Gone (an expired
// resourceVersion: the reflector lists afresh) and 429 (throttled). Server errors pass with the
// outage that caused them (the chaos suite kills the API server).
func persistent(code int32) bool {
	return code >= 400 && code < 500 && code != 410 && code != 429
}

// finding tells whether ev is a finding for opts.
func finding(ev *auditv1.Event, opts Options) (Finding, bool) {
	if ev.Stage != auditv1.StageResponseComplete || ev.User.Username != opts.User || ev.ResponseStatus == nil {
		return Finding{}, false
	}
	code := ev.ResponseStatus.Code
	listed := ev.Verb == "list" || ev.Verb == "watch"
	if code != 403 && (!listed || !persistent(code)) {
		return Finding{}, false
	}
	if code == 403 && transientRefusal(ev.ResponseStatus.Message) {
		return Finding{}, false
	}
	t := ev.RequestReceivedTimestamp.Time
	if (!opts.Since.IsZero() && t.Before(opts.Since)) || (!opts.Until.IsZero() && !t.Before(opts.Until)) {
		return Finding{}, false
	}
	f := Finding{Time: t, Verb: ev.Verb, Code: code, Message: ev.ResponseStatus.Message}
	if ref := ev.ObjectRef; ref != nil {
		f.Group, f.Resource, f.Subresource = ref.APIGroup, ref.Resource, ref.Subresource
		f.Namespace, f.Name = ref.Namespace, ref.Name
	} else {
		f.Path, _, _ = strings.Cut(ev.RequestURI, "?")
	}
	for _, x := range opts.Exclusions {
		if x.excludes(f) {
			return Finding{}, false
		}
	}
	return f, true
}

// ScanFile scans the audit log at path and the files the API server rotated it into (the
// same name with a time before its extension, e.g. audit-2025-01-02T03-04-05.000.log), oldest
// first. A missing log is an error: the API server creates it at start.
func ScanFile(path string, opts Options) ([]Finding, error) {
	ext := filepath.Ext(path)
	rotated, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, err
	}
	slices.Sort(rotated) // the time in the names sorts as text
	var out []Finding
	for _, p := range append(rotated, path) {
		fs, err := scanPath(p, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

func scanPath(path string, opts Options) ([]Finding, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Scan(f, path, opts)
}
