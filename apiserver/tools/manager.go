package tools

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/version"
)

// Defaults of the Platform:Tools settings.
const (
	// DefaultTimeout bounds connecting, one discovery and one call when a provider sets none.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResultBytes bounds the result of one call that a model reads; the rest is cut.
	DefaultMaxResultBytes = 64 << 10
	// DefaultMaxMessageBytes bounds one message a provider sends (a line over STDIO, a response
	// body over HTTP). A bigger one ends the session; the call reads an error result.
	DefaultMaxMessageBytes = 4 << 20
	// DefaultIdleTimeout closes a provider session nobody used for that long (a STDIO process
	// stops).
	DefaultIdleTimeout = 10 * time.Minute
	// maxTools bounds how many tools one discovery reads.
	maxTools = 1000
)

// restartBackoff is the pause before the n-th consecutive reconnection of a provider whose
// session failed or ended: 500 ms doubling up to 30 s.
func restartBackoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return min(500*time.Millisecond<<min(n-1, 10), 30*time.Second)
}

// Options configure a Manager.
type Options struct {
	// Kube reads ToolProviders and Tools and writes their status.
	Kube client.Client
	// Secrets resolves the Bearer credential of HTTP providers (on every request) and the Secret
	// environment variables of STDIO processes (when the process starts).
	Secrets SecretLookup
	// AllowedCommands are the only commands a STDIO provider may run (exact strings, as the
	// definition's command): a workspace's writers must not run programs of their choice on the
	// platform's host. Platform:Tools:AllowedCommands, comma-separated; none by default.
	AllowedCommands []string
	// MaxResultBytes, MaxMessageBytes and IdleTimeout default to the constants above.
	MaxResultBytes  int
	MaxMessageBytes int
	IdleTimeout     time.Duration
	// MaxConcurrentCallsPerWorkspace bounds the calls under way in one workspace
	// (Platform:Tools:MaxConcurrentCallsPerWorkspace); DefaultMaxConcurrentCallsPerWorkspace
	// when 0.
	MaxConcurrentCallsPerWorkspace int
	// DiscoverExtensionsOnStartup makes DiscoverExtensions refresh every Extension provider when
	// the platform starts (Platform:Extensions:DiscoverOnStartup); off by default, so a start
	// contacts nothing.
	DiscoverExtensionsOnStartup bool
	// ExtensionsAllowPrivateNetwork lets extensions be reached at private addresses
	// (Platform:Extensions:AllowPrivateNetwork); only loopback and public ones by default.
	ExtensionsAllowPrivateNetwork bool
	// RedeemURL is the platform's capability redemption endpoint as extensions reach it
	// (Platform:Extensions:RedeemUrl, else derived from the service API's address).
	RedeemURL string
	// CapabilityLifetime bounds how long after its call began a capability may be redeemed;
	// DefaultCapabilityLifetime when 0. A capability also ends with its call.
	CapabilityLifetime time.Duration
	Log                logr.Logger
}

// OptionsFromConfig reads Platform:Tools:AllowedCommands, :MaxResultBytes, :MaxMessageBytes and
// :MaxConcurrentCallsPerWorkspace, and Platform:Extensions:DiscoverOnStartup,
// :AllowPrivateNetwork and :RedeemUrl into opts.
func OptionsFromConfig(cfg *config.Config, opts Options) (Options, error) {
	for _, c := range strings.Split(cfg.Get("Platform:Tools:AllowedCommands"), ",") {
		if c = strings.TrimSpace(c); c != "" {
			opts.AllowedCommands = append(opts.AllowedCommands, c)
		}
	}
	for key, target := range map[string]*int{"MaxResultBytes": &opts.MaxResultBytes, "MaxMessageBytes": &opts.MaxMessageBytes} {
		v := cfg.Get("Platform:Tools:" + key)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1024 || n > 64<<20 {
			return opts, fmt.Errorf("Platform:Tools:%s=%q: must be a number of bytes from 1024 to %d", key, v, 64<<20)
		}
		*target = n
	}
	for key, target := range map[string]*bool{"DiscoverOnStartup": &opts.DiscoverExtensionsOnStartup,
		"AllowPrivateNetwork": &opts.ExtensionsAllowPrivateNetwork} {
		switch v := strings.ToLower(strings.TrimSpace(cfg.Get("Platform:Extensions:" + key))); v {
		case "":
		case "true":
			*target = true
		case "false":
			*target = false
		default:
			return opts, fmt.Errorf("Platform:Extensions:%s=%q: must be true or false", key, v)
		}
	}
	if v := cfg.Get("Platform:Extensions:RedeemUrl"); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return opts, fmt.Errorf("Platform:Extensions:RedeemUrl=%q: must be an absolute http(s) URL without credentials, query or fragment", v)
		}
		opts.RedeemURL = v
	}
	if v := cfg.Get("Platform:Tools:MaxConcurrentCallsPerWorkspace"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1024 {
			return opts, fmt.Errorf("Platform:Tools:MaxConcurrentCallsPerWorkspace=%q: must be a number from 1 to 1024", v)
		}
		opts.MaxConcurrentCallsPerWorkspace = n
	}
	return opts, nil
}

