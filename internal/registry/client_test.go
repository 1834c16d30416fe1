package registry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/registry"
	testregistry "platform.dev/platform/test/registry"
)

// client is a client of srv's registration with endpoint e and transport t.
func client(t *testing.T, tr registry.Transport, indexURL string, e registry.Endpoint, bearer func(context.Context) (string, error)) *registry.Client {
	t.Helper()
	pool, err := registry.NewPool(tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c, err := pool.Client(registry.Options{IndexURL: indexURL, Endpoint: e, Bearer: bearer})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var private = registry.Endpoint{AllowPrivateNetwork: true}

func startRegistry(t *testing.T) *testregistry.Server {
	return testregistry.Start(t, testregistry.MustArchive(t, "acme", "hello", "1.0.0"), testregistry.MustArchive(t, "acme", "hello", "2.0.0"))
}

func TestAVersionIsReachedFromTheIndexThroughItsShardAndManifest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := startRegistry(t)
	c := client(t, srv.Transport(), srv.IndexURL(), private, nil)

	idx, err := c.FetchIndex(ctx, registry.Validators{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx.Index.Serial).To(Equal(srv.Serial()))
	g.Expect(idx.Digest).To(Equal(registry.Digest(srv.Document(testregistry.IndexPath))))
	g.Expect(idx.Index.Shards).To(HaveLen(1))

	shard, shardURL, err := c.FetchShard(ctx, idx.URL, idx.Index.Shards[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(shard.Publishers).To(ConsistOf(registry.Publisher{Name: "acme", Status: registry.Declared}))
	g.Expect(shard.Sources).To(HaveLen(1))
	g.Expect(shard.Sources[0].Versions).To(HaveLen(2))
	v := shard.Sources[0].Versions[0]
	g.Expect(v.Compatibility.Compatible()).To(BeTrue())

	m, manifestURL, err := c.FetchManifest(ctx, shardURL, "acme", "hello", v)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Matches("acme", "hello", v.Version)).To(BeTrue())

	archive, err := c.FetchArchive(ctx, manifestURL, m)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(registry.Digest(archive)).To(Equal(m.Pack.Digest))
}

func TestPrivateAddressesAreRefusedUnlessAllowedIndependentlyOfHTTP(t *testing.T) {
	ctx := context.Background()
	httpsRegistry := startRegistry(t)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(httpsRegistry.Document(testregistry.IndexPath))
	}))
	t.Cleanup(plain.Close)
	cases := map[string]struct {
		url      string
		endpoint registry.Endpoint
		code     registry.Code
	}{
		"https on loopback is refused by default":                  {httpsRegistry.IndexURL(), registry.Endpoint{}, registry.CodeAddressRefused},
		"https on loopback is allowed with allowPrivateNetwork":    {httpsRegistry.IndexURL(), registry.Endpoint{AllowPrivateNetwork: true}, ""},
		"allowHttp alone does not allow a private address":         {plain.URL + "/index.json", registry.Endpoint{AllowHTTP: true}, registry.CodeAddressRefused},
		"allowPrivateNetwork alone does not allow http":            {plain.URL + "/index.json", registry.Endpoint{AllowPrivateNetwork: true}, registry.CodeURLRefused},
		"http on loopback needs both":                              {plain.URL + "/index.json", registry.Endpoint{AllowHTTP: true, AllowPrivateNetwork: true}, ""},
		"a name resolving to loopback is refused after resolution": {strings.Replace(httpsRegistry.IndexURL(), "127.0.0.1", "localhost", 1), registry.Endpoint{}, registry.CodeAddressRefused},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pool, err := registry.NewPool(httpsRegistry.Transport())
			g.Expect(err).NotTo(HaveOccurred())
			defer pool.Close()
			c, err := pool.Client(registry.Options{IndexURL: tc.url, Endpoint: tc.endpoint})
			if err == nil {
				_, err = c.FetchIndex(ctx, registry.Validators{})
			}
			g.Expect(registry.CodeOf(err)).To(Equal(tc.code), "%v", err)
		})
	}
}

func TestLinkLocalAndMulticastAreAlwaysRefused(t *testing.T) {
	for name, u := range map[string]string{
		"cloud metadata (link-local)": "https://169.254.169.254/index.json",
		"multicast":                   "https://224.0.0.251/index.json",
		"IPv4-mapped link-local":      "https://[::ffff:169.254.169.254]/index.json",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c := client(t, registry.DefaultTransport(), u, registry.Endpoint{AllowHTTP: true, AllowPrivateNetwork: true}, nil)
			_, err := c.FetchIndex(context.Background(), registry.Validators{})
			g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeAddressRefused), "%v", err)
		})
	}
}

