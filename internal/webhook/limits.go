package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
)

// Limits bound what one request costs the webhook server, on every path it serves (the
// admission webhooks and the CRD conversion webhook /convert alike). Its callers are not
// authenticated: anything that reaches the port may send a request (docs/operate/security.md).
type Limits struct {
	// MaxBodyBytes is the largest request body read. A larger body is answered 413 Request
	// Entity Too Large after at most MaxBodyBytes+1 bytes were read; the rest is never read
	// into memory (the connection is closed).
	MaxBodyBytes int64
	// ReadTimeout bounds the time from the start of the handler (the headers were read) until
	// the whole body was read. A body still arriving then is answered 408 Request Timeout and
	// the connection is closed (slow-loris).
	ReadTimeout time.Duration
}

// LimitsFromConfig are the limits of a defaulted configuration.
func LimitsFromConfig(cfg *v1alpha1.OperatorConfiguration) Limits {
	return Limits{MaxBodyBytes: cfg.Webhook.MaxRequestBodySize.Value(), ReadTimeout: cfg.Webhook.RequestReadTimeout.Duration}
}

// NewServer is controller-runtime's webhook server whose every registered handler is wrapped
// in Limit: controller-runtime's server has no body limit on /convert and no read timeout
// (only a header timeout), and its http.Server is not configurable, so the limits are applied
// where it lets us in, at Register. Every path is registered through Register (the webhook
// builder registers /convert there too).
func NewServer(opts webhook.Options, limits Limits) webhook.Server {
	return &limitedServer{Server: webhook.NewServer(opts), limits: limits}
}

type limitedServer struct {
	webhook.Server
	limits Limits
}

// Register registers hook at path, wrapped in the server's limits.
func (s *limitedServer) Register(path string, hook http.Handler) {
	s.Server.Register(path, Limit(hook, s.limits))
}

// Limit wraps next so that it sees the request body only once the body has been read whole,
// within l.ReadTimeout and l.MaxBodyBytes; otherwise the client gets 408 or 413 and next is
// never called. next then reads the body from memory (at most MaxBodyBytes).
func Limit(next http.Handler, l Limits) http.Handler {
	log := ctrl.Log.WithName("webhook-limits")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.ReadTimeout > 0 {
			// Both HTTP/1.1 and HTTP/2 (per stream) honour the read deadline; it ends every read
			// of the body after it, however slowly the bytes trickle.
			if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(l.ReadTimeout)); err != nil {
				log.Error(err, "setting the read deadline", "path", r.URL.Path)
			}
		}
		if r.ContentLength > l.MaxBodyBytes {
			// Declared too large: refused without reading a byte of it.
			tooLarge(w, r, l.MaxBodyBytes)
			return
		}
		var buf bytes.Buffer
		if r.ContentLength > 0 {
			buf.Grow(int(r.ContentLength))
		}
		// MaxBytesReader reads at most MaxBodyBytes+1 bytes and makes the server close the
		// connection after the response instead of draining the rest.
		_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, l.MaxBodyBytes))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			tooLarge(w, r, l.MaxBodyBytes)
			return
		case isTimeout(err):
			closeConnection(w, r)
			http.Error(w, fmt.Sprintf("request body not received within %s", l.ReadTimeout), http.StatusRequestTimeout)
			return
		case err != nil:
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if l.ReadTimeout > 0 {
			// The deadline bounds the body only: the server's background read of the connection
			// must not time out (and cancel the request's context) under a slow handler.
			_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		}
		r.Body = io.NopCloser(&buf)
		r.ContentLength = int64(buf.Len())
		next.ServeHTTP(w, r)
	})
}

func tooLarge(w http.ResponseWriter, r *http.Request, limit int64) {
	closeConnection(w, r)
	http.Error(w, fmt.Sprintf("request body larger than %d bytes", limit), http.StatusRequestEntityTooLarge)
}

// closeConnection makes an HTTP/1 server close the connection after the response (an HTTP/2
// stream whose body is left unread is reset by the server).
func closeConnection(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
