package registry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/netguard"
	"platform.dev/platform/internal/version"
)

// Transport is how registry requests are made (Platform:Sources:Registries:Transport).
type Transport struct {
	// Timeout bounds a whole request, body included (TimeoutSeconds, 15).
	Timeout time.Duration
	// ConnectTimeout bounds the connection and TLS handshake (ConnectTimeoutSeconds, 5).
	ConnectTimeout time.Duration
	// MaximumRedirects is how many same-origin redirects are followed (MaximumRedirects, 3).
	MaximumRedirects int
	// PooledConnectionLifetime is how long pooled connections are reused before new ones are
	// dialed, so a changed DNS answer is seen (PooledConnectionLifetimeSeconds, 120).
	PooledConnectionLifetime time.Duration
	// CABundleFile is a PEM file of extra certificate authorities trusted besides the system's,
	// for a registry with a private CA (CaBundleFile, none).
	CABundleFile string
	// MinimumBytesPerSecond averaged over RateWindow: a body arriving slower is cut off
	// (1024 bytes per second over 5 seconds).
	MinimumBytesPerSecond int64
	RateWindow            time.Duration
}

// ConfigPrefix is the configuration section of the transport settings.
const ConfigPrefix = "Platform:Sources:Registries:Transport:"

// DefaultTransport is the spec's transport: 15 s, 3 redirects, 5 s to connect, 120 s pooled
// connection lifetime, at least 1 KiB/s over 5 s.
func DefaultTransport() Transport {
	return Transport{Timeout: 15 * time.Second, ConnectTimeout: 5 * time.Second, MaximumRedirects: 3,
		PooledConnectionLifetime: 120 * time.Second, MinimumBytesPerSecond: 1024, RateWindow: 5 * time.Second}
}

// TransportFromConfig reads Platform:Sources:Registries:Transport:TimeoutSeconds,
// :ConnectTimeoutSeconds, :MaximumRedirects, :PooledConnectionLifetimeSeconds and :CaBundleFile
// over the defaults.
func TransportFromConfig(cfg *config.Config) (Transport, error) {
	t := DefaultTransport()
	seconds := map[string]struct {
		target   *time.Duration
		min, max int
	}{
		"TimeoutSeconds":                  {&t.Timeout, 1, 300},
		"ConnectTimeoutSeconds":           {&t.ConnectTimeout, 1, 60},
		"PooledConnectionLifetimeSeconds": {&t.PooledConnectionLifetime, 1, 86400},
	}
	for key, s := range seconds {
		v := strings.TrimSpace(cfg.Get(ConfigPrefix + key))
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < s.min || n > s.max {
			return t, fmt.Errorf("%s%s=%q: must be a number of seconds from %d to %d", ConfigPrefix, key, v, s.min, s.max)
		}
		*s.target = time.Duration(n) * time.Second
	}
	if v := strings.TrimSpace(cfg.Get(ConfigPrefix + "MaximumRedirects")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 10 {
			return t, fmt.Errorf("%sMaximumRedirects=%q: must be a number from 0 to 10", ConfigPrefix, v)
		}
		t.MaximumRedirects = n
	}
	if v := strings.TrimSpace(cfg.Get(ConfigPrefix + "CaBundleFile")); v != "" {
		t.CABundleFile = v
		if _, err := t.rootCAs(); err != nil {
			return t, fmt.Errorf("%sCaBundleFile: %w", ConfigPrefix, err)
		}
	}
	return t, nil
}

func (t Transport) rootCAs() (*x509.CertPool, error) {
	if t.CABundleFile == "" {
		return nil, nil // the system's
	}
	pem, err := os.ReadFile(t.CABundleFile)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", t.CABundleFile)
	}
	return pool, nil
}

// Endpoint is a registration's endpoint policy: each relaxes one default, independently.
type Endpoint struct {
	// AllowHTTP allows plain http:// requests; https is required otherwise.
	AllowHTTP bool
	// AllowPrivateNetwork allows private and loopback addresses; link-local and multicast stay
	// refused.
	AllowPrivateNetwork bool
}

// Pool holds the connections of registry requests, one set per address policy, renewed after
// PooledConnectionLifetime. One Pool serves every registration of an instance.
type Pool struct {
	t       Transport
	rootCAs *x509.CertPool
	mu      sync.Mutex
	conns   map[bool]*pooled // by AllowPrivateNetwork
}

type pooled struct {
	rt   *http.Transport
	born time.Time
}