// Manager holds one MCP client session per ToolProvider, started on first need and restarted
// with backoff after it fails, and closes sessions that nobody used for IdleTimeout.
type Manager struct {
	opts Options

	mu        sync.Mutex
	providers map[types.NamespacedName]*providerState
	closed    bool

	// calls counts the calls under way per workspace.
	calls *Slots
	// capabilities are the outstanding one-use Secret capabilities of extension calls.
	capabilities *capabilities
}

// providerState is what the Manager keeps of one provider between calls.
type providerState struct {
	// mu serializes connecting, so one provider has one session.
	mu      sync.Mutex
	session *session
	// failures counts consecutive failed or short-lived sessions; retryAt is when the next
	// connection may be tried.
	failures int
	retryAt  time.Time
	// reported is the connection state last written to the provider's status.
	reported platformv1.ToolProviderConnectionState
}

// peer is one live connection to a provider in the protocol it speaks: an MCP client session
// (mcpPeer) or an extension-protocol client (extensionPeer). Everything else the Manager does
// (one session per provider, backoff, status, bounds, the call chain, idempotency keys) is the
// same for both, and so is the governance of the executor and /mcp above it.
type peer interface {
	// tools lists the provider's tools.
	tools(ctx context.Context) iter.Seq2[*mcp.Tool, error]
	// call runs one tool; the idempotency key is in params' _meta (IdempotencyMetaKey).
	call(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error)
	ping(ctx context.Context) error
	// wait returns when the connection ended, for whatever reason.
	wait() error
	close() error
}

// mcpPeer is an MCP client session.
type mcpPeer struct{ cs *mcp.ClientSession }

func (p mcpPeer) tools(ctx context.Context) iter.Seq2[*mcp.Tool, error] { return p.cs.Tools(ctx, nil) }
func (p mcpPeer) call(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	return p.cs.CallTool(ctx, params)
}
func (p mcpPeer) ping(ctx context.Context) error { return p.cs.Ping(ctx, nil) }
func (p mcpPeer) wait() error                    { return p.cs.Wait() }
func (p mcpPeer) close() error                   { return p.cs.Close() }

// session is one live connection with a provider.
type session struct {
	peer       peer
	uid        types.UID
	generation int64
	info       ServerInfo
	started    time.Time
	lastUsed   atomic.Int64
	// faults records how the provider broke the protocol, for messages.
	faults *peerFaults
	// done is closed when the session ended, for whatever reason.
	done chan struct{}
	// closing is set when the Manager closed the session itself (idle, changed definition).
	closing atomic.Bool
	close   func()
}