func TestARedirectLeavingTheOriginIsRefused(t *testing.T) {
	g := NewWithT(t)
	srv, other := startRegistry(t), startRegistry(t)
	srv.Redirect(testregistry.IndexPath, other.IndexURL())
	c := client(t, srv.Transport(), srv.IndexURL(), private, nil)
	_, err := c.FetchIndex(context.Background(), registry.Validators{})
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeRedirectRefused), "%v", err)
	g.Expect(other.Requests(testregistry.IndexPath)).To(BeZero())
}

func TestARedirectOnTheOriginIsFollowed(t *testing.T) {
	g := NewWithT(t)
	srv := startRegistry(t)
	srv.Override("/moved/index.json", srv.Document(testregistry.IndexPath))
	srv.Redirect(testregistry.IndexPath, "/moved/index.json")
	c := client(t, srv.Transport(), srv.IndexURL(), private, nil)
	idx, err := c.FetchIndex(context.Background(), registry.Validators{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx.URL.Path).To(Equal("/moved/index.json"))
}

func TestMoreThanMaximumRedirectsAreRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		redirects int
		code      registry.Code
	}{
		"three redirects are followed": {3, ""},
		"a fourth is refused":          {4, registry.CodeTooManyRedirects},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv := startRegistry(t)
			from := testregistry.IndexPath
			for i := range tc.redirects {
				to := fmt.Sprintf("/hop%d/index.json", i)
				srv.Redirect(from, to)
				from = to
			}
			srv.Override(from, srv.Document(testregistry.IndexPath))
			c := client(t, srv.Transport(), srv.IndexURL(), private, nil)
			_, err := c.FetchIndex(context.Background(), registry.Validators{})
			g.Expect(registry.CodeOf(err)).To(Equal(tc.code), "%v", err)
		})
	}
}

func TestTheCredentialGoesOnlyToTheOrigin(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, other := startRegistry(t), startRegistry(t)
	const token = "registry-s3cret-token"
	srv.RequireBearer(token)
	var resolved atomic.Int32
	bearer := func(context.Context) (string, error) { resolved.Add(1); return token, nil }
	c := client(t, srv.Transport(), srv.IndexURL(), private, bearer)

	_, err := c.FetchIndex(ctx, registry.Validators{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.Authorizations(testregistry.IndexPath)).To(Equal([]string{"Bearer " + token}))
	_, err = c.FetchIndex(ctx, registry.Validators{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resolved.Load()).To(BeEquivalentTo(2), "the credential is resolved for each request")

	srv.Redirect(testregistry.IndexPath, other.IndexURL())
	_, err = c.FetchIndex(ctx, registry.Validators{})
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeRedirectRefused))
	g.Expect(err.Error()).NotTo(ContainSubstring(token))
	g.Expect(other.Authorizations(testregistry.IndexPath)).To(BeEmpty())

	// A request off the origin (a location in a document) never gets it either.
	offOrigin, _ := url.Parse(other.IndexURL())
	_, err = c.Get(ctx, offOrigin, "shard", registry.MaxShardBytes, registry.Validators{})
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeLocationRefused))
	g.Expect(other.Requests(testregistry.IndexPath)).To(BeZero())

	failing := client(t, srv.Transport(), srv.IndexURL(), private, func(context.Context) (string, error) {
		return "", fmt.Errorf("secret registry-token not found")
	})
	srv.Behave(testregistry.IndexPath)
	_, err = failing.FetchIndex(ctx, registry.Validators{})
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeCredentialUnavailable))
}

func TestAnUnchangedIndexTransfersNoBody(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := startRegistry(t)
	c := client(t, srv.Transport(), srv.IndexURL(), private, nil)
	first, err := c.FetchIndex(ctx, registry.Validators{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Validators.ETag).NotTo(BeEmpty())
	sent := srv.BodyBytes(testregistry.IndexPath)
	g.Expect(sent).To(BeNumerically(">", 0))

	for name, v := range map[string]registry.Validators{
		"ETag":          {ETag: first.Validators.ETag},
		"Last-Modified": {LastModified: first.Validators.LastModified},
	} {
		again, err := c.FetchIndex(ctx, v)
		g.Expect(err).NotTo(HaveOccurred(), name)
		g.Expect(again.NotModified).To(BeTrue(), name)
		g.Expect(again.Index).To(BeNil(), name)
	}
	g.Expect(srv.BodyBytes(testregistry.IndexPath)).To(Equal(sent), "a 304 transfers no body")
	g.Expect(srv.Requests(testregistry.IndexPath)).To(Equal(3))

	g.Expect(srv.Republish()).To(Succeed())
	changed, err := c.FetchIndex(ctx, first.Validators)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed.NotModified).To(BeFalse())
	g.Expect(changed.Index.Serial).To(Equal(first.Index.Serial + 1))
}

