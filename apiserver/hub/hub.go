package hub

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/go-logr/logr"

	"platform.dev/platform/apiserver/notify"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/workplace"
)

// Defaults of Options.
const (
	DefaultMaxConnections             = 10000
	DefaultMaxConnectionsPerPrincipal = 32
	DefaultMaxMessageBytes            = 32 << 10
	DefaultSendQueueBytes             = 1 << 20
	DefaultKeepAlive                  = 15 * time.Second
	DefaultClientTimeout              = 30 * time.Second
	DefaultHandshakeTimeout           = 15 * time.Second
	DefaultRevalidate                 = 5 * time.Second
	DefaultRetention                  = time.Hour
	DefaultPruneEvery                 = 10 * time.Minute
)

const (
	// negotiateTTL is how long a negotiated connection waits for its socket.
	negotiateTTL = 30 * time.Second
	// writeTimeout bounds one write to a socket: a peer that takes longer is gone.
	writeTimeout = 10 * time.Second
	// maxBatch bounds the messages the hub writes in one frame.
	maxBatch = 64 << 10
	// maxGroupsPerConnection bounds the workspaces one connection joins.
	maxGroupsPerConnection = 16
	// readPage is how many outbox events a group reads at once.
	readPage = 512
	// checkers bounds the revalidations running at once.
	checkers = 4
)

// ErrUnauthenticated is what an Authenticate function answers for a request without a credential,
// or with one that does not authenticate.
var ErrUnauthenticated = errors.New("authentication required")

// RateLimited is what an Authenticate function answers for a request refused before its
// authentication: a credential whose rate limit was reached lately and whose window is still
// full. The hub answers it 429 with Retry-After, at no cost of authentication.
type RateLimited struct {
	// Reason is what the client sees; RetryAfterSeconds when to try again.
	Reason            string
	RetryAfterSeconds int
}

func (e *RateLimited) Error() string { return e.Reason }

// Caller is who listens on a connection, resolved from the credential of the request that opened
// it. The hub asks it again, every Revalidate, whether it may go on listening.
type Caller interface {
	// PrincipalID is who listens: the events of one Principal's notifications reach that
	// Principal's connections only, and the bounds count connections per Principal.
	PrincipalID() string
	// Join resolves the workspace a client names (its id or route name) to its id when the caller
	// may read runs there; otherwise an error whose message the client sees.
	Join(ctx context.Context, workspace string) (workspaceID string, err error)
	// Check tells whether the caller may go on listening to the workspaces: denied is the reason
	// why not (its credential no longer authenticates, its Principal is disabled, it may no longer
	// read runs in one of them); err is a failure to find out, after which the hub asks again.
	Check(ctx context.Context, workspaceIDs []string) (denied string, err error)
}

// Limited is what a Caller may also be: one held to rate limits. Limit counts one request of it
// (a negotiation, an upgrade, an invocation) and answers, when a limit is reached, why (the
// client sees it) and after how many seconds to try again; "" when the request goes on.
type Limited interface {
	Limit(ctx context.Context) (refused string, retryAfterSeconds int)
}

// Source is the Workplace outbox.
type Source interface {
	Events(ctx context.Context, workspaceID string, afterSeq int64, take int) ([]workplace.Event, error)
	LastEventSeq(ctx context.Context, workspaceID string) (int64, error)
	PruneEvents(ctx context.Context, before time.Time) (int64, error)
}

// Options configure a Hub. Zero values take the defaults.
type Options struct {
	Source Source
	// Changes is the hub of the store's notifications, where workplace.Topic of a workspace is
	// announced once new events of it are numbered.
	Changes *notify.Hub
	// Authenticate resolves the caller of a request: ErrUnauthenticated without a credential that
	// authenticates, another error when that cannot be found out.
	Authenticate func(*http.Request) (Caller, error)
	// Problem answers a request with Problem Details.
	Problem func(w http.ResponseWriter, status int, detail string)
	// Failed, when set, is given the cause of a request's 5xx answer, for the log line of the
	// request (the service API's, which logs an outage of the store once, not per request).
	Failed func(r *http.Request, cause error)
	// Upgraded, when set, is told of each request whose connection became a WebSocket (the
	// service API's listener then never closes it to make room: the hub bounds its connections
	// itself and drops the silent ones).
	Upgraded func(*http.Request)
	// AllowedOrigins are the origins (scheme://host[:port]) of browser pages on other hosts that
	// may connect with the browser's credentials: the configured Workplace origin. Pages of the
	// hub's own host, and clients that send no Origin, always may.
	AllowedOrigins []string

	// MaxConnections bounds the connections open or negotiated at once, MaxConnectionsPerPrincipal
	// those of one Principal: beyond, negotiate answers 429.
	MaxConnections             int
	MaxConnectionsPerPrincipal int
	// MaxMessageBytes bounds a message (and a frame) a client sends.
	MaxMessageBytes int64
	// SendQueueBytes bounds what waits to be written to one connection: a client that lets more
	// wait is dropped, so that it never holds up the others.
	SendQueueBytes int
	// KeepAlive: the hub pings a connection it has sent nothing for that long. ClientTimeout: it
	// drops a client it heard nothing from for that long. HandshakeTimeout bounds the handshake.
	KeepAlive, ClientTimeout, HandshakeTimeout time.Duration
	// Revalidate is how often a connection's caller is checked again.
	Revalidate time.Duration
	// Retention is how long outbox events are kept; PruneEvery how often older ones are deleted.
	Retention, PruneEvery time.Duration
	Log                   logr.Logger
}

