package sandboxtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

// ServingFrontend starts, for the test's duration, an OpenAI-compatible frontend on a loopback
// port of the node that lists model and streams every chat completion as a few chunks at once:
// what a verification measures when the test, not the sandbox's realizer, plays the deployment.
// It returns the port.
func ServingFrontend(t testing.TB, model string) int {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}]}`, model)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		flusher, _ := w.(http.Flusher)
		for i := range 8 {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token%d \"}}]}\n\n", model, i)
			if flusher != nil {
				flusher.Flush()
			}
			time.Sleep(2 * time.Millisecond)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	return Serve(t, mux)
}

// Serve serves h on a free loopback port for the test's duration and returns the port.
func Serve(t testing.TB, h http.Handler) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// ReadyBehind plays the Dynamo operator for a deployment of a namespace the realizer leaves
// alone: once autoApply created DynamoGraphDeployment dgdName (waited for up to timeout), its
// frontend Service is created on port (where the test serves a frontend) as the Dynamo operator
// creates it (ClusterIP, owned by the deployment) and the deployment is made Ready.
func (e *Env) ReadyBehind(t testing.TB, ns, dgdName string, port int, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(promote.GVK)
	WaitFor(t, timeout, 250*time.Millisecond, dgdName+" created", func(ctx context.Context) (bool, string, error) {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: dgdName}, dgd)
		return err == nil, "absent", client.IgnoreNotFound(err)
	})
	svc := builders.FrontendService(dgd, dgd.GetAPIVersion(), int32(port)) //nolint:gosec // a port
	if err := e.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(dgd.Object, "successful", "status", "state")
	_ = unstructured.SetNestedSlice(dgd.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "Test",
		"message": "ready behind a test frontend", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}, "status", "conditions")
	if err := e.Client.Status().Update(ctx, dgd); err != nil {
		t.Fatal(err)
	}
}
