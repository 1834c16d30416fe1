package tools

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/netguard"
)

// httpTransport reaches p over Streamable HTTP: a Bearer credential resolved on every request
// (so a changed Secret takes effect at once), no redirects (a credential never follows one to
// another origin), no link-local or multicast targets, response bodies bounded by
// MaxMessageBytes (oversized is set when one is cut), and a response header timeout of the
// provider's timeout. Only requests and their answers are exchanged: no standalone stream of
// server messages is opened.
func (m *Manager) httpTransport(p *platformv1.ToolProvider, faults *peerFaults) (mcp.Transport, error) {
	httpClient, err := m.httpClient(p, faults)
	if err != nil {
		return nil, err
	}
	return &mcp.StreamableClientTransport{Endpoint: p.Definition.HTTP.URL, HTTPClient: httpClient, MaxRetries: -1,
		DisableStandaloneSSE: true, MaxEventSize: m.opts.MaxMessageBytes}, nil
}

// httpClient is the client of an HTTP provider, MCP or extension: the Bearer credential of the
// definition resolved on every request, no redirects, guarded addresses and bounded bodies.
func (m *Manager) httpClient(p *platformv1.ToolProvider, faults *peerFaults) (*http.Client, error) {
	def := p.Definition.HTTP
	if def == nil || def.URL == "" {
		return nil, &ConfigurationError{Provider: p.Name, Reason: "definition.http.url is not set"}
	}
	// An extension is a remote service by design, so it gets the guard of outbound fetches:
	// private networks are refused unless the instance allows them (loopback stays reachable,
	// as for MCP servers, where local development runs).
	refusePrivate := p.Definition.Protocol == platformv1.ExtensionProtocol && !m.opts.ExtensionsAllowPrivateNetwork
	rt := &boundedTransport{base: baseTransport(timeout(p), refusePrivate), limit: int64(m.opts.MaxMessageBytes), faults: faults}
	if def.AuthenticationMode == platformv1.StaticBearerToolAuthentication {
		if def.Credential == nil {
			return nil, &ConfigurationError{Provider: p.Name, Reason: "definition.http.credential is not set"}
		}
		ref, namespace := *def.Credential, p.Namespace
		path := field.NewPath("definition", "http", "credential").String()
		rt.bearer = func(ctx context.Context) (string, error) {
			token, err := m.opts.Secrets(ctx, namespace, path, ref)
			if err != nil {
				return "", &ConfigurationError{Provider: p.Name, Reason: err.Error()}
			}
			return token, nil
		}
	}
	return &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errRedirect
	}}, nil
}

var errRedirect = errors.New("the tool provider answered with a redirect, which is not followed")

// baseTransport dials with the project's address guard: link-local and multicast addresses
// (cloud metadata endpoints among them) are refused; loopback and private addresses stay
// reachable, where local MCP servers run, unless refusePrivate also refuses private ones.
func baseTransport(responseTimeout time.Duration, refusePrivate bool) *http.Transport {
	guard := netguard.Policy{AllowPrivate: true, AllowLoopback: true, Who: "tool providers"}
	if refusePrivate {
		guard = netguard.Policy{AllowLoopback: true, Who: "extensions", Setting: "Platform:Extensions:AllowPrivateNetwork"}
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: guard.Control}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = dialer.DialContext
	t.ResponseHeaderTimeout = responseTimeout
	t.MaxIdleConnsPerHost = 4
	return t
}

// boundedTransport sets the Bearer credential of each request and bounds each response body.
type boundedTransport struct {
	base   http.RoundTripper
	bearer func(context.Context) (string, error)
	limit  int64
	faults *peerFaults
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if chain := CallChainFrom(req.Context()); chain.Depth > 0 {
		req = req.Clone(req.Context())
		req.Header.Set(CallDepthHeader, strconv.Itoa(chain.Depth))
		req.Header.Set(CallChainHeader, chain.ID)
	}
	if t.bearer != nil {
		token, err := t.bearer(req.Context())
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.limit, faults: t.faults}
	return resp, nil
}

// limitedBody fails once more than its limit was read.
type limitedBody struct {
	io.ReadCloser
	left   int64
	faults *peerFaults
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.faults.oversized.Store(true)
		return 0, errMessageTooLarge
	}
	return n, err
}
