package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/notify"
	"platform.dev/platform/apiserver/workplace"
)

// memSource is an outbox in memory: add appends an event and announces it, as a commit does.
type memSource struct {
	changes *notify.Hub

	mu     sync.Mutex
	events map[string][]workplace.Event
	fail   bool
}

func newMemSource() *memSource {
	return &memSource{changes: notify.New(notify.Options{}), events: map[string][]workplace.Event{}}
}

func (s *memSource) add(workspace, name, principal string, payload map[string]any) int64 {
	s.mu.Lock()
	seq := int64(len(s.events[workspace]) + 1)
	b, _ := json.Marshal(payload)
	s.events[workspace] = append(s.events[workspace], workplace.Event{WorkspaceID: workspace, Seq: seq, Name: name, PrincipalID: principal,
		Payload: b, CreatedAt: time.Now()})
	s.mu.Unlock()
	s.changes.Publish(workplace.Topic(workspace))
	return seq
}

// addNumbered appends an event whose payload is its number, {"n":<seq>}.
func (s *memSource) addNumbered(workspace, name string) int64 {
	s.mu.Lock()
	seq := int64(len(s.events[workspace]) + 1)
	s.events[workspace] = append(s.events[workspace], workplace.Event{WorkspaceID: workspace, Seq: seq, Name: name,
		Payload: []byte(`{"n":` + strconv.FormatInt(seq, 10) + `}`), CreatedAt: time.Now()})
	s.mu.Unlock()
	s.changes.Publish(workplace.Topic(workspace))
	return seq
}

func (s *memSource) Events(_ context.Context, workspace string, after int64, take int) ([]workplace.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return nil, errors.New("the outbox does not answer")
	}
	all := s.events[workspace]
	if after >= int64(len(all)) {
		return nil, nil
	}
	page := all[after:]
	if len(page) > take {
		page = page[:take]
	}
	return append([]workplace.Event(nil), page...), nil
}

func (s *memSource) LastEventSeq(_ context.Context, workspace string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.events[workspace])), nil
}

func (s *memSource) PruneEvents(context.Context, time.Time) (int64, error) { return 0, nil }

// world is who may listen: principals by bearer token, the workspaces each may join (by id or
// name), and the reasons their credentials stopped authenticating.
type world struct {
	mu      sync.Mutex
	members map[string]map[string]string // principal -> workspace name or id -> id
	denied  map[string]string
	// budget is how many more requests a principal may make before its rate limit refuses
	// them; a principal absent is not limited.
	budget map[string]int
}

type testCaller struct {
	w  *world
	id string
}

func (c testCaller) PrincipalID() string { return c.id }

func (c testCaller) Join(_ context.Context, workspace string) (string, error) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if id, ok := c.w.members[c.id][workspace]; ok {
		return id, nil
	}
	return "", fmt.Errorf("workspace %q not found", workspace)
}

func (c testCaller) Check(_ context.Context, workspaces []string) (string, error) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	return c.w.denied[c.id], nil
}

// Limit is the world's rate limit of the caller (Limited).
func (c testCaller) Limit(context.Context) (string, int) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	n, limited := c.w.budget[c.id]
	if !limited {
		return "", 0
	}
	if n == 0 {
		return "the limit of 3 requests per second with this access token is reached; retry after 1 s", 1
	}
	c.w.budget[c.id] = n - 1
	return "", 0
}

func (w *world) authenticate(r *http.Request) (Caller, error) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token == "" {
		token = r.URL.Query().Get("access_token")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.members[token]; !ok {
		return nil, ErrUnauthenticated
	}
	return testCaller{w: w, id: token}, nil
}

// env is a hub served over HTTP with an outbox in memory.
type env struct {
	t      *testing.T
	hub    *Hub
	source *memSource
	world  *world
	server *httptest.Server
	base   string
}

func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "title": http.StatusText(status), "detail": detail})
}

func newEnv(t *testing.T, tune func(*Options)) *env {
	t.Helper()
	source := newMemSource()
	w := &world{members: map[string]map[string]string{
		"alice": {"w1": "w1", "one": "w1", "w2": "w2"},
		"bob":   {"w1": "w1", "one": "w1"},
		"carol": {"w1": "w1"},
	}, denied: map[string]string{}}
	opts := Options{Source: source, Changes: source.changes, Authenticate: w.authenticate, Problem: problem,
		AllowedOrigins: []string{"http://workplace.example:5180"}}
	if tune != nil {
		tune(&opts)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hubs/workplace/negotiate", h.ServeNegotiate)
	mux.HandleFunc("OPTIONS /hubs/workplace/negotiate", h.ServePreflight)
	mux.HandleFunc("GET /hubs/workplace", h.ServeWebSocket)
	server := httptest.NewServer(mux)
	ctx, cancel := context.WithCancel(context.Background())
	go h.Run(ctx)
	e := &env{t: t, hub: h, source: source, world: w, server: server, base: server.URL + "/hubs/workplace"}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		h.Shutdown(sctx)
		cancel()
		server.Close()
	})
	return e
}