// Hub serves the connections of the real-time hub.
type Hub struct {
	opts    Options
	origins map[string]bool
	// ctx ends at Shutdown: the groups' readers stop with it.
	ctx    context.Context
	cancel context.CancelFunc
	checks chan struct{}

	mu           sync.Mutex
	slots        map[string]*slot
	perPrincipal map[string]int
	total        int
	groups       map[string]*group
	conns        map[*conn]struct{}
	stopping     bool
	served       sync.WaitGroup
}

// slot is a connection negotiated or open: it counts against the bounds until it ends.
type slot struct {
	token     string
	id        string
	principal string
	expires   time.Time
	attached  bool
}

// New returns a hub; Run does its background work.
func New(opts Options) (*Hub, error) {
	if opts.Source == nil || opts.Changes == nil || opts.Authenticate == nil || opts.Problem == nil {
		return nil, errors.New("hub: Source, Changes, Authenticate and Problem are required")
	}
	defaults := []struct {
		v   *int
		def int
	}{{&opts.MaxConnections, DefaultMaxConnections}, {&opts.MaxConnectionsPerPrincipal, DefaultMaxConnectionsPerPrincipal}, {&opts.SendQueueBytes, DefaultSendQueueBytes}}
	for _, d := range defaults {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	durations := []struct {
		v   *time.Duration
		def time.Duration
	}{{&opts.KeepAlive, DefaultKeepAlive}, {&opts.ClientTimeout, DefaultClientTimeout}, {&opts.HandshakeTimeout, DefaultHandshakeTimeout},
		{&opts.Revalidate, DefaultRevalidate}, {&opts.Retention, DefaultRetention}, {&opts.PruneEvery, DefaultPruneEvery}}
	for _, d := range durations {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	h := &Hub{opts: opts, origins: map[string]bool{}, checks: make(chan struct{}, checkers), slots: map[string]*slot{},
		perPrincipal: map[string]int{}, groups: map[string]*group{}, conns: map[*conn]struct{}{}}
	for _, o := range opts.AllowedOrigins {
		if o = strings.TrimSpace(o); o != "" {
			h.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
		}
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h, nil
}

// Run pings idle connections, drops silent ones, checks callers again and prunes the outbox,
// until ctx ends.
func (h *Hub) Run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prune := time.NewTicker(h.opts.PruneEvery)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.ctx.Done():
			return
		case now := <-tick.C:
			h.sweep(now)
		case now := <-prune.C:
			if n, err := h.opts.Source.PruneEvents(ctx, now.Add(-h.opts.Retention)); err != nil {
				h.opts.Log.Error(err, "pruning the Workplace outbox failed; trying again later")
			} else if n > 0 {
				h.opts.Log.V(1).Info("pruned the Workplace outbox", "events", n)
			}
		}
	}
}

// sweep runs once a second over every connection: one pass instead of a timer per connection.
func (h *Hub) sweep(now time.Time) {
	h.mu.Lock()
	for token, s := range h.slots {
		if !s.attached && now.After(s.expires) {
			h.releaseLocked(token)
		}
	}
	var due, stuck []*conn
	for c := range h.conns {
		switch writing := c.writing.Load(); {
		case writing != 0 && now.Sub(time.Unix(0, writing)) > writeTimeout:
			// A peer that takes no bytes for that long is gone.
			stuck = append(stuck, c)
			continue
		case now.Sub(time.Unix(0, c.lastRead.Load())) > h.opts.ClientTimeout:
			c.close(closeMessage("Server timeout elapsed without receiving a message from the client.", false))
			continue
		case now.Sub(time.Unix(0, c.lastWrite.Load())) >= h.opts.KeepAlive:
			c.queue(pingMessage)
		}
		if now.After(c.nextCheck) {
			c.nextCheck = now.Add(h.opts.Revalidate)
			due = append(due, c)
		}
	}
	h.mu.Unlock()
	for _, c := range stuck {
		c.close(nil)
		c.ws.CloseNow() // the write in progress fails at once
	}
	for _, c := range due {
		select {
		case h.checks <- struct{}{}:
			go func() {
				defer func() { <-h.checks }()
				h.check(c)
			}()
		default:
			// Every checker is busy: this connection is checked at a later sweep.
			h.mu.Lock()
			c.nextCheck = now
			h.mu.Unlock()
		}
	}
}

