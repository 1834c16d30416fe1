package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/tools/aep"
)

// An Extension provider is reached with the extension protocol (package aep,
// docs/extension-protocol.md): its discovery document at /.well-known/aep below the provider's
// URL lists its tools and the Secret roles it asks for, and each call is one POST to its
// invocation endpoint. It is the second transport behind the Manager's peer interface: the
// session, the bounds, the status and every rule of calling tools are those of MCP providers.

// extensionRefusal is a 4xx answer of an extension to a call: the model reads the status.
type extensionRefusal struct{ status int }

func (e *extensionRefusal) Error() string {
	return fmt.Sprintf("the extension refused the call (HTTP %d)", e.status)
}

// extensionPeer is the platform's client of one extension. It holds no connection: the
// session lasts while the provider's definition is unchanged and it is in use, and keeps the
// last discovery document (read again by every discovery and ping).
type extensionPeer struct {
	m      *Manager
	p      *platformv1.ToolProvider
	base   *url.URL
	client *http.Client
	faults *peerFaults

	mu  sync.Mutex
	doc *aep.Document

	done      chan struct{}
	closeOnce sync.Once
}

// openExtension reads p's discovery document into a session.
func (m *Manager) openExtension(ctx context.Context, p *platformv1.ToolProvider, s *session) error {
	httpClient, err := m.httpClient(p, s.faults)
	if err != nil {
		return err
	}
	base, err := url.Parse(p.Definition.HTTP.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return &ConfigurationError{Provider: p.Name, Reason: "definition.http.url is not an absolute http(s) URL"}
	}
	base.RawQuery, base.Fragment = "", ""
	e := &extensionPeer{m: m, p: p.DeepCopy(), base: base, client: httpClient, faults: s.faults, done: make(chan struct{})}
	doc, err := e.discover(ctx)
	if err != nil {
		return err
	}
	s.peer = e
	s.close = func() { _ = e.close() }
	s.info = ServerInfo{Name: truncate(doc.Extension.Name, 256), Version: truncate(doc.Extension.Version, 128), ProtocolVersion: doc.ProtocolVersion}
	return nil
}

// endpoint is path below the provider's URL.
func (e *extensionPeer) endpoint(path string) string {
	u := *e.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	return u.String()
}

var (
	validRole       = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$`)
	validInvokePath = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)+$`)
)

// discover reads and checks the discovery document, and keeps it.
func (e *extensionPeer) discover(ctx context.Context) (*aep.Document, error) {
	var doc aep.Document
	if err := e.exchange(ctx, http.MethodGet, aep.DiscoveryPath, nil, &doc, "reading the discovery document"); err != nil {
		return nil, err
	}
	if reason := checkDocument(&doc); reason != "" {
		return nil, &UnavailableError{Provider: e.p.Name, Reason: "its discovery document " + reason}
	}
	e.mu.Lock()
	e.doc = &doc
	e.mu.Unlock()
	return &doc, nil
}

// checkDocument says what is wrong with a discovery document ("" when nothing is). The tools
// themselves are checked by discovery, as MCP tools are.
func checkDocument(doc *aep.Document) string {
	switch {
	case doc.ProtocolVersion != aep.Version:
		return fmt.Sprintf("is of protocol version %q; this platform speaks %s", truncate(doc.ProtocolVersion, 32), aep.Version)
	case doc.Extension.Name == "":
		return "names no extension"
	case doc.InvokePath != "" && (!validInvokePath.MatchString(doc.InvokePath) || strings.Contains(doc.InvokePath, "/..")):
		return "has an invokePath that is not a plain path"
	case len(doc.Secrets) > 16:
		return "asks for more than 16 Secret roles"
	}
	roles := map[string]bool{}
	for _, r := range doc.Secrets {
		if !validRole.MatchString(r.Name) || roles[r.Name] {
			return fmt.Sprintf("asks for a Secret role whose name is invalid or repeated (%q)", truncate(r.Name, 64))
		}
		roles[r.Name] = true
	}
	for _, t := range doc.Tools {
		for _, r := range t.Secrets {
			if !roles[r] {
				return fmt.Sprintf("has tool %q needing Secret role %q, which it does not ask for", truncate(t.Name, 128), truncate(r, 64))
			}
		}
	}
	return ""
}

