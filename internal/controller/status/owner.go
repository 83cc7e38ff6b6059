package status

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Owner is one writer's share of a status that several controllers write, as cert-manager's
// certificate controllers share a Certificate's: the top-level status fields it owns and the
// condition types it owns in status.conditions (a list keyed by type, shared by all writers).
// Its Writer sends only that share, and refuses a reconcile that changed anything else.
//
// How two writers of one object never clobber each other: a JSON merge patch touches only the
// keys it contains, so the fields of different owners need no coordination. The conditions list
// is replaced whole by a merge patch, so a writer that changes its conditions sends the list as
// it read it with only its own types changed, and the object's resourceVersion with it
// (optimistic concurrency). When another writer changed the object in between, the API server
// answers Conflict; the writer then reads the object from the API server, puts its share on it
// again and retries (retry.DefaultRetry), without computing anything again: what it decided is
// its own to write whatever the others wrote meanwhile, and their writes reach it as events.
type Owner struct {
	// Manager names the writer: its controller, and the field manager of its patches, so that the
	// API server's managedFields record which writer set each field.
	Manager string
	// Fields are the top-level status fields it owns, by JSON name.
	Fields []string
	// Conditions are the condition types it owns in status.conditions.
	Conditions []string
}

// NotOwnedError is a reconcile that changed parts of the status its writer does not own.
type NotOwnedError struct {
	Manager string
	// Paths are the parts changed, e.g. status.activeRunRef or status.conditions[type=Deployed].
	Paths []string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s changed %s, which it does not own; nothing was written", e.Manager, strings.Join(e.Paths, ", "))
}

// NewWriter takes the base copy of obj for a writer of o's share. live reads the object from
// the API server when a write conflicts (the manager's API reader: the cache may lag).
func (o Owner) NewWriter(c client.Client, live client.Reader, obj client.Object, expectations *Expectations) *Writer {
	w := NewWriter(c, obj, expectations)
	w.owner, w.live = &o, live
	return w
}

// PatchNow writes fields, a part of o's share, to obj's status at once, outside the reconcile's
// single status write: for a fact that must be on record before the reconcile goes on (the UID
// of a child just created, which would be read as foreign otherwise). obj is not changed.
func (o Owner) PatchNow(ctx context.Context, c client.Client, obj client.Object, fields map[string]any) error {
	for k := range fields {
		if !slices.Contains(o.Fields, k) {
			return &NotOwnedError{Manager: o.Manager, Paths: []string{"status." + k}}
		}
	}
	body, err := json.Marshal(map[string]any{"status": fields})
	if err != nil {
		return err
	}
	target, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", obj)
	}
	return c.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, body), client.FieldOwner(o.Manager))
}

// patchOwned writes o's share of obj's status (Patch of an Owner's Writer).
func (w *Writer) patchOwned(ctx context.Context, obj client.Object) (bool, error) {
	base, err := statusMap(w.base)
	if err != nil {
		return false, err
	}
	desired, err := statusMap(obj)
	if err != nil {
		return false, err
	}
	if paths := w.owner.unowned(base, desired); len(paths) > 0 {
		return false, &NotOwnedError{Manager: w.owner.Manager, Paths: paths}
	}
	body, err := w.owner.patch(base, desired, w.base.GetResourceVersion())
	if err != nil || body == nil {
		return false, err
	}
	sent := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if sent {
			// The first patch conflicted: put the share on the object as the API server has it.
			current := obj.DeepCopyObject().(client.Object)
			if err := w.live.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
				return err
			}
			if current.GetUID() != w.base.GetUID() {
				return fmt.Errorf("%s was replaced by another object of its name", client.ObjectKeyFromObject(obj))
			}
			now, err := statusMap(current)
			if err != nil {
				return err
			}
			if body, err = w.owner.patch(now, desired, current.GetResourceVersion()); err != nil || body == nil {
				return err
			}
		}
		sent = true
		return w.client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner(w.owner.Manager))
	})
	if err != nil || body == nil {
		return false, err
	}
	if w.expectations != nil {
		w.expectations.ExpectWritten(obj, w.base.GetResourceVersion())
	}
	return true, nil
}

