package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-logr/logr"
)

// answerProblems makes every answer of next Problem Details. A path under /api/ with a segment
// that no object can be named (a dot segment or an encoded slash, plain or percent-encoded) is
// 404 before routing: the mux would redirect it to another route and the kube client refuse it.
// The plain-text errors of net/http (the mux's 404 and 405, http.Error) are rewritten. Every
// answer of 500 or more is logged to log, with its cause (see failures.go). A browser's page that
// no route serves is notFoundPage, when there is one.
func answerProblems(next, notFoundPage http.Handler, log logr.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") && !namable(r.URL.EscapedPath()) {
			WriteProblem(w, http.StatusNotFound, "no object has the name this path gives: names are never . or .. and hold no slash")
			return
		}
		f := &failure{}
		// The mux records the route pattern on the request it is given: this one.
		r = r.WithContext(context.WithValue(r.Context(), failureKey{}, f))
		pw := &problemWriter{ResponseWriter: w, pageFor404: notFoundPage != nil && wantsPage(r)}
		next.ServeHTTP(pw, r)
		if pw.status == http.StatusNotFound && pw.pageFor404 {
			notFoundPage.ServeHTTP(w, r)
			return
		}
		if pw.status != 0 {
			detail := strings.TrimSpace(pw.text.String())
			switch pw.status {
			case http.StatusNotFound:
				detail = fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)
			case http.StatusMethodNotAllowed:
				detail = fmt.Sprintf("%s %s is not allowed; allowed: %s", r.Method, r.URL.Path, w.Header().Get("Allow"))
			}
			WriteProblem(w, pw.status, detail)
			pw.code = pw.status
			pw.answer.Reset()
			pw.answer.WriteString(detail)
		}
		switch {
		case pw.code < http.StatusInternalServerError || probe(r):
		case r.Context().Err() != nil:
			// The client hung up before the answer (a page left while it loaded): what failed is
			// its wait, not the server.
			log.V(1).Info("request abandoned by its client", "method", r.Method, "route", r.Pattern)
		default:
			logFailure(log, r, pw.code, f, pw.answer.String())
		}
	})
}

// namable reports whether every segment of an escaped path (a trailing slash aside) is a name
// an object could have.
func namable(escaped string) bool {
	rest := strings.TrimPrefix(escaped, "/")
	for {
		seg, after, more := strings.Cut(rest, "/")
		name := seg
		// Only a segment with an escape is unescaped (which allocates): every request passes here.
		if strings.Contains(seg, "%") {
			var err error
			if name, err = url.PathUnescape(seg); err != nil {
				return false
			}
		}
		switch {
		case name == "." || name == "..", strings.ContainsAny(name, `/\`):
			return false
		case name == "" && more:
			return false
		}
		if !more {
			return true
		}
		rest = after
	}
}

// problemWriter holds back the plain-text error that net/http writes (http.Error sets these two
// headers) so that the handler above answers Problem Details instead.
type problemWriter struct {
	http.ResponseWriter
	// pageFor404 holds back a 404 even when it is not plain text: a browser's page gets the
	// not-found page instead.
	pageFor404 bool
	wrote      bool
	status     int
	text       strings.Builder
	// code is the status of the answer; answer the start of its body when it is a 5xx, for
	// the log line of a failure whose cause no handler recorded.
	code   int
	answer strings.Builder
}

func (w *problemWriter) WriteHeader(code int) {
	h := w.Header()
	if !w.wrote && code >= 400 && strings.HasPrefix(h.Get("Content-Type"), "text/plain") && h.Get("X-Content-Type-Options") == "nosniff" {
		w.wrote, w.status = true, code
		return
	}
	if !w.wrote && code == http.StatusNotFound && w.pageFor404 {
		for k := range h {
			delete(h, k)
		}
		w.wrote, w.status = true, code
		return
	}
	if !w.wrote && code >= http.StatusOK {
		w.code = code
	}
	w.wrote = w.wrote || code >= http.StatusOK
	w.ResponseWriter.WriteHeader(code)
}

func (w *problemWriter) Write(p []byte) (int, error) {
	if w.status != 0 {
		if w.text.Len() < 512 {
			w.text.Write(p[:min(len(p), 512)])
		}
		return len(p), nil
	}
	if !w.wrote {
		w.wrote, w.code = true, http.StatusOK
	}
	if w.code >= http.StatusInternalServerError && w.answer.Len() < 512 {
		w.answer.Write(p[:min(len(p), 512-w.answer.Len())])
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes on, for server-sent events.
func (w *problemWriter) Flush() {
	if w.status == 0 {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Hijack passes on, for WebSocket upgrades by libraries that assert http.Hijacker.
func (w *problemWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *problemWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wantsPage tells a browser's navigation to a page (GET or HEAD, Accept: text/html, outside
// /api/) from an API client's call.
func wantsPage(r *http.Request) bool {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || strings.HasPrefix(r.URL.Path, "/api/") {
		return false
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if media, _, _ := strings.Cut(strings.TrimSpace(part), ";"); strings.TrimSpace(media) == "text/html" {
			return true
		}
	}
	return false
}

// probe tells the health probes, whose 503 says "not ready yet" (while starting, while the store
// does not answer) to whoever polls them: a state they report, not a failure to log.
func probe(r *http.Request) bool {
	return r.URL.Path == "/readyz" || r.URL.Path == "/livez"
}