// exchange sends one request (a JSON body when in is not nil) and decodes a 200 answer into
// out. A 401 or 403 is a ConfigurationError (the credential is wrong), another 4xx of a call an
// extensionRefusal, anything else an UnavailableError; no message quotes what the extension
// sent.
func (e *extensionPeer) exchange(ctx context.Context, method, path string, in any, out any, doing string) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.endpoint(path), body)
	if err != nil {
		return &ConfigurationError{Provider: e.p.Name, Reason: "definition.http.url does not make a request URL"}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(aep.VersionHeader, aep.Version)
	if inv, ok := in.(*aep.Invocation); ok {
		req.Header.Set("Content-Type", "application/json")
		if inv.IdempotencyKey != "" {
			req.Header.Set(aep.IdempotencyKeyHeader, inv.IdempotencyKey)
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		var configErr *ConfigurationError
		if errors.As(err, &configErr) {
			return configErr
		}
		return classifyExtension(e.p, e.faults, ctx, err, doing)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return &ConfigurationError{Provider: e.p.Name, Reason: fmt.Sprintf("%s: the extension refused the platform's credential (HTTP %d)", doing, resp.StatusCode)}
	case in != nil && resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests:
		return &extensionRefusal{status: resp.StatusCode}
	case resp.StatusCode != http.StatusOK:
		return &UnavailableError{Provider: e.p.Name, Reason: fmt.Sprintf("%s: it answered HTTP %d", doing, resp.StatusCode)}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return classifyExtension(e.p, e.faults, ctx, err, doing)
	}
	return nil
}

// classifyExtension is classify for an extension, whose answers are not MCP.
func classifyExtension(p *platformv1.ToolProvider, faults *peerFaults, ctx context.Context, err error, doing string) error {
	var unavailable *UnavailableError
	switch {
	case errors.As(err, &unavailable):
		return err
	case faults.oversized.Load():
		return &UnavailableError{Provider: p.Name, Reason: doing + ": it sent a message over the size limit"}
	case errors.Is(err, errRedirect):
		return &UnavailableError{Provider: p.Name, Reason: doing + ": it answered with a redirect, which is not followed"}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &UnavailableError{Provider: p.Name, Reason: fmt.Sprintf("%s: it did not answer within %s", doing, timeout(p)), Timeout: true}
	case strings.Contains(err.Error(), "may not be reached at"):
		return &ConfigurationError{Provider: p.Name, Reason: doing + ": " + addressRefusal(err)}
	}
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typeErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &UnavailableError{Provider: p.Name, Reason: doing + ": it answered with something that is not the extension protocol"}
	}
	return &UnavailableError{Provider: p.Name, Reason: doing + ": " + safeReason(err)}
}

// addressRefusal is the guard's own sentence, without the address.
func addressRefusal(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "extensions may not be reached at"); i >= 0 {
		return msg[i:]
	}
	if i := strings.Index(msg, "tool providers may not be reached at"); i >= 0 {
		return msg[i:]
	}
	return "its address is refused"
}

func (e *extensionPeer) tools(ctx context.Context) iter.Seq2[*mcp.Tool, error] {
	return func(yield func(*mcp.Tool, error) bool) {
		doc, err := e.discover(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, t := range doc.Tools {
			tool := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description}
			if len(t.InputSchema) > 0 {
				tool.InputSchema = t.InputSchema
			}
			if !yield(tool, nil) {
				return
			}
		}
	}
}

func (e *extensionPeer) ping(ctx context.Context) error {
	_, err := e.discover(ctx)
	return err
}