// unowned lists the parts of the status that differ between base and desired and are not o's.
func (o Owner) unowned(base, desired map[string]any) []string {
	var paths []string
	for _, k := range unionKeys(base, desired) {
		if k != conditionsKey && !slices.Contains(o.Fields, k) && !reflect.DeepEqual(base[k], desired[k]) {
			paths = append(paths, "status."+k)
		}
	}
	was, is := byType(conditionsOf(base)), byType(conditionsOf(desired))
	for _, t := range unionKeys(was, is) {
		if !slices.Contains(o.Conditions, t) && !reflect.DeepEqual(was[t], is[t]) {
			paths = append(paths, "status.conditions[type="+t+"]")
		}
	}
	return paths
}

// patch is the merge patch that takes current's share of o to desired's, or nil when they are
// equal. When it changes the conditions list it carries resourceVersion (when known), so that
// it fails with Conflict instead of overwriting conditions written since current was read.
func (o Owner) patch(current, desired map[string]any, resourceVersion string) ([]byte, error) {
	from, to := map[string]any{}, map[string]any{}
	for _, f := range o.Fields {
		if v, ok := current[f]; ok {
			from[f] = v
		}
		if v, ok := desired[f]; ok {
			to[f] = v
		}
	}
	was := conditionsOf(current)
	merged := o.mergeConditions(was, conditionsOf(desired))
	guarded := !reflect.DeepEqual(was, merged)
	if guarded {
		from[conditionsKey] = was
		if len(merged) > 0 {
			to[conditionsKey] = merged
		}
	}
	fromDoc, err := json.Marshal(map[string]any{"status": from})
	if err != nil {
		return nil, err
	}
	toDoc, err := json.Marshal(map[string]any{"status": to})
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.CreateMergePatch(fromDoc, toDoc)
	if err != nil {
		return nil, fmt.Errorf("computing the status patch of %s: %w", o.Manager, err)
	}
	if string(patch) == "{}" {
		return nil, nil
	}
	if !guarded || resourceVersion == "" {
		return patch, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(patch, &doc); err != nil {
		return nil, err
	}
	doc["metadata"] = map[string]any{"resourceVersion": resourceVersion}
	return json.Marshal(doc)
}

// mergeConditions is current's conditions with o's types as desired has them: the others kept
// as they are, in their order; o's replaced in place, removed, or appended in desired's order.
// A condition whose status did not change keeps current's lastTransitionTime, as
// meta.SetStatusCondition keeps it.
func (o Owner) mergeConditions(current, desired []any) []any {
	want := byType(desired)
	var out []any
	placed := map[string]bool{}
	for _, c := range current {
		t := typeOf(c)
		if !slices.Contains(o.Conditions, t) {
			out = append(out, c)
			continue
		}
		d, ok := want[t]
		if !ok || placed[t] {
			continue
		}
		placed[t] = true
		out = append(out, keepTransition(c, d))
	}
	for _, d := range desired {
		if t := typeOf(d); slices.Contains(o.Conditions, t) && !placed[t] {
			placed[t] = true
			out = append(out, d)
		}
	}
	return out
}

// keepTransition is desired with current's lastTransitionTime when its status is current's.
func keepTransition(current, desired any) any {
	c, _ := current.(map[string]any)
	d, _ := desired.(map[string]any)
	if c == nil || d == nil || c["status"] != d["status"] || c["lastTransitionTime"] == nil {
		return desired
	}
	out := make(map[string]any, len(d))
	for k, v := range d {
		out[k] = v
	}
	out["lastTransitionTime"] = c["lastTransitionTime"]
	return out
}

const conditionsKey = "conditions"

// statusMap is obj's status as decoded JSON (an empty map when it has none).
func statusMap(obj client.Object) (map[string]any, error) {
	doc, err := statusDocument(obj)
	if err != nil {
		return nil, err
	}
	var parts struct {
		Status map[string]any `json:"status"`
	}
	if err := json.Unmarshal(doc, &parts); err != nil {
		return nil, err
	}
	if parts.Status == nil {
		parts.Status = map[string]any{}
	}
	return parts.Status, nil
}

func conditionsOf(status map[string]any) []any {
	list, _ := status[conditionsKey].([]any)
	return list
}

func typeOf(condition any) string {
	m, _ := condition.(map[string]any)
	t, _ := m["type"].(string)
	return t
}

func byType(conditions []any) map[string]any {
	out := make(map[string]any, len(conditions))
	for _, c := range conditions {
		out[typeOf(c)] = c
	}
	return out
}

// unionKeys is the keys of a and b, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