// negotiate posts negotiate as principal and returns the status and body.
func (e *env) negotiate(principal string, header http.Header) (int, map[string]any, http.Header) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.base+"/negotiate?negotiateVersion=1", nil)
	for k, v := range header {
		req.Header[k] = v
	}
	if principal != "" {
		req.Header.Set("Authorization", "Bearer "+principal)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body, resp.Header
}

// client is a raw WebSocket peer of the hub: what it receives, split into messages.
type client struct {
	t    *testing.T
	ws   *websocket.Conn
	msgs chan []byte
	// ended is closed when the socket closed; closeErr is why.
	ended    chan struct{}
	closeErr error
}

// dial upgrades to the negotiated token (or without one when token is empty) as principal.
func (e *env) dial(principal, token string, header http.Header) (*client, *http.Response, error) {
	e.t.Helper()
	u := "ws" + strings.TrimPrefix(e.base, "http")
	if token != "" {
		u += "?id=" + url.QueryEscape(token)
	}
	if header == nil {
		header = http.Header{}
	}
	if principal != "" {
		header.Set("Authorization", "Bearer "+principal)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(16 << 20)
	c := &client{t: e.t, ws: ws, msgs: make(chan []byte, 1<<16), ended: make(chan struct{})}
	e.t.Cleanup(func() { ws.CloseNow() })
	go c.read()
	return c, resp, nil
}

func (c *client) read() {
	defer close(c.ended)
	var rest []byte
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.closeErr = err
			return
		}
		var messages [][]byte
		messages, rest = splitFrame(append(rest, data...))
		rest = append([]byte(nil), rest...)
		for _, m := range messages {
			c.msgs <- m
		}
	}
}

// connect negotiates, upgrades and completes the handshake as principal.
func (e *env) connect(principal string) *client {
	e.t.Helper()
	status, body, _ := e.negotiate(principal, nil)
	if status != http.StatusOK {
		e.t.Fatalf("negotiate as %s: %d %v", principal, status, body)
	}
	c, _, err := e.dial(principal, body["connectionToken"].(string), nil)
	if err != nil {
		e.t.Fatalf("upgrade as %s: %v", principal, err)
	}
	c.send(`{"protocol":"json","version":1}` + "\x1e")
	if got := c.next(); string(got) != "{}" {
		e.t.Fatalf("handshake answered %s", got)
	}
	return c
}

func (c *client) send(frame string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// next returns the next message that is not a ping.
func (c *client) next() []byte {
	c.t.Helper()
	m, ok := c.within(5 * time.Second)
	if !ok {
		c.t.Fatal("no message within 5s")
	}
	return m
}

// within returns the next message that is not a ping, if one arrives within d.
func (c *client) within(d time.Duration) ([]byte, bool) {
	timeout := time.After(d)
	for {
		select {
		case m := <-c.msgs:
			if string(m) == `{"type":6}` {
				continue
			}
			return m, true
		case <-timeout:
			return nil, false
		}
	}
}

func decode(t *testing.T, m []byte) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(m, &out); err != nil {
		t.Fatalf("not JSON: %q", m)
	}
	return out
}

// invoke calls a hub method and returns its Completion.
func (c *client) invoke(id, target string, args ...any) map[string]any {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"type": 1, "invocationId": id, "target": target, "arguments": args})
	c.send(string(b) + "\x1e")
	for {
		m := decode(c.t, c.next())
		if m["type"] == float64(typeCompletion) && m["invocationId"] == id {
			return m
		}
	}
}

// closed waits for the socket to end and returns the Close message the hub sent before, if any.
func (c *client) closed(d time.Duration) map[string]any {
	c.t.Helper()
	var last map[string]any
	timeout := time.After(d)
	for {
		select {
		case m := <-c.msgs:
			if msg := decode(c.t, m); msg["type"] == float64(typeClose) {
				last = msg
			}
		case <-c.ended:
			for {
				select {
				case m := <-c.msgs:
					if msg := decode(c.t, m); msg["type"] == float64(typeClose) {
						last = msg
					}
				default:
					return last
				}
			}
		case <-timeout:
			c.t.Fatalf("the connection did not close within %s", d)
		}
	}
}