// alive reports whether the session may carry calls: it has not ended and nobody began to
// close it.
func (s *session) alive() bool {
	if s.closing.Load() {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// peerFaults records how a provider broke the protocol: the SDK reports such failures as a
// closed connection, and its errors may quote what the provider sent.
type peerFaults struct {
	// oversized: a message over MaxMessageBytes.
	oversized atomic.Bool
	// garbled: a line of STDIO output that is not a JSON message.
	garbled atomic.Bool
}

// ServerInfo is what a provider says of itself in the handshake.
type ServerInfo struct {
	Name            string
	Version         string
	ProtocolVersion string
}

// NewManager checks opts and builds a Manager.
func NewManager(opts Options) (*Manager, error) {
	if opts.Kube == nil || opts.Secrets == nil {
		return nil, errors.New("tools: Kube and Secrets are required")
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxConcurrentCallsPerWorkspace <= 0 {
		opts.MaxConcurrentCallsPerWorkspace = DefaultMaxConcurrentCallsPerWorkspace
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.CapabilityLifetime <= 0 {
		opts.CapabilityLifetime = DefaultCapabilityLifetime
	}
	return &Manager{opts: opts, providers: map[types.NamespacedName]*providerState{},
		calls: NewSlots(opts.MaxConcurrentCallsPerWorkspace), capabilities: newCapabilities()}, nil
}

// Close ends every session (STDIO processes are stopped) and refuses new ones.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	states := make([]*providerState, 0, len(m.providers))
	for _, st := range m.providers {
		states = append(states, st)
	}
	m.mu.Unlock()
	for _, st := range states {
		st.mu.Lock()
		if st.session != nil {
			st.session.closing.Store(true)
			st.session.close()
			st.session = nil
		}
		st.mu.Unlock()
	}
}

// Forget ends the session of a provider that was deleted (its STDIO process stops).
func (m *Manager) Forget(namespace, name string) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	m.mu.Lock()
	st, ok := m.providers[key]
	delete(m.providers, key)
	m.mu.Unlock()
	if !ok {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.session != nil {
		st.session.closing.Store(true)
		st.session.close()
		st.session = nil
	}
}

func (m *Manager) state(key types.NamespacedName) (*providerState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("tools: the manager is stopped")
	}
	st, ok := m.providers[key]
	if !ok {
		st = &providerState{}
		m.providers[key] = st
	}
	m.reapIdleLocked(key)
	return st, nil
}

// reapIdleLocked closes the sessions of other providers that nobody used for IdleTimeout. It
// runs on the way to any provider, so an idle platform keeps idle processes only until its next
// tool call.
func (m *Manager) reapIdleLocked(except types.NamespacedName) {
	cutoff := time.Now().Add(-m.opts.IdleTimeout).UnixNano()
	for key, st := range m.providers {
		if key == except || !st.mu.TryLock() {
			continue
		}
		if s := st.session; s != nil && s.lastUsed.Load() < cutoff {
			s.closing.Store(true)
			s.close()
			st.session = nil
		}
		st.mu.Unlock()
	}
}

// timeout is the provider's timeoutSeconds, or DefaultTimeout.
func timeout(p *platformv1.ToolProvider) time.Duration {
	if t := p.Definition.TimeoutSeconds; t != nil && *t > 0 {
		return time.Duration(*t) * time.Second
	}
	return DefaultTimeout
}

// connect returns the live session of p, starting one if needed. A session of an older
// generation of p is closed first. After a failure, the next attempt waits for the backoff (as
// long as ctx allows).
func (m *Manager) connect(ctx context.Context, p *platformv1.ToolProvider) (*session, error) {
	if p.Definition.Protocol != platformv1.MCPProtocol && p.Definition.Protocol != platformv1.ExtensionProtocol {
		return nil, &ConfigurationError{Provider: p.Name, Reason: fmt.Sprintf("the %s protocol is not supported", p.Definition.Protocol)}
	}
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	st, err := m.state(key)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if s := st.session; s != nil {
		if s.alive() && s.uid == p.UID && s.generation == p.Generation {
			s.lastUsed.Store(time.Now().UnixNano())
			return s, nil
		}
		s.closing.Store(true)
		s.close()
		st.session = nil
	}
	if wait := time.Until(st.retryAt); wait > 0 {
		select {
		case <-ctx.Done():
			return nil, &UnavailableError{Provider: p.Name, Reason: fmt.Sprintf("it failed recently and is restarted after a pause of %s", restartBackoff(st.failures).Round(time.Millisecond)), Timeout: true}
		case <-time.After(wait):
		}
	}
	connectCtx, cancel := context.WithTimeout(ctx, timeout(p))
	defer cancel()
	s, err := m.open(connectCtx, p)
	if err != nil {
		if ctx.Err() != nil && connectCtx.Err() == nil {
			return nil, ctx.Err()
		}
		st.failures++
		st.retryAt = time.Now().Add(restartBackoff(st.failures))
		err = classify(p, s, connectCtx, err, "connecting")
		m.report(p, st, platformv1.ToolProviderConnectionFailed, err.Error(), ServerInfo{})
		return nil, err
	}
	st.session = s
	m.report(p, st, platformv1.ToolProviderConnected, "", s.info)
	go m.watch(p, st, s)
	return s, nil
}

// watch notices the end of a session: a provider that ends it (a process that exits, a server
// that drops it) is restarted on next need after a backoff that grows while sessions keep
// ending within a minute of their start.
func (m *Manager) watch(p *platformv1.ToolProvider, st *providerState, s *session) {
	_ = s.peer.wait()
	close(s.done)
	if s.closing.Load() {
		return
	}
	st.mu.Lock()
	if time.Since(s.started) < time.Minute {
		st.failures++
	} else {
		st.failures = 1
	}
	st.retryAt = time.Now().Add(restartBackoff(st.failures))
	if st.session == s {
		st.session = nil
	}
	reason := "the session ended"
	if p.Definition.Transport == platformv1.StdioTransport {
		reason = "the process exited"
	}
	switch {
	case s.faults.oversized.Load():
		reason = fmt.Sprintf("it sent a message over %d bytes", m.opts.MaxMessageBytes)
	case s.faults.garbled.Load():
		reason = "it wrote something that is not MCP"
	}
	m.report(p, st, platformv1.ToolProviderConnectionFailed, reason+"; it is restarted on next use", ServerInfo{})
	st.mu.Unlock()
	m.opts.Log.Info("tool provider session ended", "namespace", p.Namespace, "toolProvider", p.Name, "reason", reason)
}

// open starts a session with p: its transport, then the MCP handshake (or, for an extension,
// the discovery document).
func (m *Manager) open(ctx context.Context, p *platformv1.ToolProvider) (*session, error) {
	s := &session{uid: p.UID, generation: p.Generation, started: time.Now(), faults: &peerFaults{}, done: make(chan struct{})}
	s.lastUsed.Store(time.Now().UnixNano())
	if p.Definition.Protocol == platformv1.ExtensionProtocol {
		return s, m.openExtension(ctx, p, s)
	}
	var (
		transport mcp.Transport
		stop      func()
		err       error
	)
	switch p.Definition.Transport {
	case platformv1.StdioTransport:
		transport, stop, err = m.stdioTransport(ctx, p, s.faults)
	case platformv1.StreamableHTTPTransport:
		transport, err = m.httpTransport(p, s.faults)
	default:
		err = &ConfigurationError{Provider: p.Name, Reason: fmt.Sprintf("transport %q is not supported", p.Definition.Transport)}
	}
	if err != nil {
		return s, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "platform", Version: version.Version},
		// No roots, sampling or elicitation: a provider gets nothing from the platform but calls.
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		if stop != nil {
			stop()
		}
		return s, err
	}
	s.peer = mcpPeer{cs: cs}
	s.close = func() {
		_ = cs.Close()
		if stop != nil {
			stop()
		}
	}
	if res := cs.InitializeResult(); res != nil {
		s.info.ProtocolVersion = res.ProtocolVersion
		if res.ServerInfo != nil {
			s.info.Name, s.info.Version = truncate(res.ServerInfo.Name, 256), truncate(res.ServerInfo.Version, 128)
		}
	}
	return s, nil
}

// classify turns an error of the SDK into an UnavailableError (or keeps a ConfigurationError),
// with a message that holds no output of the provider: SDK errors may quote what it sent.
func classify(p *platformv1.ToolProvider, s *session, ctx context.Context, err error, doing string) error {
	var configErr *ConfigurationError
	var unavailable *UnavailableError
	switch {
	case errors.As(err, &configErr), errors.As(err, &unavailable):
		return err
	case s != nil && s.faults.oversized.Load():
		return &UnavailableError{Provider: p.Name, Reason: fmt.Sprintf("%s: it sent a message over the size limit", doing)}
	case s != nil && s.faults.garbled.Load():
		return &UnavailableError{Provider: p.Name, Reason: fmt.Sprintf("%s: it answered with something that is not MCP", doing)}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &UnavailableError{Provider: p.Name, Reason: fmt.Sprintf("%s: it did not answer within %s", doing, timeout(p)), Timeout: true}
	}
	return &UnavailableError{Provider: p.Name, Reason: doing + ": " + safeReason(err)}
}

// safeReason describes a transport failure by its kind only.
func safeReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"):
		return "the connection was refused"
	case strings.Contains(msg, "no such host"):
		return "the host name does not resolve"
	case strings.Contains(msg, "EOF"), strings.Contains(msg, "closed"), strings.Contains(msg, "broken pipe"):
		return "the connection closed before the answer"
	case strings.Contains(msg, "executable file not found"), strings.Contains(msg, "no such file"):
		return "the command was not found"
	case strings.Contains(msg, "permission denied"):
		return "the command may not be executed"
	case strings.Contains(msg, "unsupported protocol version"):
		return "it offered no protocol version this platform speaks"
	case strings.Contains(msg, "decode"), strings.Contains(msg, "unmarshal"), strings.Contains(msg, "invalid character"),
		strings.Contains(msg, "invalid trailing data"), strings.Contains(msg, "JSON"), strings.Contains(msg, "json"):
		return "it answered with something that is not MCP"
	}
	return "the exchange failed"
}

