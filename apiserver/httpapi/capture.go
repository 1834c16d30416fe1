package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"platform.dev/platform/internal/config"
)

// Settings of HTTP payload capture, a Development-only diagnostic.
const (
	PayloadCaptureEnabledSetting   = "Platform:Diagnostics:PayloadCapture:Enabled"
	PayloadCaptureMaxLengthSetting = "Platform:Diagnostics:PayloadCapture:MaximumBodyLength"
	PayloadCaptureResponsesSetting = "Platform:Diagnostics:PayloadCapture:CaptureResponses"
	// DefaultCaptureBodyLength is the spec's default MaximumBodyLength.
	DefaultCaptureBodyLength = 16384
	// maxCaptureBodyLength bounds what an operator may configure.
	maxCaptureBodyLength = 1 << 20
	// captureRing is how many exchanges are kept, newest first; older ones are dropped.
	captureRing = 200
)

// Captured is one HTTP exchange as payload capture keeps it: bounded and redacted, never a
// secret value, password, token or resume token.
type Captured struct {
	ID             int64             `json:"id"`
	At             time.Time         `json:"at"`
	Method         string            `json:"method"`
	Path           string            `json:"path"`
	Query          string            `json:"query,omitempty"`
	Status         int               `json:"status"`
	DurationMillis int64             `json:"durationMillis"`
	RequestHeaders map[string]string `json:"requestHeaders,omitempty"`
	RequestBody    string            `json:"requestBody,omitempty"`
	// RequestTruncated: the body was longer than MaximumBodyLength.
	RequestTruncated bool   `json:"requestTruncated,omitempty"`
	ResponseBody     string `json:"responseBody,omitempty"`
	// ResponseTruncated: the response was longer than MaximumBodyLength.
	ResponseTruncated bool `json:"responseTruncated,omitempty"`
}

// PayloadCapture keeps the latest exchanges of the service API in memory for a Platform
// administrator to read. It exists only in Development.
type PayloadCapture struct {
	maxLength int
	responses bool
	mu        sync.Mutex
	next      int64
	ring      []Captured
}

// payloadCaptureFrom reads the settings: nil when capture is off. Enabled outside Development is
// a configuration error: startup fails with its reason.
func payloadCaptureFrom(cfg *config.Config) (*PayloadCapture, error) {
	enabled, err := boolSetting(cfg, PayloadCaptureEnabledSetting, false)
	if err != nil || !enabled {
		return nil, err
	}
	if cfg.Environment() != config.Development {
		return nil, fmt.Errorf("%s is true in %s: HTTP payload capture is for Development only (set PLATFORM_ENVIRONMENT=Development or turn it off)",
			PayloadCaptureEnabledSetting, cfg.Environment())
	}
	c := &PayloadCapture{maxLength: DefaultCaptureBodyLength}
	if v := strings.TrimSpace(cfg.Get(PayloadCaptureMaxLengthSetting)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCaptureBodyLength {
			return nil, fmt.Errorf("%s=%q: must be a number of bytes from 1 to %d", PayloadCaptureMaxLengthSetting, v, maxCaptureBodyLength)
		}
		c.maxLength = n
	}
	if c.responses, err = boolSetting(cfg, PayloadCaptureResponsesSetting, false); err != nil {
		return nil, err
	}
	return c, nil
}

// CheckPayloadCapture refuses a payload capture configuration that the server would refuse, so
// that `platform serve` fails at once, before it starts anything.
func CheckPayloadCapture(cfg *config.Config) error {
	_, err := payloadCaptureFrom(cfg)
	return err
}

func boolSetting(cfg *config.Config, key string, def bool) (bool, error) {
	v := strings.TrimSpace(cfg.Get(key))
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: must be true or false", key, v)
	}
	return b, nil
}

// List is the kept exchanges, newest first, those whose path, query or bodies contain contains
// (all when empty), at most take.
func (c *PayloadCapture) List(contains string, take int) []Captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []Captured{}
	for i := len(c.ring) - 1; i >= 0 && len(out) < take; i-- {
		e := c.ring[i]
		if contains == "" || strings.Contains(e.Path, contains) || strings.Contains(e.Query, contains) ||
			strings.Contains(e.RequestBody, contains) || strings.Contains(e.ResponseBody, contains) {
			out = append(out, e)
		}
	}
	return out
}

func (c *PayloadCapture) keep(e Captured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	e.ID = c.next
	if len(c.ring) == captureRing {
		c.ring = append(c.ring[:0], c.ring[1:]...)
	}
	c.ring = append(c.ring, e)
}

