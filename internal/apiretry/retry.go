// Package apiretry retries Kubernetes API calls that failed for a transient reason, for the
// processes of a search Job (the reporter and the input init container), which must ride out an
// API server restart without failing the search.
package apiretry

import (
	"context"
	"errors"
	"io"
	"math"
	"net/url"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
)

// DefaultTimeout bounds how long Do keeps retrying API calls that failed for a
// transient reason (the API server restarting, a network blip, throttling) before giving up.
const DefaultTimeout = 3 * time.Minute

// Transient tells whether an error may go away by itself: the API server could not be reached or
// answered that it is busy or unavailable. Everything else (not found, forbidden, invalid, a
// foreign Candidate, an unreadable result) is final.
func Transient(err error) bool {
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
	// Right after an API server restart, discovery can miss the CRD's group for a moment: the REST
	// mapper then fails with a (wrapped) group-discovery or no-match error, although the Run the
	// reporter belongs to exists. discovery.IsGroupDiscoveryFailedError does not unwrap.
	var urlErr *url.Error
	var streamErr http2.StreamError
	var discoveryErr *discovery.ErrGroupDiscoveryFailed
	return errors.As(err, &urlErr) || utilnet.IsConnectionRefused(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.As(err, &streamErr) ||
		strings.Contains(err.Error(), "connection refused") || errors.As(err, &discoveryErr) || meta.IsNoMatchError(err)
}

// apiBackoff spaces the attempts of Do: 200 ms, doubling up to 5 s, then every 5 s. Steps
// is unbounded because the overall bound is a timeout, not a number of attempts.
var apiBackoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: math.MaxInt32}

// Do runs f until it succeeds, fails for a reason that is not transient, timeout passes or
// ctx is done, waiting apiBackoff between attempts, and returns f's last error. f must be
// idempotent. log, if set, is told of every transient error that is retried.
func Do(ctx context.Context, timeout time.Duration, log func(err error), f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	restarting := false
	// immediate: f runs at least once, even on a done ctx; sliding: the wait starts after f.
	_ = apiBackoff.DelayFunc().Until(ctx, true, true, func(context.Context) (bool, error) {
		last = f()
		// An API server that was just unreachable or unavailable answers Forbidden until its
		// authorizer has loaded the RBAC objects again (the chaos suite's API server restart
		// hit this in the search pod); after such an outage Forbidden is retried as well.
		retryable := Transient(last) || (restarting && apierrors.IsForbidden(last))
		if last == nil || !retryable {
			return true, nil
		}
		if Transient(last) && !apierrors.IsConflict(last) && !apierrors.IsTooManyRequests(last) {
			restarting = true
		}
		if log != nil {
			log(last)
		}
		return false, nil
	})
	return last
}