// NewPool makes the pool of t; it reads the CA bundle file once.
func NewPool(t Transport) (*Pool, error) {
	d := DefaultTransport()
	if t.Timeout <= 0 {
		t.Timeout = d.Timeout
	}
	if t.ConnectTimeout <= 0 {
		t.ConnectTimeout = d.ConnectTimeout
	}
	if t.PooledConnectionLifetime <= 0 {
		t.PooledConnectionLifetime = d.PooledConnectionLifetime
	}
	if t.RateWindow <= 0 {
		t.RateWindow = d.RateWindow
	}
	if t.MaximumRedirects < 0 {
		t.MaximumRedirects = 0
	}
	roots, err := t.rootCAs()
	if err != nil {
		return nil, fmt.Errorf("registry CA bundle: %w", err)
	}
	return &Pool{t: t, rootCAs: roots, conns: map[bool]*pooled{}}, nil
}

// Transport is the pool's settings.
func (p *Pool) Transport() Transport { return p.t }

// Close closes idle connections.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.conns {
		c.rt.CloseIdleConnections()
		delete(p.conns, k)
	}
}

func (p *Pool) transport(allowPrivate bool) *http.Transport {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.conns[allowPrivate]; c != nil {
		if time.Since(c.born) < p.t.PooledConnectionLifetime {
			return c.rt
		}
		// Requests in flight keep their connections; idle ones go now.
		c.rt.CloseIdleConnections()
	}
	guard := netguard.Policy{AllowPrivate: allowPrivate, AllowLoopback: allowPrivate, Who: "registries",
		Setting: "endpointPolicy.allowPrivateNetwork"}
	dialer := &net.Dialer{Timeout: p.t.ConnectTimeout, Control: guard.Control}
	rt := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, around the guard
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: p.rootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    p.t.ConnectTimeout,
		ResponseHeaderTimeout:  p.t.Timeout,
		IdleConnTimeout:        p.t.PooledConnectionLifetime,
		MaxIdleConnsPerHost:    4,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	p.conns[allowPrivate] = &pooled{rt: rt, born: time.Now()}
	return rt
}

// Options is one registration's view of the pool.
type Options struct {
	// IndexURL is the registration's index URL; its origin is the only one requests go to.
	IndexURL string
	Endpoint Endpoint
	// Bearer, when set, resolves the staticBearer credential for each request to the origin;
	// it is called per request, so a changed Secret takes effect at once.
	Bearer func(ctx context.Context) (string, error)
}

// Client makes one registration's requests.
type Client struct {
	pool   *Pool
	opts   Options
	index  *url.URL
	origin *url.URL
	http   *http.Client
}

// Client makes a client for one registration; the index URL is validated first.
func (p *Pool) Client(opts Options) (*Client, error) {
	u, err := ValidateIndexURL(opts.IndexURL, opts.Endpoint.AllowHTTP)
	if err != nil {
		return nil, err
	}
	c := &Client{pool: p, opts: opts, index: u, origin: &url.URL{Scheme: u.Scheme, Host: u.Host}}
	c.http = &http.Client{Transport: &roundTripper{c: c}, CheckRedirect: c.checkRedirect}
	return c, nil
}

// IndexURL is the registration's parsed index URL.
func (c *Client) IndexURL() *url.URL { u := *c.index; return &u }

func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > c.pool.t.MaximumRedirects {
		return &Error{Code: CodeTooManyRedirects, Detail: fmt.Sprintf("more than %d redirects", c.pool.t.MaximumRedirects)}
	}
	if !SameOrigin(c.origin, req.URL) {
		return &Error{Code: CodeRedirectRefused, Detail: "a redirect leaves the registry's origin " + Origin(c.origin)}
	}
	return nil
}

type roundTripper struct{ c *Client }

type tokenKey struct{}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	c := rt.c
	if req.URL.Scheme != "https" && !(req.URL.Scheme == "http" && c.opts.Endpoint.AllowHTTP) {
		return nil, &Error{Code: CodeURLRefused, Detail: "registry requests are https only (endpointPolicy.allowHttp)"}
	}
	if c.opts.Bearer != nil && SameOrigin(c.origin, req.URL) {
		token, err := c.opts.Bearer(req.Context())
		if err != nil {
			return nil, &Error{Code: CodeCredentialUnavailable, Detail: "the registry credential could not be resolved: " + err.Error()}
		}
		if slot, ok := req.Context().Value(tokenKey{}).(*atomic.Value); ok {
			slot.Store(token)
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return c.pool.transport(c.opts.Endpoint.AllowPrivateNetwork).RoundTrip(req)
}

// Validators are the HTTP validators of a document, reused for a conditional request.
type Validators struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
}

// Fetched is one answer: its final URL (after same-origin redirects), whether it was a 304 to
// a conditional request (then Body is nil), its validators and its body.
type Fetched struct {
	URL         *url.URL
	NotModified bool
	Validators  Validators
	Body        []byte
}

var (
	errTimeout = errors.New("timeout")
	errTooSlow = errors.New("too slow")
)

