// Package status is the kit the controllers reconcile with: one status write per reconcile
// (Writer; an Owner's Writer where several controllers write one status), a guard against stale
// cache reads of it (Expectations), and events sent only after the write (Events). A reconcile
// fetches its object, asks the Expectations whether the cache still shows the version its own
// last status write was computed from, computes the new status on the object, writes it once
// through a Writer, and emits the Events it queued only after the write succeeded. Sightings time conditions that must last a while before they count; Workers
// sizes a controller's concurrency.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writer writes one object's status in one JSON merge patch, in the manner of cluster-api's
// patch.Helper: it keeps a copy of the object as read (the base) and, at the end of the
// reconcile, sends only the status fields that differ from it, or nothing when none do. The
// patch carries no resourceVersion: the fields a controller owns are its own (the reporter owns
// other fields of a Run's status and patches them likewise). An Owner's Writer sends only the
// Owner's share (owner.go).
type Writer struct {
	client       client.Client
	base         client.Object
	expectations *Expectations
	// owner, when set, is the share of the status this writer may write, and live reads the
	// object again when a write of it conflicts.
	owner *Owner
	live  client.Reader
}

// NewWriter takes the base copy of obj. After a write, expectations (nil for none) records the
// version the write was computed from, so that reconciles reading that version from the cache
// are skipped until the cache catches up.
func NewWriter(c client.Client, obj client.Object, expectations *Expectations) *Writer {
	return &Writer{client: c, base: obj.DeepCopyObject().(client.Object), expectations: expectations}
}

// Patch writes obj's status if it differs from the base, and reports whether it sent a patch.
// On success obj holds what the API server returned.
func (w *Writer) Patch(ctx context.Context, obj client.Object) (bool, error) {
	if w.unchanged(obj) {
		return false, nil
	}
	if w.owner != nil {
		return w.patchOwned(ctx, obj)
	}
	patch, err := statusPatch(w.base, obj)
	if err != nil || patch == nil {
		return false, err
	}
	if err := w.client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return false, err
	}
	if w.expectations != nil {
		w.expectations.ExpectWritten(obj, w.base.GetResourceVersion())
	}
	return true, nil
}

// statusPatch is the JSON merge patch from base's status to obj's ({"status": {...}}), or nil
// when they are equal.
func statusPatch(base, obj client.Object) ([]byte, error) {
	from, err := statusDocument(base)
	if err != nil {
		return nil, err
	}
	to, err := statusDocument(obj)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, fmt.Errorf("computing the status patch of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	if string(patch) == "{}" {
		return nil, nil
	}
	return patch, nil
}

// statusDocument is {"status": <obj's status>} in obj's own JSON encoding.
func statusDocument(obj client.Object) ([]byte, error) {
	if status, ok := statusField(obj); ok {
		data, err := json.Marshal(struct {
			Status any `json:"status"`
		}{status})
		if err != nil {
			return nil, fmt.Errorf("encoding the status of %s: %w", client.ObjectKeyFromObject(obj), err)
		}
		return data, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	var parts struct {
		Status json.RawMessage `json:"status,omitempty"`
	}
	if err := json.Unmarshal(data, &parts); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	if len(parts.Status) == 0 {
		parts.Status = json.RawMessage("{}")
	}
	return json.Marshal(parts)
}

// unchanged tells, without encoding anything, that obj's status is exactly the base's: most
// reconciles end so, and identical values encode to identical documents, so there is nothing to
// patch (and nothing another writer's share could have been changed in). Anything else is left
// to the documents.
func (w *Writer) unchanged(obj client.Object) bool {
	base, ok := statusField(w.base)
	if !ok {
		return false
	}
	now, ok := statusField(obj)
	return ok && reflect.DeepEqual(base, now)
}

// statusField is a pointer to obj's Status field when obj is a struct with a struct field Status
// encoded as "status", as every kind with a status subresource is. Encoded alone it gives the
// bytes that encoding the whole object puts under "status" (encoding/json never omits a struct
// field, and through the pointer the same methods apply as within the object), without
// encoding the spec and metadata each status write would otherwise encode twice and throw away.
func statusField(obj client.Object) (any, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	v = v.Elem()
	f, ok := v.Type().FieldByName("Status")
	if !ok || !f.IsExported() || len(f.Index) != 1 || f.Type.Kind() != reflect.Struct {
		return nil, false
	}
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "status" {
		return nil, false
	}
	return v.Field(f.Index[0]).Addr().Interface(), true
}