func TestNegotiateOffersWebSocketsOnlyAndNeverStatefulReconnect(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, nil)
	status, body, header := e.negotiate("alice", nil)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(header.Get("Cache-Control")).To(Equal("no-store"))
	g.Expect(body).To(HaveKeyWithValue("negotiateVersion", BeNumerically("==", 1)))
	g.Expect(body["connectionId"]).NotTo(BeEmpty())
	g.Expect(body["connectionToken"]).NotTo(BeEmpty())
	g.Expect(body["connectionToken"]).NotTo(Equal(body["connectionId"]), "the token, unlike the id, is a secret")
	g.Expect(body).NotTo(HaveKey("useStatefulReconnect"))
	g.Expect(body["availableTransports"]).To(Equal([]any{map[string]any{"transport": "WebSockets", "transferFormats": []any{"Text"}}}))

	req, _ := http.NewRequest(http.MethodPost, e.base+"/negotiate", nil)
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	var v0 map[string]any
	g.Expect(json.NewDecoder(resp.Body).Decode(&v0)).To(Succeed())
	resp.Body.Close()
	g.Expect(v0).To(HaveKeyWithValue("negotiateVersion", BeNumerically("==", 0)))
	g.Expect(v0).NotTo(HaveKey("connectionToken"), "version 0 names the connection by its id")

	for _, bad := range []string{"x", "-1"} {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/negotiate?negotiateVersion="+bad, nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), bad)
	}

	status, body, _ = e.negotiate("", nil)
	g.Expect(status).To(Equal(http.StatusUnauthorized))
	g.Expect(body).To(HaveKeyWithValue("status", BeNumerically("==", 401)))
	status, _, _ = e.negotiate("mallory", nil)
	g.Expect(status).To(Equal(http.StatusUnauthorized))
}

func TestTheUpgradeTakesTheNegotiatedTokenOnceAndOnlyFromItsCaller(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, nil)
	_, resp, err := e.dial("alice", "no-such-token", nil)
	g.Expect(err).To(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))

	_, body, _ := e.negotiate("alice", nil)
	token := body["connectionToken"].(string)
	_, resp, err = e.dial("bob", token, nil)
	g.Expect(err).To(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "another caller cannot take the connection")

	first, _, err := e.dial("alice", token, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, resp, err = e.dial("alice", token, nil)
	g.Expect(err).To(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusConflict), "a second socket for the same id")
	first.send(`{"protocol":"json","version":1}` + "\x1e")
	g.Expect(string(first.next())).To(Equal("{}"))

	_, resp, err = e.dial("", token, nil)
	g.Expect(err).To(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))

	// access_token in the query, as browsers send it.
	_, body, _ = e.negotiate("bob", nil)
	u := "ws" + strings.TrimPrefix(e.base, "http") + "?id=" + url.QueryEscape(body["connectionToken"].(string)) + "&access_token=bob"
	ws, _, err := websocket.Dial(context.Background(), u, nil)
	g.Expect(err).NotTo(HaveOccurred())
	ws.CloseNow()
}

func TestTheHandshake(t *testing.T) {
	for name, c := range map[string]struct {
		frame string
		error string
	}{
		"another protocol":      {`{"protocol":"messagepack","version":1}`, "messagepack"},
		"another version":       {`{"protocol":"json","version":2}`, "version 2"},
		"no version":            {`{"protocol":"json"}`, "handshake request"},
		"not JSON":              {`hello`, "handshake request"},
		"a message, not a hand": {`{"type":6}`, "handshake request"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			e := newEnv(t, nil)
			_, body, _ := e.negotiate("alice", nil)
			cl, _, err := e.dial("alice", body["connectionToken"].(string), nil)
			g.Expect(err).NotTo(HaveOccurred())
			cl.send(c.frame + "\x1e")
			answer := decode(t, cl.next())
			g.Expect(answer["error"]).To(ContainSubstring(c.error))
			g.Expect(cl.closed(5 * time.Second)).To(BeNil())
		})
	}
	t.Run("the handshake and the first invocation in one frame, then a message over two frames", func(t *testing.T) {
		g := NewWithT(t)
		e := newEnv(t, nil)
		_, body, _ := e.negotiate("alice", nil)
		cl, _, err := e.dial("alice", body["connectionToken"].(string), nil)
		g.Expect(err).NotTo(HaveOccurred())
		cl.send(`{"protocol":"json","version":1}` + "\x1e" + `{"type":1,"invocationId":"1","target":"JoinWorkspace","arguments":["w1"]}` + "\x1e")
		g.Expect(string(cl.next())).To(Equal("{}"))
		g.Expect(decode(t, cl.next())).To(Equal(map[string]any{"type": float64(3), "invocationId": "1"}))
		cl.send(`{"type":1,"invocationId":"2","target":"Leave`)
		cl.send(`Workspace","arguments":["w1"]}` + "\x1e" + `{"type":6}` + "\x1e")
		g.Expect(decode(t, cl.next())).To(Equal(map[string]any{"type": float64(3), "invocationId": "2"}))
	})
	t.Run("a client that never completes its handshake is closed", func(t *testing.T) {
		g := NewWithT(t)
		e := newEnv(t, func(o *Options) { o.HandshakeTimeout = 300 * time.Millisecond })
		_, body, _ := e.negotiate("alice", nil)
		cl, _, err := e.dial("alice", body["connectionToken"].(string), nil)
		g.Expect(err).NotTo(HaveOccurred())
		cl.closed(5 * time.Second)
		g.Eventually(e.hub.Connections).Should(BeZero())
	})
}

