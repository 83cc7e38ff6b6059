package reporter

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
)

// DefaultAPIRetryTimeout bounds how long the reporter keeps retrying API calls that failed for a
// transient reason (the API server restarting, a network blip, throttling) before giving up.
const DefaultAPIRetryTimeout = 3 * time.Minute

// transient tells whether an error may go away by itself: the API server could not be reached or
// answered that it is busy or unavailable. Everything else (not found, forbidden, invalid, a
// foreign Candidate, an unreadable result) is final.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
			apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err)
	}
	// Network failures reach here wrapped in *url.Error by the HTTP client (a file error would
	// also pass as a net.Error, so that interface is not used).
	// A response body cut short (the API server killed mid-response) comes wrapped by client-go
	// ("unexpected error when reading response body. Please retry") and again by the REST
	// mapper ("failed to get server groups"), which utilnet.IsProbableEOF does not unwrap.
	var urlErr *url.Error
	var streamErr http2.StreamError
	return errors.As(err, &urlErr) || utilnet.IsConnectionRefused(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.As(err, &streamErr) ||
		strings.Contains(err.Error(), "connection refused") || discovery.IsGroupDiscoveryFailedError(err)
}

// retry runs f until it succeeds, fails for a reason that is not transient, or timeout passes,
// with exponential backoff up to 5 s. f must be idempotent.
func retry(ctx context.Context, timeout time.Duration, log func(err error, next time.Duration), f func() error) error {
	deadline := time.Now().Add(timeout)
	backoff := 200 * time.Millisecond
	for {
		err := f()
		if err == nil || !transient(err) || time.Now().Add(backoff).After(deadline) {
			return err
		}
		if log != nil {
			log(err, backoff)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}