// Get fetches u (which must be on the registration's origin) as document ("index", "shard",
// "manifest" or "archive"), reading at most limit bytes, conditionally when v is not empty.
func (c *Client) Get(parent context.Context, u *url.URL, document string, limit int64, v Validators) (_ *Fetched, err error) {
	t := c.pool.t
	slot := &atomic.Value{}
	defer func() {
		if err != nil {
			err = redact(err, slot, document, u)
		}
	}()
	if !SameOrigin(c.origin, u) {
		return nil, &Error{Code: CodeLocationRefused, Detail: "a location leaves the index's origin " + Origin(c.origin)}
	}
	if u.User != nil {
		return nil, &Error{Code: CodeLocationRefused, Detail: "a location must not carry credentials"}
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, tokenKey{}, slot))
	defer cancel(nil)
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, t.Timeout, errTimeout)
	defer cancelTimeout()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &Error{Code: CodeURLRefused, Detail: "not a request URL"}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "platform/"+version.Version+" registry/v1")
	if v.ETag != "" {
		req.Header.Set("If-None-Match", v.ETag)
	}
	if v.LastModified != "" {
		req.Header.Set("If-Modified-Since", v.LastModified)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, classify(ctx, err)
	}
	defer resp.Body.Close()
	f := &Fetched{URL: resp.Request.URL, Validators: validators(resp.Header)}
	switch {
	case resp.StatusCode == http.StatusNotModified && (v.ETag != "" || v.LastModified != ""):
		f.NotModified = true
		if f.Validators == (Validators{}) {
			f.Validators = v
		}
		return f, nil
	case resp.StatusCode != http.StatusOK:
		return nil, &Error{Code: CodeHTTPStatus, Status: resp.StatusCode, Detail: fmt.Sprintf("the registry answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
	}
	if resp.ContentLength > limit {
		return nil, errorf(CodeTooLarge, document, "larger than the contract's limit of %d bytes", limit)
	}
	body := &countingReader{r: resp.Body}
	stop := watchRate(ctx, cancel, body, t.MinimumBytesPerSecond, t.RateWindow)
	b, err := ReadLimited(body, limit, document)
	stop()
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return nil, classify(ctx, cause)
		}
		return nil, err
	}
	f.Body = b
	return f, nil
}

func validators(h http.Header) Validators {
	v := Validators{ETag: h.Get("ETag"), LastModified: h.Get("Last-Modified")}
	// Validators are stored and sent back: bound them, and drop what is not a header value.
	if len(v.ETag) > 256 || hasControl(v.ETag) {
		v.ETag = ""
	}
	if len(v.LastModified) > 64 || hasControl(v.LastModified) {
		v.LastModified = ""
	}
	return v
}

// classify turns a transport error into a registry error.
func classify(ctx context.Context, err error) error {
	var rerr *Error
	if errors.As(err, &rerr) {
		return rerr
	}
	switch context.Cause(ctx) {
	case errTooSlow:
		return &Error{Code: CodeTooSlow, Detail: "the body arrived slower than the minimum rate"}
	case errTimeout:
		return &Error{Code: CodeTimeout, Detail: "no complete answer within the timeout"}
	}
	var guard *netguard.Error
	if errors.As(err, &guard) {
		return &Error{Code: CodeAddressRefused, Detail: guard.Error()}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: CodeTimeout, Detail: "no answer within the timeout"}
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Code: CodeUnavailable, Detail: "the request was canceled"}
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // the URL is added by Error
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return &Error{Code: CodeTimeout, Detail: "connecting timed out"}
	}
	return &Error{Code: CodeUnavailable, Detail: "the registry could not be reached: " + err.Error()}
}