// check asks whether the connection's caller may go on listening, and closes it when not.
func (h *Hub) check(c *conn) {
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	denied, err := c.caller.Check(ctx, c.groupIDs())
	if err != nil {
		h.opts.Log.Info("checking a hub connection's caller failed; checking again later", "connectionId", c.slot.id, "error", err.Error())
		return
	}
	if denied != "" {
		c.close(closeMessage(denied, false))
	}
}

// reserve takes a slot for principal, or says why not (429).
func (h *Hub) reserve(principal string) (*slot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stopping:
		return nil, errStopping
	case h.perPrincipal[principal] >= h.opts.MaxConnectionsPerPrincipal:
		return nil, errTooMany("at most " + strconv.Itoa(h.opts.MaxConnectionsPerPrincipal) + " hub connections are open at once per caller; close one first")
	case h.total >= h.opts.MaxConnections:
		return nil, errTooMany("the hub holds as many connections as it serves; try again later")
	}
	s := &slot{token: randomID(32), id: randomID(16), principal: principal, expires: time.Now().Add(negotiateTTL)}
	h.slots[s.token] = s
	h.perPrincipal[principal]++
	h.total++
	return s, nil
}

func (h *Hub) releaseLocked(token string) {
	s, ok := h.slots[token]
	if !ok {
		return
	}
	delete(h.slots, token)
	if h.perPrincipal[s.principal]--; h.perPrincipal[s.principal] <= 0 {
		delete(h.perPrincipal, s.principal)
	}
	h.total--
}

type tooMany string

func (e tooMany) Error() string { return string(e) }
func errTooMany(s string) error { return tooMany(s) }