// call issues a capability for each Secret role the tool needs, bound to the provider's exact
// scope and binding and ending with the call, then posts the invocation.
func (e *extensionPeer) call(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	e.mu.Lock()
	doc := e.doc
	e.mu.Unlock()
	var tool *aep.Tool
	for i := range doc.Tools {
		if doc.Tools[i].Name == params.Name {
			tool = &doc.Tools[i]
		}
	}
	if tool == nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the extension no longer lists this tool"}}}, nil
	}
	key, _ := params.Meta[IdempotencyMetaKey].(string)
	args, _ := params.Arguments.(json.RawMessage)
	inv := &aep.Invocation{ProtocolVersion: aep.Version, Tool: tool.Name, Arguments: args, IdempotencyKey: key, Scope: e.p.Namespace}
	var issued [][sha256.Size]byte
	defer func() { e.m.capabilities.revoke(issued...) }()
	for _, role := range tool.Secrets {
		var binding *platformv1.ExtensionSecretBinding
		if x := e.p.Definition.Extension; x != nil {
			for i := range x.Secrets {
				if x.Secrets[i].Role == role {
					binding = &x.Secrets[i]
				}
			}
		}
		if binding == nil {
			return nil, &ConfigurationError{Provider: e.p.Name, Reason: fmt.Sprintf("tool %q needs Secret role %q, which definition.extension.secrets does not bind", tool.Name, role)}
		}
		if e.m.opts.RedeemURL == "" {
			return nil, &ConfigurationError{Provider: e.p.Name, Reason: "this server has no capability redemption endpoint (Platform:Extensions:RedeemUrl)"}
		}
		expires := time.Now().Add(e.m.opts.CapabilityLifetime)
		token, k, err := e.m.capabilities.issue(capability{namespace: e.p.Namespace, provider: e.p.Name, uid: e.p.UID, role: role,
			secret: binding.Secret, expires: expires})
		if err != nil {
			return nil, &UnavailableError{Provider: e.p.Name, Reason: err.Error()}
		}
		issued = append(issued, k)
		if inv.Capabilities == nil {
			inv.Capabilities = map[string]aep.Capability{}
		}
		inv.Capabilities[role] = aep.Capability{Token: token, RedeemURL: e.m.opts.RedeemURL, ExpiresAt: expires.UTC().Truncate(time.Second)}
	}
	e.mu.Lock()
	invokePath := doc.InvokePath
	e.mu.Unlock()
	if invokePath == "" {
		invokePath = aep.DefaultInvokePath
	}
	var out aep.Result
	if err := e.exchange(ctx, http.MethodPost, invokePath, inv, &out, "calling "+tool.Name); err != nil {
		return nil, err
	}
	res := &mcp.CallToolResult{IsError: out.IsError}
	for _, c := range out.Content {
		if c.Type == "text" {
			res.Content = append(res.Content, &mcp.TextContent{Text: c.Text})
		} else {
			res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf("[%s content, not shown]", truncate(c.Type, 32))})
		}
	}
	if len(out.StructuredContent) > 0 {
		res.StructuredContent = out.StructuredContent
	}
	return res, nil
}

func (e *extensionPeer) wait() error {
	<-e.done
	return nil
}

func (e *extensionPeer) close() error {
	e.closeOnce.Do(func() {
		close(e.done)
		e.client.CloseIdleConnections()
	})
	return nil
}

// DiscoverExtensions refreshes every ToolProvider of protocol Extension, one at a time, when
// Platform:Extensions:DiscoverOnStartup is true; otherwise it does nothing, so that a start
// contacts no extension. Failures are logged and written to each provider's status; they do
// not stop the platform.
func (m *Manager) DiscoverExtensions(ctx context.Context) {
	if !m.opts.DiscoverExtensionsOnStartup {
		return
	}
	list := &platformv1.ToolProviderList{}
	if err := m.opts.Kube.List(ctx, list, client.Limit(1000)); err != nil {
		m.opts.Log.Error(err, "listing the extension providers to discover on startup")
		return
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Definition.Protocol != platformv1.ExtensionProtocol || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		refresh, err := m.Refresh(ctx, p)
		if err != nil {
			m.opts.Log.Info("discovering an extension on startup failed", "namespace", p.Namespace, "toolProvider", p.Name, "reason", err.Error())
			continue
		}
		m.opts.Log.Info("extension discovered on startup", "namespace", p.Namespace, "toolProvider", p.Name, "tools", refresh.Total, "created", refresh.Created)
	}
}