func TestAnOversizeBodyIsCutOff(t *testing.T) {
	g := NewWithT(t)
	srv := startRegistry(t)
	srv.Endless(testregistry.IndexPath)
	c := client(t, srv.Transport(), srv.IndexURL(), private, nil)
	_, err := c.FetchIndex(context.Background(), registry.Validators{})
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeTooLarge), "%v", err)
}

func TestASlowBodyIsCutOff(t *testing.T) {
	g := NewWithT(t)
	srv := startRegistry(t)
	srv.Trickle(testregistry.IndexPath, 20*time.Millisecond)
	tr := srv.Transport()
	tr.RateWindow = 200 * time.Millisecond // 1 KiB/s: 204 bytes per window, the trickle sends 10
	c := client(t, tr, srv.IndexURL(), private, nil)
	start := time.Now()
	_, err := c.FetchIndex(context.Background(), registry.Validators{})
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeTooSlow), "%v", err)
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
}

func TestAHangingRegistryTimesOut(t *testing.T) {
	g := NewWithT(t)
	srv := startRegistry(t)
	srv.Hang(testregistry.IndexPath)
	tr := srv.Transport()
	tr.Timeout = 300 * time.Millisecond
	c := client(t, tr, srv.IndexURL(), private, nil)
	_, err := c.FetchIndex(context.Background(), registry.Validators{})
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeTimeout), "%v", err)
}

func TestAChangedDigestIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := startRegistry(t)
	c := client(t, srv.Transport(), srv.IndexURL(), private, nil)
	idx, err := c.FetchIndex(ctx, registry.Validators{})
	g.Expect(err).NotTo(HaveOccurred())
	shard, shardURL, err := c.FetchShard(ctx, idx.URL, idx.Index.Shards[0])
	g.Expect(err).NotTo(HaveOccurred())
	v := shard.Sources[0].Versions[0]
	m, manifestURL, err := c.FetchManifest(ctx, shardURL, "acme", "hello", v)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(srv.ChangeDigest("acme", "hello", v.Version)).To(Succeed())
	_, _, err = c.FetchShard(ctx, idx.URL, idx.Index.Shards[0])
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeDigestMismatch), "a shard differing from the index's digest")
	_, _, err = c.FetchManifest(ctx, shardURL, "acme", "hello", v)
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeDigestMismatch), "a manifest differing from the shard's digest")
	_, err = c.FetchArchive(ctx, manifestURL, m)
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeDigestMismatch), "an archive differing from the manifest's digest")
}

func TestAnOlderIndexIsServedWithALowerSerial(t *testing.T) {
	g := NewWithT(t)
	srv := startRegistry(t)
	c := client(t, srv.Transport(), srv.IndexURL(), private, nil)
	g.Expect(srv.ServeOlderIndex()).To(Succeed())
	idx, err := c.FetchIndex(context.Background(), registry.Validators{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx.Index.Serial).To(Equal(srv.Serial() - 1))
}

func TestARevokedPublisherIsAsserted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := startRegistry(t)
	g.Expect(srv.Revoke("acme")).To(Succeed())
	c := client(t, srv.Transport(), srv.IndexURL(), private, nil)
	idx, err := c.FetchIndex(ctx, registry.Validators{})
	g.Expect(err).NotTo(HaveOccurred())
	shard, _, err := c.FetchShard(ctx, idx.URL, idx.Index.Shards[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(shard.Publishers[0].Status).To(Equal(registry.Revoked))
}

func TestIndexURLShapesAreRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		url       string
		allowHTTP bool
		ok        bool
	}{
		"https is accepted":                 {"https://registry.example/index.json", false, true},
		"http needs allowHttp":              {"http://registry.example/index.json", false, false},
		"http with allowHttp is accepted":   {"http://registry.example/index.json", true, true},
		"credentials are refused":           {"https://user:pw@registry.example/index.json", false, false},
		"a query is refused":                {"https://registry.example/index.json?x=1", false, false},
		"an empty query is refused":         {"https://registry.example/index.json?", false, false},
		"a fragment is refused":             {"https://registry.example/index.json#top", false, false},
		"a percent-encoded path is refused": {"https://registry.example/%69ndex.json", false, false},
		"another scheme is refused":         {"ftp://registry.example/index.json", false, false},
		"a relative URL is refused":         {"/index.json", false, false},
		"no host is refused":                {"https:///index.json", false, false},
		"a backslash is refused":            {"https://registry.example\\@evil/index.json", false, false},
		"a control character is refused":    {"https://registry.example/in\ndex.json", false, false},
		"an invalid port is refused":        {"https://registry.example:99999/index.json", false, false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := registry.ValidateIndexURL(tc.url, tc.allowHTTP)
			if tc.ok != (err == nil) {
				t.Fatalf("ValidateIndexURL(%q) = %v, want ok=%v", tc.url, err, tc.ok)
			}
			if err != nil && registry.CodeOf(err) != registry.CodeURLRefused {
				t.Fatalf("code %q, want %q", registry.CodeOf(err), registry.CodeURLRefused)
			}
		})
	}
}

