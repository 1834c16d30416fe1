package listener

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// plainErrorHeaders are the headers of the errors that net/http's server writes itself, before
// any handler runs (a malformed request line or header, headers too large, an unsupported
// transfer encoding). A handler's answer always carries a Date header; these never do.
const plainErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// Problems returns a listener whose connections turn the plain-text errors that net/http writes
// itself into Problem Details (RFC 9457), as every other answer of an API is. An unsupported
// transfer encoding, which net/http answers 501, is the client's doing and answers 400.
func Problems(l net.Listener) net.Listener { return problemListener{l} }

type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return problemConn{c}, nil
}

type problemConn struct{ net.Conn }

func (c problemConn) Write(p []byte) (int, error) {
	if rewritten, ok := asProblem(p); ok {
		if _, err := c.Conn.Write(rewritten); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// asProblem rewrites one of net/http's own plain-text error responses.
func asProblem(p []byte) ([]byte, bool) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return nil, false
	}
	head, text, ok := bytes.Cut(p, []byte(plainErrorHeaders))
	if !ok || bytes.Contains(head, []byte("\r\n")) {
		return nil, false // a handler's answer: more headers than these
	}
	status, err := strconv.Atoi(string(head[len("HTTP/1.1 "):min(len(head), len("HTTP/1.1 ")+3)]))
	if err != nil || status < 400 {
		return nil, false
	}
	detail := strings.TrimSpace(string(text))
	if status == http.StatusNotImplemented {
		status = http.StatusBadRequest
	}
	body, _ := json.Marshal(struct {
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{http.StatusText(status), status, detail})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body), true
}