func TestInvocations(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, nil)
	cl := e.connect("alice")
	g.Expect(cl.invoke("1", "JoinWorkspace", "one")).NotTo(HaveKey("error"), "by route name")
	g.Expect(cl.invoke("2", "JoinWorkspace", "w1")).NotTo(HaveKey("error"), "again, by id: still one membership")
	g.Expect(cl.invoke("3", "JoinWorkspace", "w3")["error"]).To(ContainSubstring("not found"))
	g.Expect(cl.invoke("4", "JoinWorkspace")["error"]).To(ContainSubstring("one argument"))
	g.Expect(cl.invoke("5", "JoinWorkspace", 42)["error"]).To(ContainSubstring("one argument"))
	g.Expect(cl.invoke("6", "JoinWorkspace", "w1", "w2")["error"]).To(ContainSubstring("one argument"))
	g.Expect(cl.invoke("7", "Subscribe", "w1")["error"]).To(ContainSubstring("unknown hub method"))

	// A StreamInvocation is answered with an error Completion; a CancelInvocation, a Ping and a
	// client's stray Completion change nothing; an invocation without an id gets no answer.
	cl.send(`{"type":4,"invocationId":"8","target":"JoinWorkspace","arguments":["w1"]}` + "\x1e")
	m := decode(t, cl.next())
	g.Expect(m).To(HaveKeyWithValue("invocationId", "8"))
	g.Expect(m["error"]).To(ContainSubstring("cannot stream"))
	cl.send(`{"type":5,"invocationId":"8"}` + "\x1e" + `{"type":6}` + "\x1e" + `{"type":3,"invocationId":"99"}` + "\x1e")
	cl.send(`{"type":1,"target":"JoinWorkspace","arguments":["w2"]}` + "\x1e")
	cl.send(`{"type":1,"invocationId":"9","target":"JoinWorkspace","arguments":["w1"],"streamIds":["s"]}` + "\x1e")
	m = decode(t, cl.next())
	g.Expect(m).To(HaveKeyWithValue("invocationId", "9"), "the invocation without an id was not answered")
	g.Expect(m["error"]).To(ContainSubstring("streaming"))

	// Events of a workspace joined without an id arrive too: the join happened.
	e.source.add("w2", workplace.EventTaskCreated, "", map[string]any{"taskId": "t"})
	g.Expect(decode(t, cl.next())).To(HaveKeyWithValue("target", "TaskCreated"))

	g.Expect(cl.invoke("10", "LeaveWorkspace", "one")).NotTo(HaveKey("error"), "leaving by the name it joined with")
	g.Expect(cl.invoke("11", "LeaveWorkspace", "w9")).NotTo(HaveKey("error"), "leaving what was never joined is no error")
	cl.send(`{"type":7}` + "\x1e")
	g.Expect(cl.closed(5 * time.Second)).To(BeNil())
}

func TestBadMessagesCloseTheConnectionWithTheirReason(t *testing.T) {
	for name, c := range map[string]struct {
		frame, reason string
	}{
		"not JSON":            {"nonsense\x1e", "not a JSON object"},
		"an unknown type":     {`{"type":42}` + "\x1e", "unknown message type 42"},
		"no target":           {`{"type":1,"invocationId":"1","arguments":[]}` + "\x1e", "no target"},
		"a stream without id": {`{"type":4,"target":"X","arguments":[]}` + "\x1e", "no invocation id"},
		"an invocation id too long": {`{"type":1,"invocationId":"` + strings.Repeat("x", 200) + `","target":"JoinWorkspace","arguments":["w1"]}` + "\x1e",
			"longer than"},
		"a message too large":                     {`{"type":1,"target":"JoinWorkspace","arguments":["` + strings.Repeat("x", 2048) + `"]}` + "\x1e", "larger than"},
		"an unfinished message growing too large": {`{"type":1,"target":"JoinWorkspace","arguments":["` + strings.Repeat("x", 900), "larger than"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			e := newEnv(t, func(o *Options) { o.MaxMessageBytes = 1024 })
			cl := e.connect("alice")
			cl.send(c.frame)
			if strings.Contains(name, "unfinished") {
				cl.send(c.frame) // the tail and this frame exceed the bound together
			}
			closeMsg := cl.closed(5 * time.Second)
			if strings.HasPrefix(name, "a message too large") && closeMsg == nil {
				// A frame beyond the read limit is refused by the WebSocket layer itself (1009).
				g.Expect(websocket.CloseStatus(cl.closeErr)).To(Equal(websocket.StatusMessageTooBig))
				return
			}
			g.Expect(closeMsg).NotTo(BeNil())
			g.Expect(closeMsg["error"]).To(ContainSubstring(c.reason))
			g.Expect(closeMsg).NotTo(HaveKey("allowReconnect"))
		})
	}
}

