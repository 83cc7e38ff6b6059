package reporter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SearchWatcher tells the reporter when the search container has ended, and with which exit
// code. Wait blocks until then, or returns ctx.Err().
type SearchWatcher interface {
	Wait(ctx context.Context) (exitCode int, err error)
}

// PodWatcher watches the reporter's own pod (a field selector on metadata.name) until the
// search container is terminated, and returns its exit code.
//
// Why the own pod and not native sidecars: the reporter must run after the search has written
// its last file and before the Job completes. A native sidecar (an init container with
// restartPolicy Always) is stopped by the kubelet as soon as the main container exits, which is
// exactly when the final publication starts; it would also not fail the Job when publication
// fails. As a second regular container the reporter keeps the pod (and the Job) alive until it
// exits, and its exit code tells the Job whether the result was published. The pod status is
// the authoritative "search ended" signal: the kubelet sets the terminated state only after the
// process exited, so every file it wrote is visible in the shared emptyDir.
type PodWatcher struct {
	Client    client.WithWatch
	Namespace string
	PodName   string
	Container string
	// Resync bounds how long a single watch lasts before it is re-established (default 5m).
	Resync time.Duration
}

// Wait implements SearchWatcher.
func (w *PodWatcher) Wait(ctx context.Context) (int, error) {
	resync := w.Resync
	if resync <= 0 {
		resync = 5 * time.Minute
	}
	sel := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", w.PodName)}
	backoff := 200 * time.Millisecond
	for {
		// A list first: the container may have ended before the watch started.
		var pods corev1.PodList
		err := w.Client.List(ctx, &pods, client.InNamespace(w.Namespace), sel)
		if err == nil {
			for i := range pods.Items {
				if code, done := searchExit(&pods.Items[i], w.Container); done {
					return code, nil
				}
			}
			wctx, cancel := context.WithTimeout(ctx, resync)
			var code int
			var done bool
			code, done, err = w.watchOnce(wctx, sel, pods.ResourceVersion)
			cancel()
			if done {
				return code, nil
			}
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(backoff):
		}
		if err != nil && backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

func (w *PodWatcher) watchOnce(ctx context.Context, sel client.ListOption, rv string) (int, bool, error) {
	var list corev1.PodList
	wi, err := w.Client.Watch(ctx, &list, client.InNamespace(w.Namespace), sel, &client.ListOptions{Raw: rawWatchOptions(rv)})
	if err != nil {
		return 0, false, err
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, false, nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return 0, false, nil
			}
			if ev.Type == watch.Error {
				return 0, false, fmt.Errorf("watch error: %v", ev.Object)
			}
			if pod, isPod := ev.Object.(*corev1.Pod); isPod {
				if code, done := searchExit(pod, w.Container); done {
					return code, true, nil
				}
			}
		}
	}
}

// searchExit reports the exit code of container once it is terminated.
func searchExit(pod *corev1.Pod, container string) (int, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container && cs.State.Terminated != nil {
			return int(cs.State.Terminated.ExitCode), true
		}
	}
	return 0, false
}

// FileWatcher waits until a file exists and holds the search's exit code (a decimal integer).
// It is the test and local-run alternative to PodWatcher (flag --search-exit-file): a wrapper
// around the search command can write "$?" there when it exits.
type FileWatcher struct {
	Path     string
	Interval time.Duration
}

// Wait implements SearchWatcher.
func (w *FileWatcher) Wait(ctx context.Context) (int, error) {
	interval := w.Interval
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	for {
		data, err := os.ReadFile(w.Path)
		if err == nil && len(strings.TrimSpace(string(data))) > 0 {
			code, perr := strconv.Atoi(strings.TrimSpace(string(data)))
			if perr != nil {
				return 0, fmt.Errorf("%s: %q is not an exit code", w.Path, strings.TrimSpace(string(data)))
			}
			return code, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// ChanWatcher is a SearchWatcher driven by a channel (tests).
type ChanWatcher <-chan int

// Wait implements SearchWatcher.
func (c ChanWatcher) Wait(ctx context.Context) (int, error) {
	select {
	case code := <-c:
		return code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
