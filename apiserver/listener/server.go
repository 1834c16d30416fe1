package listener

import (
	"net"
	"net/http"
	"time"
)

// The bounds in time of every connection of the platform's HTTP servers (the service API and the
// Workplace host). Bodies and answers are not bounded: a waiting request or a run stream may last.
const (
	// ReadHeaderTimeout is how long a client has to send a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout is how long a keep-alive connection stays open without a request.
	IdleTimeout = time.Minute
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 64 << 10
)

// Server is an http.Server for handler with the bounds above, whose handlers can Keep their
// connection (ConnContext). Serve it on a listener of Bound.
func Server(handler http.Handler) *http.Server {
	return &http.Server{Handler: handler, ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: IdleTimeout,
		MaxHeaderBytes: MaxHeaderBytes, ConnContext: ConnContext}
}

// Bound is l as every HTTP server of the platform listens: at most max connections open, the
// quietest closed to make room (Limit), and net/http's own errors as Problem Details (Problems).
func Bound(l net.Listener, max int) net.Listener { return Limit(Problems(l), max) }