// eventsOf collects the invocations a client receives until n arrived.
func eventsOf(t *testing.T, c *client, n int, d time.Duration) []map[string]any {
	t.Helper()
	var out []map[string]any
	timeout := time.After(d)
	for len(out) < n {
		select {
		case m := <-c.msgs:
			msg := decode(t, m)
			if msg["type"] == float64(typeInvocation) {
				out = append(out, msg)
			}
		case <-timeout:
			t.Fatalf("%d of %d events within %s", len(out), n, d)
		}
	}
	return out
}

func TestEventsReachTheGroupInOrderAndOnlyTheirPrincipal(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, nil)
	e.source.add("w1", workplace.EventTaskCreated, "", map[string]any{"taskId": "before"})
	alice, bob, other := e.connect("alice"), e.connect("bob"), e.connect("alice")
	g.Expect(alice.invoke("1", "JoinWorkspace", "w1")).NotTo(HaveKey("error"))
	g.Expect(bob.invoke("1", "JoinWorkspace", "one")).NotTo(HaveKey("error"))
	g.Expect(other.invoke("1", "JoinWorkspace", "w2")).NotTo(HaveKey("error"))

	e.source.add("w1", workplace.EventMessageAdded, "", map[string]any{"interactionId": "i", "messageId": "m", "seq": 1})
	e.source.add("w1", "SomethingInternal", "", map[string]any{"x": 1})
	e.source.add("w1", workplace.EventNotificationCreated, "alice", map[string]any{"notificationId": "n"})
	e.source.add("w1", workplace.EventUnreadNotificationCountChanged, "alice", map[string]any{"unreadCount": 1})
	e.source.add("w1", workplace.EventTaskStatusChanged, "", map[string]any{"taskId": "t", "state": "Completed", "version": 2})

	got := eventsOf(t, alice, 4, 5*time.Second)
	g.Expect(got[0]).To(Equal(map[string]any{"type": float64(1), "target": "MessageAdded",
		"arguments": []any{map[string]any{"interactionId": "i", "messageId": "m", "seq": float64(1), "workspaceId": "w1"}}}),
		"an event committed before the join is not sent; the payload names its workspace")
	g.Expect(got[0]).NotTo(HaveKey("invocationId"), "events expect no answer")
	var names []string
	for _, m := range got {
		names = append(names, m["target"].(string))
	}
	g.Expect(names).To(Equal([]string{"MessageAdded", "NotificationCreated", "UnreadNotificationCountChanged", "TaskStatusChanged"}))
	got = eventsOf(t, bob, 2, 5*time.Second)
	g.Expect(got[0]["target"]).To(Equal("MessageAdded"))
	g.Expect(got[1]["target"]).To(Equal("TaskStatusChanged"), "another Principal's notifications are not bob's")
	_, more := other.within(300 * time.Millisecond)
	g.Expect(more).To(BeFalse(), "another workspace's events are not sent")

	g.Expect(bob.invoke("2", "LeaveWorkspace", "one")).NotTo(HaveKey("error"))
	e.source.add("w1", workplace.EventTaskCreated, "", map[string]any{"taskId": "after"})
	eventsOf(t, alice, 1, 5*time.Second)
	_, more = bob.within(300 * time.Millisecond)
	g.Expect(more).To(BeFalse(), "nothing after leaving")
}

// A burst of thousands of events reaches a client that reads, whole and in order: the send queue
// bounds bytes, not messages, and the events of a page share frames.
func TestABurstOfEventsArrivesWholeAndInOrder(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, nil)
	alice, bob := e.connect("alice"), e.connect("bob")
	g.Expect(alice.invoke("1", "JoinWorkspace", "w1")).NotTo(HaveKey("error"))
	g.Expect(bob.invoke("1", "JoinWorkspace", "w1")).NotTo(HaveKey("error"))
	const n = 3000
	for i := range n {
		principal := ""
		if i%10 == 0 {
			principal = "alice"
		}
		e.source.add("w1", workplace.EventTaskActivityAdded, principal, map[string]any{"taskId": "t", "seq": i, "pad": strings.Repeat("p", 200)})
	}
	for who, c := range map[string]*client{"alice": alice, "bob": bob} {
		want := n
		if who == "bob" {
			want = n - n/10
		}
		got := eventsOf(t, c, want, 30*time.Second)
		last := -1
		for _, m := range got {
			seq := int(m["arguments"].([]any)[0].(map[string]any)["seq"].(float64))
			g.Expect(seq).To(BeNumerically(">", last), who)
			if who == "bob" {
				g.Expect(seq % 10).NotTo(BeZero())
			}
			last = seq
		}
	}
	g.Expect(e.hub.Connections()).To(Equal(2), "nobody was dropped")
}

