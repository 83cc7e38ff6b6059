package controllertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
)

// refusals are the status writes the Writers of the managers NewManagerAs made refused: a
// reconcile that changed a part of a status its controller does not own (status.NotOwnedError),
// as the managers logged them.
var refusals refusalSink

// CheckStatusOwners reports every write of a request reconciler outside its share of a request's
// status (request.StatusOwners): the writes its Writer refused in this process, and, on the API
// server, each status field or condition of a request whose last writer (managedFields: the
// Writers name their controller as field manager) is a reconciler that does not own it. The
// envtest packages of the request's reconcilers run it after their tests.
func CheckStatusOwners(ctx context.Context, c client.Reader) error {
	problems := refusals.take()
	var list v1beta2.DynamoGraphDeploymentRequestList
	if err := c.List(ctx, &list); err != nil {
		return err
	}
	owners := map[string]status.Owner{}
	for _, o := range request.StatusOwners {
		owners[o.Manager] = o
	}
	for _, d := range list.Items {
		for _, mf := range d.ManagedFields {
			o, ok := owners[mf.Manager]
			if !ok || mf.FieldsV1 == nil {
				continue
			}
			for _, path := range statusPaths(mf.FieldsV1.GetRawBytes()) {
				if !owned(o, path) {
					problems = append(problems, fmt.Sprintf("%s/%s: %s last set %s", d.Namespace, d.Name, o.Manager, path))
				}
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("writes outside a reconciler's share of the request's status:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

// statusPaths lists the status fields of a managedFields entry (fieldsV1): "status.<field>",
// and "status.conditions[type=<type>]" for each condition.
func statusPaths(raw []byte) []string {
	var fields map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return []string{"unreadable managedFields: " + err.Error()}
	}
	var out []string
	for key, sub := range fields["f:status"] {
		name, ok := strings.CutPrefix(key, "f:")
		if !ok {
			continue
		}
		if name != "conditions" {
			out = append(out, "status."+name)
			continue
		}
		var items map[string]json.RawMessage
		_ = json.Unmarshal(sub, &items)
		for item := range items {
			var k struct{ Type string }
			if js, ok := strings.CutPrefix(item, "k:"); ok && json.Unmarshal([]byte(js), &k) == nil {
				out = append(out, "status.conditions[type="+k.Type+"]")
			}
		}
	}
	slices.Sort(out)
	return out
}

func owned(o status.Owner, path string) bool {
	if t, ok := strings.CutPrefix(path, "status.conditions[type="); ok {
		return slices.Contains(o.Conditions, strings.TrimSuffix(t, "]"))
	}
	return slices.Contains(o.Fields, strings.TrimPrefix(path, "status."))
}

// refusalSink is a logr sink that keeps the NotOwnedErrors logged and drops everything else (the
// tests discard the operator's logs).
type refusalSink struct {
	mu      sync.Mutex
	refused []string
}

func (s *refusalSink) logger() logr.Logger { return logr.New(sinkOf{s: s}) }

func (s *refusalSink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.refused
	s.refused = nil
	return out
}

// sinkOf is a logger of s that carries the key-value pairs given it (the controller, the
// request), to name them with a refusal.
type sinkOf struct {
	s  *refusalSink
	kv []any
}

func (sinkOf) Init(logr.RuntimeInfo)          {}
func (sinkOf) Enabled(int) bool               { return false }
func (sinkOf) Info(int, string, ...any)       {}
func (k sinkOf) WithName(string) logr.LogSink { return k }
func (k sinkOf) WithValues(kv ...any) logr.LogSink {
	return sinkOf{s: k.s, kv: append(slices.Clip(k.kv), kv...)}
}

func (k sinkOf) Error(err error, _ string, kv ...any) {
	var notOwned *status.NotOwnedError
	if !errors.As(err, &notOwned) {
		return
	}
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	k.s.refused = append(k.s.refused, fmt.Sprintf("%s %v", notOwned.Error(), append(slices.Clip(k.kv), kv...)))
}
