package listener_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/listener"
)

// serve answers every request with "ok" on a listener capped at max connections.
func serve(t *testing.T, max int) (net.Listener, string) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := listener.Limit(raw, max)
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })}
	go server.Serve(l)
	t.Cleanup(func() { server.Close() })
	return l, raw.Addr().String()
}

// idleClient makes one request on a keep-alive connection and keeps the connection open.
func idleClient(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return c
}

// closed reports whether the server closed c.
func closed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF
}

func get(addr string) (string, error) {
	resp, err := (&http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + addr)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Idle keep-alive connections that fill a listener's cap cannot lock a new client out: the one
// silent longest is closed to make room, and the listener never holds more than its cap.
func TestAListenerAtItsCapClosesTheQuietestConnectionForANewcomer(t *testing.T) {
	g := NewWithT(t)
	l, addr := serve(t, 4)
	// The first is quiet well before the others: on a loaded machine the server may record its
	// last write after a later client's, so back-to-back clients have no dependable order.
	idle := []net.Conn{idleClient(t, addr)}
	time.Sleep(600 * time.Millisecond)
	for range 3 {
		idle = append(idle, idleClient(t, addr))
	}
	g.Eventually(func() int { return listener.Open(l) }).Should(Equal(4))
	time.Sleep(600 * time.Millisecond) // the first is past the second a busy connection is spared

	g.Expect(get(addr)).To(Equal("ok"))
	// The eviction may land just after the newcomer's answer on a loaded machine.
	g.Eventually(func() bool { return closed(idle[0]) }).WithTimeout(3*time.Second).Should(BeTrue(), "the connection silent longest made room")
	g.Expect(listener.Open(l)).To(BeNumerically("<=", 4))
}

// When every connection at the cap has just been used, the newcomer is the one refused: the
// clients being served keep their connections.
func TestAListenerAtItsCapOfBusyConnectionsRefusesTheNewcomer(t *testing.T) {
	g := NewWithT(t)
	_, addr := serve(t, 2)
	busy := []net.Conn{idleClient(t, addr), idleClient(t, addr)}
	_, err := get(addr)
	g.Expect(err).To(HaveOccurred())
	for _, c := range busy {
		g.Expect(closed(c)).To(BeFalse())
	}
}

// A connection its handler keeps (a WebSocket) is never closed to make room, however quiet: the
// quiet keep-alive beside it is closed instead.
func TestAListenerAtItsCapNeverClosesAKeptConnection(t *testing.T) {
	g := NewWithT(t)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	l := listener.Limit(raw, 2)
	server := &http.Server{ConnContext: listener.ConnContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/keep" {
			listener.Keep(r.Context())
		}
		io.WriteString(w, "ok")
	})}
	go server.Serve(l)
	t.Cleanup(func() { server.Close() })
	addr := raw.Addr().String()

	kept, err := net.Dial("tcp", addr)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { kept.Close() })
	_, err = io.WriteString(kept, "GET /keep HTTP/1.1\r\nHost: x\r\n\r\n")
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(kept), nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	idle := idleClient(t, addr)
	time.Sleep(1100 * time.Millisecond)

	g.Expect(get(addr)).To(Equal("ok"))
	g.Expect(closed(idle)).To(BeTrue(), "the quiet keep-alive made room")
	g.Expect(closed(kept)).To(BeFalse(), "the kept connection stays")
}

// A quarter of the descriptors (at least 256) stays for the store and etcd; the service API gets
// two thirds of the rest.
func TestTheBudgetLeavesHeadroomForTheStoreAndEtcd(t *testing.T) {
	g := NewWithT(t)
	b := listener.BudgetOf(20000)
	g.Expect(b.ServiceAPI + b.KubeAPI).To(BeNumerically("<=", 15000))
	g.Expect(b.ServiceAPI).To(Equal(10000))
	g.Expect(listener.BudgetOf(1024).ServiceAPI + listener.BudgetOf(1024).KubeAPI).To(BeNumerically("<=", 768))
	g.Expect(listener.BudgetOf(100)).To(Equal(listener.Budget{ServiceAPI: 32, KubeAPI: 32}))
}

// The Workplace host keeps the same reserve and holds half of the rest: every request it relays
// holds a connection to the API as well.
func TestTheWorkplaceHostsCapLeavesADescriptorForEachRelayedConnection(t *testing.T) {
	g := NewWithT(t)
	g.Expect(listener.HostConnectionsOf(4096)).To(Equal(1536))
	g.Expect(2*listener.HostConnectionsOf(20000) + 5000).To(BeNumerically("<=", 20000))
	g.Expect(listener.HostConnectionsOf(100)).To(Equal(32))
}

// exchange sends raw bytes to a server on a Problems listener and returns its answer.
func exchange(t *testing.T, request string) *http.Response {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }),
		MaxHeaderBytes: 1 << 10}
	go server.Serve(listener.Problems(raw))
	t.Cleanup(func() { server.Close() })
	c, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The errors net/http answers before any handler runs are Problem Details, and none is a 5xx.
func TestMalformedRequestsAnswerProblemDetails(t *testing.T) {
	for name, c := range map[string]struct {
		request string
		status  int
	}{
		"malformed header":      {"GET / HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", http.StatusBadRequest},
		"malformed request":     {"NONSENSE\r\n\r\n", http.StatusBadRequest},
		"headers too large":     {"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		"unknown transfer code": {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zebra\r\n\r\n", http.StatusBadRequest},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			resp := exchange(t, c.request)
			defer resp.Body.Close()
			g.Expect(resp.StatusCode).To(Equal(c.status))
			g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/problem+json"))
			var problem map[string]any
			g.Expect(json.NewDecoder(resp.Body).Decode(&problem)).To(Succeed())
			g.Expect(problem).To(HaveKeyWithValue("status", BeNumerically("==", c.status)))
		})
	}
	t.Run("a handler's answer is untouched", func(t *testing.T) {
		g := NewWithT(t)
		resp := exchange(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		g.Expect(string(body)).To(Equal("ok"))
	})
}