// A client that stops reading is dropped once its queue is full; the others keep receiving.
func TestASlowConsumerIsDroppedAndHoldsUpNobody(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, func(o *Options) { o.SendQueueBytes = 256 << 10 })
	fast := e.connect("alice")
	g.Expect(fast.invoke("1", "JoinWorkspace", "w1")).NotTo(HaveKey("error"))

	// The slow client reads nothing: a raw socket that completes the upgrade and the handshake.
	_, body, _ := e.negotiate("bob", nil)
	u := "ws" + strings.TrimPrefix(e.base, "http") + "?id=" + url.QueryEscape(body["connectionToken"].(string)) + "&access_token=bob"
	slowCtx, cancelSlow := context.WithCancel(context.Background())
	defer cancelSlow()
	slow, _, err := websocket.Dial(slowCtx, u, nil)
	g.Expect(err).NotTo(HaveOccurred())
	defer slow.CloseNow()
	g.Expect(slow.Write(slowCtx, websocket.MessageText, []byte(`{"protocol":"json","version":1}`+"\x1e"+
		`{"type":1,"invocationId":"1","target":"JoinWorkspace","arguments":["w1"]}`+"\x1e"))).To(Succeed())
	g.Eventually(func() int {
		e.hub.mu.Lock()
		group := e.hub.groups["w1"]
		e.hub.mu.Unlock()
		group.mu.RLock()
		defer group.mu.RUnlock()
		return len(group.members)
	}).Should(Equal(2))

	big := strings.Repeat("x", 60<<10)
	received := 0
	for i := 0; i < 400 && e.hub.Connections() == 2; i++ {
		e.source.add("w1", workplace.EventTaskResultAdded, "", map[string]any{"taskId": "t", "seq": i, "pad": big})
		received += len(eventsOf(t, fast, 1, 10*time.Second))
	}
	g.Eventually(e.hub.Connections).WithTimeout(15*time.Second).Should(Equal(1), "the slow client was dropped")
	e.source.add("w1", workplace.EventTaskCreated, "", map[string]any{"taskId": "after"})
	g.Eventually(func() string {
		m, _ := fast.within(time.Second)
		return string(m)
	}).WithTimeout(10*time.Second).Should(ContainSubstring(`"target":"TaskCreated"`), "the fast client still receives (after %d)", received)
}

func TestKeepAliveAndClientTimeout(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, func(o *Options) {
		o.KeepAlive = 500 * time.Millisecond
		o.ClientTimeout = 2500 * time.Millisecond
	})
	cl := e.connect("alice")
	select {
	case m := <-cl.msgs:
		g.Expect(string(m)).To(Equal(`{"type":6}`), "an idle connection is pinged")
	case <-time.After(3 * time.Second):
		t.Fatal("no ping")
	}
	began := time.Now()
	closeMsg := cl.closed(10 * time.Second)
	g.Expect(closeMsg["error"]).To(ContainSubstring("timeout"))
	g.Expect(time.Since(began)).To(BeNumerically(">", time.Second), "pinging keeps nobody alive: the client must speak")

	talker := e.connect("bob")
	for range 8 {
		talker.send(`{"type":6}` + "\x1e")
		time.Sleep(500 * time.Millisecond)
	}
	g.Expect(e.hub.Connections()).To(Equal(1), "a client that pings stays")
}

func TestARevokedCallerIsClosedWithinTheRevalidation(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, func(o *Options) { o.Revalidate = 200 * time.Millisecond })
	alice, bob := e.connect("alice"), e.connect("bob")
	g.Expect(alice.invoke("1", "JoinWorkspace", "w1")).NotTo(HaveKey("error"))
	e.world.mu.Lock()
	e.world.denied["alice"] = "the connection's credential no longer authenticates"
	e.world.mu.Unlock()
	closeMsg := alice.closed(5 * time.Second)
	g.Expect(closeMsg["error"]).To(ContainSubstring("no longer authenticates"))
	g.Expect(closeMsg).NotTo(HaveKey("allowReconnect"))
	_, more := bob.within(time.Second)
	g.Expect(more).To(BeFalse(), "another caller's connection stays")
	g.Expect(e.hub.Connections()).To(Equal(1))
}

// A caller past its rate limit is answered 429 with Retry-After when it negotiates, and an
// invocation past it gets its completion with the reason: the connection stays.
func TestARateLimitRefusesNegotiationsAndInvocations(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, nil)
	e.world.mu.Lock()
	e.world.budget = map[string]int{"alice": 3}
	e.world.mu.Unlock()
	cl := e.connect("alice") // a negotiation and an upgrade
	g.Expect(cl.invoke("1", "JoinWorkspace", "one")).NotTo(HaveKey("error"))
	g.Expect(cl.invoke("2", "JoinWorkspace", "two")["error"]).To(ContainSubstring("limit of 3 requests per second"))
	status, body, header := e.negotiate("alice", nil)
	g.Expect(status).To(Equal(http.StatusTooManyRequests))
	g.Expect(header.Get("Retry-After")).To(Equal("1"))
	g.Expect(body["detail"]).To(ContainSubstring("retry after 1 s"))
	status, _, _ = e.negotiate("bob", nil)
	g.Expect(status).To(Equal(http.StatusOK), "another caller is not held to alice's limit")
	e.source.add("w1", workplace.EventTaskCreated, "", map[string]any{"taskId": "t"})
	g.Expect(decode(t, cl.next())).To(HaveKeyWithValue("target", "TaskCreated"), "the limited connection still receives its events")
}

