package ui

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// Timing of the event stream.
const (
	// debounce gathers the watch events of a burst (a Run's status writes) into one update.
	debounce = 300 * time.Millisecond
	// heartbeat keeps the connection open through idle periods.
	heartbeat = 20 * time.Second
	// rewatch is the pause before a watch that ended is opened again.
	rewatch = time.Second
)

// events streams server-sent events driven by watches of the requests and Runs in scope (with
// the user's credentials): "requests" carries the rendered rows of the requests table, and
// "changed" the namespace/name of each request whose request or Runs changed.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	changes := make(chan string, 256)
	var opts []client.ListOption
	if s.ns != "" {
		opts = append(opts, client.InNamespace(s.ns))
	}
	// A watch the user may not open fails the stream before it starts.
	reqW, err := s.c.Watch(ctx, &v1beta2.DynamoGraphDeploymentRequestList{}, opts...)
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	go s.pump(ctx, reqW, &v1beta2.DynamoGraphDeploymentRequestList{}, opts, changes)
	if runW, err := s.c.Watch(ctx, &v1beta2.DynamoGraphDeploymentRunList{}, opts...); err == nil {
		go s.pump(ctx, runW, &v1beta2.DynamoGraphDeploymentRunList{}, opts, changes)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	pending := map[string]bool{}
	var timer <-chan time.Time
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-changes:
			pending[key] = true
			if timer == nil {
				timer = time.After(debounce)
			}
		case <-beat.C:
			fmt.Fprint(w, ": heartbeat\n\n")
			flusher.Flush()
		case <-timer:
			timer = nil
			keys := make([]string, 0, len(pending))
			for k := range pending {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			clear(pending)
			if err := s.sendRows(ctx, w); err != nil {
				writeEvent(w, "failure", err.Error())
			}
			writeEvent(w, "changed", strings.Join(keys, "\n"))
			flusher.Flush()
		}
	}
}

func (s *Server) sendRows(ctx context.Context, w http.ResponseWriter) error {
	rows, err := s.requestRows(ctx)
	if err != nil {
		return err
	}
	var buf strings.Builder
	if err := s.pages["requests"].ExecuteTemplate(&buf, "rows", rows); err != nil {
		return err
	}
	writeEvent(w, "requests", buf.String())
	return nil
}

// writeEvent writes one server-sent event; each line of data is a data: line.
func writeEvent(w http.ResponseWriter, event, data string) {
	fmt.Fprintf(w, "event: %s\n", event)
	for line := range strings.SplitSeq(data, "\n") {
		fmt.Fprintf(w, "data: %s\n", line)
	}
	fmt.Fprint(w, "\n")
}

// pump forwards the request key of each watch event (a Run's request is its label) and opens
// the watch again when the API server ends it.
func (s *Server) pump(ctx context.Context, wi watch.Interface, list client.ObjectList, opts []client.ListOption, out chan<- string) {
	for {
		for ev := range wi.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok || ev.Type == watch.Error || ev.Type == watch.Bookmark {
				continue
			}
			name := obj.GetName()
			if _, isRun := obj.(*v1beta2.DynamoGraphDeploymentRun); isRun {
				name = obj.GetLabels()[v1beta2.LabelRequestName]
			}
			if name == "" {
				continue
			}
			select {
			case out <- obj.GetNamespace() + "/" + name:
			case <-ctx.Done():
				wi.Stop()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(rewatch):
		}
		var err error
		for {
			if wi, err = s.c.Watch(ctx, list, opts...); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(rewatch):
			}
		}
	}
}