func TestLocationsStayOnTheIndexOrigin(t *testing.T) {
	origin, _ := url.Parse("https://registry.example")
	base, _ := url.Parse("https://registry.example/catalog/index.json")
	for name, tc := range map[string]struct {
		loc  string
		want string
	}{
		"a relative location resolves against the document": {"shards/a.json", "https://registry.example/catalog/shards/a.json"},
		"dot segments resolve":                              {"../packs/a.zip", "https://registry.example/packs/a.zip"},
		"an absolute URL on the origin is kept":             {"https://registry.example:443/x.json", "https://registry.example:443/x.json"},
		"another host is refused":                           {"https://evil.example/x.json", ""},
		"a scheme-relative other host is refused":           {"//evil.example/x.json", ""},
		"another scheme is refused":                         {"http://registry.example/x.json", ""},
		"another port is refused":                           {"https://registry.example:8443/x.json", ""},
		"a query is refused":                                {"x.json?a=b", ""},
		"percent-encoding is refused":                       {"%2e%2e/x.json", ""},
	} {
		t.Run(name, func(t *testing.T) {
			u, err := registry.Resolve(origin, base, tc.loc)
			if tc.want == "" {
				if registry.CodeOf(err) != registry.CodeLocationRefused {
					t.Fatalf("Resolve(%q) = %v, %v; want refused", tc.loc, u, err)
				}
				return
			}
			if err != nil || u.String() != tc.want {
				t.Fatalf("Resolve(%q) = %v, %v; want %s", tc.loc, u, err, tc.want)
			}
		})
	}
}

func TestTransportSettingsAreRead(t *testing.T) {
	g := NewWithT(t)
	tr, err := registry.TransportFromConfig(config.FromMap(config.Production, nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tr).To(Equal(registry.DefaultTransport()))
	g.Expect(tr.Timeout).To(Equal(15 * time.Second))
	g.Expect(tr.MaximumRedirects).To(Equal(3))
	g.Expect(tr.ConnectTimeout).To(Equal(5 * time.Second))
	g.Expect(tr.PooledConnectionLifetime).To(Equal(120 * time.Second))

	tr, err = registry.TransportFromConfig(config.FromMap(config.Production, map[string]string{
		registry.ConfigPrefix + "TimeoutSeconds": "30", registry.ConfigPrefix + "MaximumRedirects": "0",
		registry.ConfigPrefix + "ConnectTimeoutSeconds": "2", registry.ConfigPrefix + "PooledConnectionLifetimeSeconds": "60"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tr.Timeout).To(Equal(30 * time.Second))
	g.Expect(tr.MaximumRedirects).To(Equal(0))
	g.Expect(tr.ConnectTimeout).To(Equal(2 * time.Second))
	g.Expect(tr.PooledConnectionLifetime).To(Equal(60 * time.Second))

	for key, v := range map[string]string{"TimeoutSeconds": "0", "MaximumRedirects": "many", "ConnectTimeoutSeconds": "-1",
		"PooledConnectionLifetimeSeconds": "x", "CaBundleFile": "/nonexistent/ca.pem"} {
		_, err := registry.TransportFromConfig(config.FromMap(config.Production, map[string]string{registry.ConfigPrefix + key: v}))
		g.Expect(err).To(MatchError(ContainSubstring(key)), key)
	}
}

func TestARegistryWithAPrivateCAIsTrustedOnlyThroughTheCABundle(t *testing.T) {
	g := NewWithT(t)
	srv := startRegistry(t)
	_, err := client(t, registry.DefaultTransport(), srv.IndexURL(), private, nil).FetchIndex(context.Background(), registry.Validators{})
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeUnavailable), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("certificate"))

	_, err = client(t, srv.Transport(), srv.IndexURL(), private, nil).FetchIndex(context.Background(), registry.Validators{})
	g.Expect(err).NotTo(HaveOccurred())
}