// Wrap captures the exchanges of next. The hub's WebSockets and streamed responses pass
// through untouched, and what is read or written is never changed.
func (c *PayloadCapture) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") || r.Header.Get("Upgrade") != "" || strings.HasPrefix(r.URL.Path, "/api/diagnostics/") {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		in := &limitedBuffer{max: c.maxLength}
		if body := r.Body; body != nil && body != http.NoBody {
			// The bounded head is read first, so that a request refused before its body is read
			// is seen too; the handler reads the same bytes, then the rest as it streams.
			head, err := io.ReadAll(io.LimitReader(body, int64(c.maxLength)))
			_, _ = in.Write(head)
			rest := io.Reader(body)
			if err != nil {
				rest = errReader{err}
			}
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), &countingReader{rest, in}), body}
		}
		rec := &captureWriter{ResponseWriter: w, status: http.StatusOK}
		if c.responses {
			rec.out = &limitedBuffer{max: c.maxLength}
		}
		next.ServeHTTP(rec, r)
		// A body the handler did not read to its end is as long as it said it was.
		in.total = max(in.total, int(min(r.ContentLength, 1<<40)))
		e := Captured{
			At: start.UTC(), Method: r.Method, Path: r.URL.Path, Query: redactQuery(r.URL.RawQuery), Status: rec.status,
			DurationMillis: time.Since(start).Milliseconds(), RequestHeaders: safeHeaders(r.Header),
		}
		e.RequestBody, e.RequestTruncated = redactBody(r.URL.Path, r.Header.Get("Content-Type"), in)
		if rec.out != nil && !rec.streamed {
			e.ResponseBody, e.ResponseTruncated = redactBody(r.URL.Path, w.Header().Get("Content-Type"), rec.out)
		}
		c.keep(e)
	})
}

// countingReader counts what the handler reads past the captured head, so that a longer body is
// known to be cut.
type countingReader struct {
	r  io.Reader
	in *limitedBuffer
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.in.total += n
	return n, err
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// limitedBuffer keeps the first max bytes written to it and counts the rest.
type limitedBuffer struct {
	bytes.Buffer
	max   int
	total int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.total += len(p)
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

type captureWriter struct {
	http.ResponseWriter
	status   int
	wrote    bool
	out      *limitedBuffer
	streamed bool
}

func (w *captureWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
		w.streamed = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.out != nil && !w.streamed {
		_, _ = w.out.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController flush and hijack through the capture.
func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes on for handlers that assert http.Flusher.
func (w *captureWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// capturedHeaders are the request headers capture keeps as they are; credentials are only noted.
var capturedHeaders = []string{"Accept", "Content-Type", "Content-Length", "If-Match", "If-None-Match", "Origin", "User-Agent", WorkspaceHeader, "X-Pack-File-Name"}

func safeHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for _, name := range capturedHeaders {
		if v := h.Get(name); v != "" {
			out[name] = v
		}
	}
	for _, name := range []string{"Authorization", "Cookie"} {
		if h.Get(name) != "" {
			out[name] = redacted
		}
	}
	return out
}

const redacted = "[redacted]"

// sensitiveName is a field, parameter or form key whose value capture never keeps.
var sensitiveName = regexp.MustCompile(`(?i)(password|token|secret|api_?key|authorization|credential|cookie|code_verifier|^code$|^value$)`)

// sensitiveJSON matches a JSON member whose name is sensitive, with its string value (also one
// cut off by truncation), so that a value is redacted even in a body that does not parse.
var sensitiveJSON = regexp.MustCompile(`(?i)("[a-z0-9_]*(?:password|token|secret|api_?key|authorization|credential|cookie|code_verifier)[a-z0-9_]*"\s*:\s*)"(?:[^"\\]|\\.)*"?`)

// secretValueJSON is the value member of a body sent to a Secret or Vault route.
var secretValueJSON = regexp.MustCompile(`("value"\s*:\s*)"(?:[^"\\]|\\.)*"?`)

func redactBody(path, contentType string, b *limitedBuffer) (string, bool) {
	if b.total == 0 {
		return "", false
	}
	truncated := b.total > b.Len()
	media := strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	switch {
	case strings.HasSuffix(media, "json"):
		text := sensitiveJSON.ReplaceAllString(b.String(), `${1}"`+redacted+`"`)
		if strings.Contains(path, "/secrets") || strings.Contains(path, "/vault") {
			text = secretValueJSON.ReplaceAllString(text, `${1}"`+redacted+`"`)
		}
		// Redaction may lengthen the text; what is kept stays within the bound.
		if len(text) > b.max {
			text, truncated = text[:b.max], true
		}
		return text, truncated
	case media == "application/x-www-form-urlencoded":
		if truncated {
			return fmt.Sprintf("[form body of %d bytes, longer than MaximumBodyLength: not kept]", b.total), true
		}
		return redactQuery(b.String()), false
	case strings.HasPrefix(media, "text/") && media != "text/event-stream":
		return b.String(), truncated
	}
	return fmt.Sprintf("[%s body of %d bytes: not kept]", cmpOr(media, "binary"), b.total), truncated
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return "[query that does not parse: not kept]"
	}
	for key := range values {
		if sensitiveName.MatchString(key) {
			values[key] = []string{redacted}
		}
	}
	return values.Encode()
}