// report writes the provider's connection state when it changed since the last report (and,
// on connection, what the server said of itself). A failed write is only logged: the state is
// for people, the call goes on.
func (m *Manager) report(p *platformv1.ToolProvider, st *providerState, state platformv1.ToolProviderConnectionState, message string, info ServerInfo) {
	if st.reported == state {
		return
	}
	st.reported = state
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.patchConnection(ctx, p.Namespace, p.Name, state, message, info); err != nil && !apierrors.IsNotFound(err) {
		m.opts.Log.Error(err, "writing the connection state of a tool provider", "namespace", p.Namespace, "toolProvider", p.Name)
	}
}

func (m *Manager) patchConnection(ctx context.Context, namespace, name string, state platformv1.ToolProviderConnectionState, message string, info ServerInfo) error {
	current := &platformv1.ToolProvider{}
	if err := m.opts.Kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, current); err != nil {
		return err
	}
	before := current.DeepCopy()
	setConnection(&current.Status, state, message, metav1.Now())
	if state == platformv1.ToolProviderConnected {
		setServerInfo(&current.Status, info)
	}
	return m.opts.Kube.Status().Patch(ctx, current, client.MergeFrom(before))
}

func setConnection(status *platformv1.ToolProviderStatus, state platformv1.ToolProviderConnectionState, message string, now metav1.Time) {
	c := status.Connection
	if c == nil || c.State != state {
		c = &platformv1.ToolProviderConnection{State: state, LastTransitionTime: &now}
	} else {
		c = c.DeepCopy()
	}
	c.Message = truncate(message, 1024)
	status.Connection = c
}

