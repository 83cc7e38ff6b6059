package apiretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"golang.org/x/net/http2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "nvidia.com", Resource: "dynamographdeploymentruns"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Err: errors.New("connect: connection refused")}}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("getting Run: %w", refused), true},
		{"service unavailable", apierrors.NewServiceUnavailable("starting"), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"conflict", apierrors.NewConflict(gr, "r", errors.New("changed")), true},
		// The API server killed mid-response, as client-go and the REST mapper wrap it.
		{"body cut short", fmt.Errorf("getting Run ns/r: %w", fmt.Errorf("failed to get server groups: %w",
			fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", io.ErrUnexpectedEOF))), true},
		{"http2 stream reset", fmt.Errorf("stream error when reading response body, may be caused by closed connection. Please retry. Original error: %w",
			http2.StreamError{StreamID: 1, Code: http2.ErrCodeInternal}), true},
		// Discovery missing the CRD's group right after an API server restart, as the REST mapper
		// wraps it.
		{"group discovery failed, wrapped", fmt.Errorf("getting Run ns/r: %w", &discovery.ErrGroupDiscoveryFailed{
			Groups: map[schema.GroupVersion]error{{Group: "nvidia.com", Version: "v1beta2"}: &meta.NoResourceMatchError{PartialResource: schema.GroupVersionResource{Group: "nvidia.com", Version: "v1beta2"}}}}), true},
		{"no kind match", fmt.Errorf("mapping: %w", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "nvidia.com", Kind: "DynamoGraphDeploymentRun"}}), true},
		{"not found", apierrors.NewNotFound(gr, "r"), false},
		{"forbidden", apierrors.NewForbidden(gr, "r", errors.New("no")), false},
		{"foreign candidate", errors.New("a Candidate with this name exists and does not belong to Run r"), false},
		{"canceled", context.Canceled, false},
		{"unreadable result file", fmt.Errorf("result cannot be read: %w", &os.PathError{Op: "open", Path: "/x", Err: errors.New("no such file or directory")}), false},
	}
	for _, tc := range cases {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: transient = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRetryStopsOnSuccessAndOnFinalErrors(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := Do(ctx, time.Minute, nil, func() error {
		calls++
		if calls < 3 {
			return apierrors.NewServiceUnavailable("restarting")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("want success on the third call, got %v after %d calls", err, calls)
	}
	calls = 0
	final := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no"))
	if err := Do(ctx, time.Minute, nil, func() error { calls++; return final }); !apierrors.IsForbidden(err) || calls != 1 {
		t.Fatalf("a final error must not be retried: %v after %d calls", err, calls)
	}
	calls = 0
	if err := Do(ctx, 500*time.Millisecond, nil, func() error { calls++; return apierrors.NewServiceUnavailable("down") }); err == nil || calls < 2 {
		t.Fatalf("want the last error after the timeout, got %v after %d calls", err, calls)
	}
}

// TestRetryForbiddenAfterOutage: an API server that comes back answers Forbidden until its
// authorizer has synced; after a connection failure that is retried, never before.
func TestRetryForbiddenAfterOutage(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Err: errors.New("connect: connection refused")}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no"))
	answers := []error{refused, forbidden, forbidden, nil}
	calls := 0
	err := Do(context.Background(), time.Minute, nil, func() error { calls++; return answers[calls-1] })
	if err != nil || calls != 4 {
		t.Errorf("err = %v after %d calls, want success after 4", err, calls)
	}
}
