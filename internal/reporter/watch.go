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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SearchWatcher tells the reporter when the search container has ended, and with which exit
// code. Wait blocks until then, or returns ctx.Err().
type SearchWatcher interface {
	Wait(ctx context.Context) (exitCode int, err error)
}

// PodWatcher watches the reporter's own pod (a field selector on metadata.name) until the
// watched container (the search, or the baseline) is terminated, and returns its exit code. The
// pod status is the authoritative "search ended" signal: the kubelet sets the terminated state
// only after the process exited, so every file it wrote is visible in the shared emptyDir. A
// reporter the kubelet restarted after the search ended sees the terminated state at once, and
// publishes from the same output again.
type PodWatcher struct {
	Client    client.WithWatch
	Namespace string
	PodName   string
	Container string
}

// Wait implements SearchWatcher. An informer lists, then watches, the own pod and lists again
// whenever the watch cannot be resumed (the API server restarted, the resource version
// expired), so a container that ended before the watch started or during an outage is seen too.
func (w *PodWatcher) Wait(ctx context.Context) (int, error) {
	var code int
	ended := func(ev watch.Event) (bool, error) {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		var done bool
		code, done = searchExit(pod, w.Container)
		return done, nil
	}
	if _, err := watchtools.UntilWithSync(ctx, w.listWatch(), &corev1.Pod{}, nil, ended); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	return code, nil
}

// listWatch lists and watches the pod named w.PodName in w.Namespace.
func (w *PodWatcher) listWatch() *cache.ListWatch {
	name := fields.OneTermEqualSelector("metadata.name", w.PodName).String()
	opts := func(o *metav1.ListOptions) *client.ListOptions {
		o.FieldSelector = name
		return &client.ListOptions{Namespace: w.Namespace, Raw: o, Limit: o.Limit, Continue: o.Continue}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			var pods corev1.PodList
			return &pods, w.Client.List(ctx, &pods, opts(&o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return w.Client.Watch(ctx, &corev1.PodList{}, opts(&o))
		},
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