func TestBoundsAnswer429AtNegotiate(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, func(o *Options) {
		o.MaxConnectionsPerPrincipal = 2
		o.MaxConnections = 3
	})
	a1 := e.connect("alice")
	e.connect("alice")
	status, body, header := e.negotiate("alice", nil)
	g.Expect(status).To(Equal(http.StatusTooManyRequests))
	g.Expect(body["detail"]).To(ContainSubstring("per caller"))
	g.Expect(header.Get("Retry-After")).NotTo(BeEmpty())
	e.connect("bob")
	status, body, _ = e.negotiate("carol", nil)
	g.Expect(status).To(Equal(http.StatusTooManyRequests), "the total")
	g.Expect(body["detail"]).To(ContainSubstring("as many connections"))
	a1.send(`{"type":7}` + "\x1e")
	a1.closed(5 * time.Second)
	g.Eventually(func() int { s, _, _ := e.negotiate("carol", nil); return s }).Should(Equal(http.StatusOK), "a slot is free again")
	g.Expect(e.hub.Connections()).To(Equal(3), "a negotiated connection counts until it ends")
}

func TestShutdownClosesEveryConnectionAllowingReconnect(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, nil)
	alice, bob := e.connect("alice"), e.connect("bob")
	g.Expect(alice.invoke("1", "JoinWorkspace", "w1")).NotTo(HaveKey("error"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { e.hub.Shutdown(ctx); close(done) }()
	for _, c := range []*client{alice, bob} {
		g.Expect(c.closed(10 * time.Second)).To(Equal(map[string]any{"type": float64(typeClose), "allowReconnect": true}))
	}
	<-done
	status, _, _ := e.negotiate("alice", nil)
	g.Expect(status).To(Equal(http.StatusServiceUnavailable))
}

func TestOrigins(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, nil)
	status, _, _ := e.negotiate("alice", http.Header{"Origin": {"http://evil.example"}})
	g.Expect(status).To(Equal(http.StatusForbidden))
	status, _, header := e.negotiate("alice", http.Header{"Origin": {"http://workplace.example:5180"}})
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(header.Get("Access-Control-Allow-Origin")).To(Equal("http://workplace.example:5180"))
	g.Expect(header.Get("Access-Control-Allow-Credentials")).To(Equal("true"))
	status, _, header = e.negotiate("alice", http.Header{"Origin": {e.server.URL}})
	g.Expect(status).To(Equal(http.StatusOK), "the hub's own host")
	g.Expect(header.Get("Access-Control-Allow-Origin")).To(BeEmpty(), "needs no CORS")

	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, e.base+"/negotiate?negotiateVersion=1", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := preflight("http://workplace.example:5180")
	g.Expect(resp.StatusCode).To(Equal(http.StatusNoContent))
	g.Expect(resp.Header.Get("Access-Control-Allow-Headers")).To(ContainSubstring("Authorization"))
	g.Expect(preflight("http://evil.example").StatusCode).To(Equal(http.StatusForbidden))

	_, body, _ := e.negotiate("alice", nil)
	_, r, err := e.dial("alice", body["connectionToken"].(string), http.Header{"Origin": {"http://evil.example"}})
	g.Expect(err).To(HaveOccurred())
	g.Expect(r.StatusCode).To(Equal(http.StatusForbidden), "the upgrade checks the Origin")
	_, _, err = e.dial("alice", body["connectionToken"].(string), http.Header{"Origin": {"http://workplace.example:5180"}})
	g.Expect(err).NotTo(HaveOccurred())
}

// An outbox that fails for a while is read again: nothing is lost, nothing sent twice.
func TestAFailingOutboxIsReadAgain(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(t, nil)
	cl := e.connect("alice")
	g.Expect(cl.invoke("1", "JoinWorkspace", "w1")).NotTo(HaveKey("error"))
	e.source.mu.Lock()
	e.source.fail = true
	e.source.mu.Unlock()
	for i := range 3 {
		e.source.add("w1", workplace.EventTaskActivityAdded, "", map[string]any{"taskId": "t", "seq": i})
	}
	time.Sleep(300 * time.Millisecond)
	e.source.mu.Lock()
	e.source.fail = false
	e.source.mu.Unlock()
	got := eventsOf(t, cl, 3, 10*time.Second)
	for i, m := range got {
		g.Expect(m["arguments"].([]any)[0].(map[string]any)["seq"]).To(BeNumerically("==", i))
	}
	_, more := cl.within(500 * time.Millisecond)
	g.Expect(more).To(BeFalse())
}

