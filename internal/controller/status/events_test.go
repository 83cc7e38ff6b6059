package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
)

func TestEvents(t *testing.T) {
	queue := func() *Events {
		var q Events
		q.Normal("Created", "Create", "created x")
		q.Warning("Failed", "Start", "x failed: 100%")
		return &q
	}
	cases := []struct {
		name string
		// before runs between queueing and Emit.
		before func(*Events)
		want   []string
	}{
		{"emitted after the write, oldest first", func(*Events) {},
			[]string{"Normal Created created x", "Warning Failed x failed: 100%"}},
		{"dropped when the write failed", (*Events).Drop, nil},
		{"queued after a drop", func(q *Events) {
			q.Drop()
			q.Add(Event{Type: corev1.EventTypeNormal, Reason: "Retried", Action: "Create", Note: "again"})
		}, []string{"Normal Retried again"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := queue()
			tc.before(q)
			rec := events.NewFakeRecorder(10)
			q.Emit(rec, &corev1.Pod{})
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("emitted events (-want +got):\n%s", diff)
			}
			if len(q.Pending()) != 0 {
				t.Errorf("Emit left %d events queued", len(q.Pending()))
			}
		})
	}
}