// redact completes err with its document and URL, and removes the credential should anything
// have echoed it.
func redact(err error, slot *atomic.Value, document string, u *url.URL) error {
	rerr, ok := err.(*Error)
	if !ok {
		rerr = &Error{Code: CodeUnavailable, Detail: err.Error()}
	}
	out := *rerr
	if out.Document == "" {
		out.Document = document
	}
	if out.URL == "" && u != nil {
		out.URL = u.Redacted()
	}
	if token, _ := slot.Load().(string); token != "" {
		out.Detail = strings.ReplaceAll(out.Detail, token, "[redacted]")
		out.URL = strings.ReplaceAll(out.URL, token, "[redacted]")
	}
	return &out
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// watchRate cancels the request when fewer than minRate*window bytes arrived in a window.
func watchRate(ctx context.Context, cancel context.CancelCauseFunc, body *countingReader, minRate int64, window time.Duration) (stop func()) {
	if minRate <= 0 || window <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		ticker := time.NewTicker(window)
		defer ticker.Stop()
		var last int64
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
				n := body.n.Load()
				if float64(n-last) < float64(minRate)*window.Seconds() {
					cancel(errTooSlow)
					return
				}
				last = n
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// IndexFetch is the answer to FetchIndex: not modified, or the index with its digest.
type IndexFetch struct {
	URL         *url.URL
	NotModified bool
	Validators  Validators
	Index       *Index
	Digest      string
}

// FetchIndex fetches the index, conditionally when v is not empty: a 304 is NotModified with no
// body transferred.
func (c *Client) FetchIndex(ctx context.Context, v Validators) (*IndexFetch, error) {
	f, err := c.Get(ctx, c.index, "index", MaxIndexBytes, v)
	if err != nil {
		return nil, err
	}
	out := &IndexFetch{URL: f.URL, NotModified: f.NotModified, Validators: f.Validators}
	if f.NotModified {
		return out, nil
	}
	out.Index, out.Digest, err = ReadIndex(bytes.NewReader(f.Body))
	if err != nil {
		return nil, withURL(err, f.URL)
	}
	return out, nil
}

// FetchShard fetches the shard ref names, relative to the index at indexURL, and checks its
// digest. It returns the shard, its digest and its URL (the base of its manifests' locations).
func (c *Client) FetchShard(ctx context.Context, indexURL *url.URL, ref ShardRef) (*Shard, *url.URL, error) {
	u, err := Resolve(c.origin, indexURL, ref.Location)
	if err != nil {
		return nil, nil, withDocument(err, "shard")
	}
	f, err := c.Get(ctx, u, "shard", MaxShardBytes, Validators{})
	if err != nil {
		return nil, nil, err
	}
	s, _, err := ReadShard(bytes.NewReader(f.Body), ref.Digest)
	if err != nil {
		return nil, nil, withURL(err, f.URL)
	}
	if s.Name != ref.Name {
		return nil, nil, withURL(errorf(CodeInvalidDocument, "shard", "its name %q is not %q, the one the index names", s.Name, ref.Name), f.URL)
	}
	return s, f.URL, nil
}

// FetchManifest fetches the manifest of version v, relative to the shard at shardURL, checks
// it against the shard's digest and that it describes exactly publisher/source/version.
func (c *Client) FetchManifest(ctx context.Context, shardURL *url.URL, publisher, source string, v SourceVersion) (*Manifest, *url.URL, error) {
	u, err := Resolve(c.origin, shardURL, v.Manifest)
	if err != nil {
		return nil, nil, withDocument(err, "manifest")
	}
	f, err := c.Get(ctx, u, "manifest", MaxManifestBytes, Validators{})
	if err != nil {
		return nil, nil, err
	}
	m, _, err := ReadManifest(bytes.NewReader(f.Body), v.ManifestDigest)
	if err != nil {
		return nil, nil, withURL(err, f.URL)
	}
	if !m.Matches(publisher, source, v.Version) {
		return nil, nil, withURL(errorf(CodeInvalidDocument, "manifest", "it describes %s/%s %s, not %s/%s %s, the version the shard names",
			m.Publisher, m.Source, clip(m.Version), publisher, source, v.Version), f.URL)
	}
	return m, f.URL, nil
}

// FetchArchive fetches the Pack archive of m, relative to the manifest at manifestURL, and
// checks its size and digest.
func (c *Client) FetchArchive(ctx context.Context, manifestURL *url.URL, m *Manifest) ([]byte, error) {
	u, err := Resolve(c.origin, manifestURL, m.Pack.Location)
	if err != nil {
		return nil, withDocument(err, "archive")
	}
	// Read up to the contract's limit, not the declared size: a differing archive is then
	// reported as such rather than as too large.
	f, err := c.Get(ctx, u, "archive", MaxArchiveBytes, Validators{})
	if err != nil {
		return nil, err
	}
	if d := Digest(f.Body); d != m.Pack.Digest || int64(len(f.Body)) != m.Pack.Size {
		return nil, &Error{Code: CodeDigestMismatch, Document: "archive", URL: f.URL.Redacted(),
			Detail: fmt.Sprintf("its digest %s (%d bytes) is not %s (%d bytes), the one the manifest names", d, len(f.Body), m.Pack.Digest, m.Pack.Size)}
	}
	return f.Body, nil
}

func withURL(err error, u *url.URL) error {
	var rerr *Error
	if errors.As(err, &rerr) && rerr.URL == "" {
		out := *rerr
		out.URL = u.Redacted()
		return &out
	}
	return err
}

func withDocument(err error, document string) error {
	var rerr *Error
	if errors.As(err, &rerr) && rerr.Document == "" {
		out := *rerr
		out.Document = document
		return &out
	}
	return err
}