func setServerInfo(status *platformv1.ToolProviderStatus, info ServerInfo) {
	status.ServerName, status.ServerVersion, status.ProtocolVersion = info.Name, info.Version, truncate(info.ProtocolVersion, 64)
}

// provider reads a ToolProvider.
func (m *Manager) provider(ctx context.Context, namespace, name string) (*platformv1.ToolProvider, error) {
	p := &platformv1.ToolProvider{}
	if err := m.opts.Kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Test connects to p (or reuses its session) and pings it.
func (m *Manager) Test(ctx context.Context, p *platformv1.ToolProvider) (ServerInfo, error) {
	s, err := m.connect(ctx, p)
	if err != nil {
		return ServerInfo{}, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, timeout(p))
	defer cancel()
	if err := s.peer.ping(pingCtx); err != nil {
		return ServerInfo{}, m.failed(p, s, pingCtx, err, "ping")
	}
	return s.info, nil
}

// failed handles an error of an exchange on a live session: the session is dropped when the
// error broke it, and the error is classified.
func (m *Manager) failed(p *platformv1.ToolProvider, s *session, ctx context.Context, err error, doing string) error {
	err = classify(p, s, ctx, err, doing)
	if s.faults.oversized.Load() || !s.alive() || errors.Is(err, mcp.ErrConnectionClosed) {
		s.closing.Store(true)
		s.close()
	}
	return err
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