var errStopping = errors.New("the server is shutting down; connect again in a moment")

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Connections is how many connections are open or negotiated.
func (h *Hub) Connections() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// Shutdown tells every client that the server stops (a Close message that lets it reconnect),
// refuses new connections, and waits until every connection ended or ctx ends.
func (h *Hub) Shutdown(ctx context.Context) {
	h.mu.Lock()
	h.stopping = true
	for c := range h.conns {
		c.close(closeMessage("", true))
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.served.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	h.cancel()
}

// origin checks the request's Origin: none (not a browser), the hub's own host, or an allowed
// origin. cross is set for an allowed origin of another host, which CORS answers name.
func (h *Hub) origin(r *http.Request) (origin string, cross, ok bool) {
	origin = r.Header.Get("Origin")
	if origin == "" {
		return "", false, true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return origin, false, false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return origin, false, true
	}
	if h.origins[strings.ToLower(u.Scheme+"://"+u.Host)] {
		return origin, true, true
	}
	return origin, false, false
}

func (h *Hub) cors(w http.ResponseWriter, origin string) {
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Set("Access-Control-Allow-Credentials", "true")
	w.Header().Add("Vary", "Origin")
}

// ServePreflight answers the CORS preflight of negotiate for an allowed origin.
func (h *Hub) ServePreflight(w http.ResponseWriter, r *http.Request) {
	origin, cross, ok := h.origin(r)
	if !ok || !cross {
		h.opts.Problem(w, http.StatusForbidden, "cross-origin request refused")
		return
	}
	h.cors(w, origin)
	w.Header().Set("Access-Control-Allow-Methods", "POST, GET, OPTIONS")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Requested-With, X-SignalR-User-Agent")
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// authenticate resolves the caller, or answers 401, 403 (a foreign origin) or 500.
func (h *Hub) authenticate(w http.ResponseWriter, r *http.Request) (Caller, bool) {
	origin, cross, ok := h.origin(r)
	if !ok {
		h.opts.Problem(w, http.StatusForbidden, "cross-origin request refused: the hub accepts pages of its own host and of the configured Workplace origins")
		return nil, false
	}
	if cross {
		h.cors(w, origin)
	}
	caller, err := h.opts.Authenticate(r)
	var limited *RateLimited
	switch {
	case errors.As(err, &limited):
		w.Header().Set("Retry-After", strconv.Itoa(limited.RetryAfterSeconds))
		h.opts.Problem(w, http.StatusTooManyRequests, limited.Reason)
		return nil, false
	case errors.Is(err, ErrUnauthenticated):
		h.opts.Problem(w, http.StatusUnauthorized, "authentication required")
		return nil, false
	case store.Unreachable(err):
		// The database restarting: the client's reconnection will succeed in a moment.
		h.failed(r, err)
		w.Header().Set("Retry-After", "2")
		h.opts.Problem(w, http.StatusServiceUnavailable, "the database does not answer; retry")
		return nil, false
	case err != nil:
		h.failed(r, err)
		h.opts.Log.Error(err, "authenticating a hub request failed")
		h.opts.Problem(w, http.StatusInternalServerError, "internal error")
		return nil, false
	}
	if limited, ok := caller.(Limited); ok {
		if refused, after := limited.Limit(r.Context()); refused != "" {
			w.Header().Set("Retry-After", strconv.Itoa(after))
			h.opts.Problem(w, http.StatusTooManyRequests, refused)
			return nil, false
		}
	}
	return caller, true
}

// ServeNegotiate answers POST negotiate: the connection's id and token and the one transport the
// hub offers, WebSockets (never stateful reconnect). Beyond a bound it answers 429.
func (h *Hub) ServeNegotiate(w http.ResponseWriter, r *http.Request) {
	version := 0
	if v := r.URL.Query().Get("negotiateVersion"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			h.opts.Problem(w, http.StatusBadRequest, "negotiateVersion must be a non-negative integer")
			return
		}
		version = min(n, 1)
	}
	caller, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	s, err := h.reserve(caller.PrincipalID())
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	type transport struct {
		Transport       string   `json:"transport"`
		TransferFormats []string `json:"transferFormats"`
	}
	body := struct {
		ConnectionID        string      `json:"connectionId"`
		ConnectionToken     string      `json:"connectionToken,omitempty"`
		NegotiateVersion    int         `json:"negotiateVersion"`
		AvailableTransports []transport `json:"availableTransports"`
	}{ConnectionID: s.id, ConnectionToken: s.token, NegotiateVersion: version,
		AvailableTransports: []transport{{Transport: "WebSockets", TransferFormats: []string{"Text"}}}}
	if version == 0 {
		// Version 0 has no token: the id names the connection in the upgrade.
		body.ConnectionID, body.ConnectionToken = s.token, ""
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(body)
}

// failed hands the cause of a 5xx answer to the request's log line, when someone keeps it.
func (h *Hub) failed(r *http.Request, cause error) {
	if h.opts.Failed != nil {
		h.opts.Failed(r, cause)
	}
}

func (h *Hub) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var many tooMany
	switch {
	case errors.As(err, &many):
		w.Header().Set("Retry-After", "5")
		h.opts.Problem(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, errStopping):
		h.opts.Problem(w, http.StatusServiceUnavailable, err.Error())
	case store.Unreachable(err):
		h.failed(r, err)
		w.Header().Set("Retry-After", "2")
		h.opts.Problem(w, http.StatusServiceUnavailable, "the database does not answer; retry")
	default:
		h.failed(r, err)
		h.opts.Problem(w, http.StatusInternalServerError, "internal error")
	}
}

// ServeWebSocket upgrades GET ?id=<connectionToken> to the connection negotiated with that
// token (404 for a token the hub does not know, 409 when it has its socket already); without an
// id, to a new connection. The caller must be the one that negotiated.
func (h *Hub) ServeWebSocket(w http.ResponseWriter, r *http.Request) {
	caller, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	token := r.URL.Query().Get("id")
	var s *slot
	if token == "" {
		var err error
		if s, err = h.reserve(caller.PrincipalID()); err != nil {
			h.refuse(w, r, err)
			return
		}
	}
	h.mu.Lock()
	if token != "" {
		s = h.slots[token]
		switch {
		case s == nil:
			h.mu.Unlock()
			h.opts.Problem(w, http.StatusNotFound, "no connection with this id: negotiate again")
			return
		case s.attached:
			h.mu.Unlock()
			h.opts.Problem(w, http.StatusConflict, "the connection has its socket already")
			return
		case s.principal != caller.PrincipalID():
			h.mu.Unlock()
			h.opts.Problem(w, http.StatusForbidden, "the connection was negotiated by another caller")
			return
		}
	}
	if h.stopping {
		h.releaseLocked(s.token)
		h.mu.Unlock()
		h.refuse(w, r, errStopping)
		return
	}
	s.attached = true
	h.served.Add(1)
	h.mu.Unlock()
	defer h.served.Done()

	// The origin was checked above (authenticate), with the configured origins.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		h.mu.Lock()
		h.releaseLocked(s.token)
		h.mu.Unlock()
		return
	}
	if h.opts.Upgraded != nil {
		h.opts.Upgraded(r)
	}
	c := newConn(h, s, ws, caller)
	h.mu.Lock()
	stopping := h.stopping
	h.conns[c] = struct{}{}
	h.mu.Unlock()
	if stopping {
		c.close(closeMessage("", true))
	}
	c.serve()
	h.mu.Lock()
	delete(h.conns, c)
	h.releaseLocked(s.token)
	h.mu.Unlock()
}