func TestFramesSplitAtMessageBoundaries(t *testing.T) {
	g := NewWithT(t)
	var all []byte
	for i := range 5000 {
		all = append(all, invocation("TaskActivityAdded", json.RawMessage(fmt.Sprintf(`{"seq":%d}`, i)))...)
	}
	fs := frames(all)
	g.Expect(len(fs)).To(BeNumerically(">", 1))
	for _, f := range fs {
		g.Expect(len(f)).To(BeNumerically("<=", maxBatch))
		g.Expect(f[len(f)-1]).To(Equal(byte(recordSeparator)))
	}
	g.Expect(bytes.Join(fs, nil)).To(Equal(all))
	huge := invocation("TaskResultAdded", json.RawMessage(`"`+strings.Repeat("x", maxBatch*2)+`"`))
	g.Expect(frames(append(append([]byte(nil), huge...), all[:100]...))[0]).To(Equal(huge), "a message larger than a frame is one frame")
	g.Expect(frames(nil)).To(BeEmpty())
}

// FuzzFrames feeds the frame parser (splitting on the separator, the handshake and the message
// reader) arbitrary bytes: it never panics, splitting loses no byte, and what it accepts is valid.
func FuzzFrames(f *testing.F) {
	for _, seed := range []string{
		`{"protocol":"json","version":1}` + "\x1e",
		`{"type":1,"invocationId":"1","target":"JoinWorkspace","arguments":["w1"]}` + "\x1e" + `{"type":6}` + "\x1e",
		`{"type":4,"invocationId":"2","target":"X","arguments":[]}` + "\x1e{\"type\":5,\"invocationId\":\"2\"}\x1e",
		`{"type":7,"error":"bye","allowReconnect":true}` + "\x1e",
		"\x1e\x1e\x1e", `{"type":1`, `{"type":"1"}` + "\x1e", `{"type":99}` + "\x1e", "\x00\xff\x1e",
		`{"type":1,"target":"JoinWorkspace","arguments":[{"nested":[1,2,{"x":null}]}],"streamIds":["a"]}` + "\x1e",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		messages, rest := splitFrame(append([]byte(nil), data...))
		var joined []byte
		for _, m := range messages {
			if bytes.IndexByte(m, recordSeparator) >= 0 {
				t.Fatalf("a message holds the separator: %q", m)
			}
			joined = append(append(joined, m...), recordSeparator)
		}
		if !bytes.Equal(append(joined, rest...), data) {
			t.Fatalf("splitting lost bytes: %q", data)
		}
		if bytes.IndexByte(rest, recordSeparator) >= 0 {
			t.Fatalf("the rest holds a separator: %q", rest)
		}
		for _, m := range messages {
			_ = handshake(m)
			msg, err := parseMessage(m)
			if err != nil {
				if !errors.Is(err, errProtocol) {
					t.Fatalf("an error that is not a protocol error: %v", err)
				}
				continue
			}
			if msg.Type < typeInvocation || msg.Type > typeSequence {
				t.Fatalf("accepted type %d", msg.Type)
			}
			if (msg.Type == typeInvocation || msg.Type == typeStreamInvocation) && msg.Target == "" {
				t.Fatal("accepted an invocation without a target")
			}
		}
		// The split must not depend on where frames end.
		if len(data) > 1 {
			cut := len(data) / 2
			first, tail := splitFrame(append([]byte(nil), data[:cut]...))
			second, rest2 := splitFrame(append(append([]byte(nil), tail...), data[cut:]...))
			if len(first)+len(second) != len(messages) || !bytes.Equal(rest2, rest) {
				t.Fatalf("splitting across frames differs: %q", data)
			}
		}
	})
}

// While the database restarts, negotiate answers 503 with Retry-After and hands the cause to the
// request's log line, which knows an outage from a fault and logs the outage once, not per
// reconnecting client.
func TestAnUnreachableStoreAtNegotiateIsA503WhoseCauseReachesTheLog(t *testing.T) {
	g := NewWithT(t)
	down := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	var (
		mu     sync.Mutex
		causes []error
	)
	e := newEnv(t, func(o *Options) {
		o.Authenticate = func(*http.Request) (Caller, error) { return nil, down }
		o.Failed = func(_ *http.Request, cause error) {
			mu.Lock()
			defer mu.Unlock()
			causes = append(causes, cause)
		}
	})
	status, body, header := e.negotiate("alice", nil)
	g.Expect(status).To(Equal(http.StatusServiceUnavailable))
	g.Expect(header.Get("Retry-After")).NotTo(BeEmpty())
	g.Expect(body).To(HaveKeyWithValue("detail", "the database does not answer; retry"))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(causes).To(ConsistOf(MatchError(down)))
}
