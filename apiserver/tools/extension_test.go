package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/tools/aep"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/test/extension"
)

// weatherKey is the value of the Secret bound to the example's role; no result, error or
// status may ever show it.
const weatherKey = "wk-0123456789abcdef"

// extensionWorld is the example extension served over HTTP as the ToolProvider "wx" of a
// namespace of its own, with a manager whose capabilities are redeemed at a test endpoint that
// calls Manager.Redeem as the service API's route does.
type extensionWorld struct {
	ns      string
	ext     *extension.Extension
	url     string
	manager *tools.Manager
	p       *platformv1.ToolProvider
}

func extensionProvider(ns, name, url string) *platformv1.ToolProvider {
	return &platformv1.ToolProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Definition: platformv1.ToolProviderDefinition{Protocol: platformv1.ExtensionProtocol, Transport: platformv1.StreamableHTTPTransport,
			HTTP: &platformv1.HTTPTransportSettings{URL: url, AuthenticationMode: platformv1.NoToolAuthentication},
			Extension: &platformv1.ExtensionSettings{Secrets: []platformv1.ExtensionSecretBinding{
				{Role: extension.WeatherKeyRole, Secret: platformv1.SecretReference{Name: "weather-key"}}}},
			TimeoutSeconds: ptr.To[int32](5)}}
}

func newExtensionWorld(t *testing.T, opts extension.Options, secrets tools.SecretLookup, configure func(*tools.Options)) *extensionWorld {
	t.Helper()
	startKube(t)
	w := &extensionWorld{ns: newNamespace(t), ext: extension.New(opts)}
	srv := httptest.NewServer(w.ext)
	t.Cleanup(srv.Close)
	w.url = srv.URL
	var manager atomic.Pointer[tools.Manager]
	redeem := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var in aep.RedeemRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		role, value, err := manager.Load().Redeem(r.Context(), in.Capability, in.Scope)
		rw.Header().Set("Content-Type", "application/json")
		if err != nil {
			rw.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(rw).Encode(map[string]string{"detail": err.Error()})
			return
		}
		_ = json.NewEncoder(rw).Encode(aep.RedeemResponse{Role: role, Value: value})
	}))
	t.Cleanup(redeem.Close)
	if secrets == nil {
		secrets = func(_ context.Context, namespace, field string, ref platformv1.SecretReference) (string, error) {
			if namespace == w.ns && ref.Name == "weather-key" && field == "definition.extension.secrets[0].secret" {
				return weatherKey, nil
			}
			return "", errors.New("no such Secret")
		}
	}
	o := tools.Options{Kube: kube, Secrets: secrets, RedeemURL: redeem.URL + aep.RedeemPath, MaxResultBytes: 4096}
	if configure != nil {
		configure(&o)
	}
	m, err := tools.NewManager(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	manager.Store(m)
	w.manager = m
	w.p = create(t, extensionProvider(w.ns, "wx", w.url))
	return w
}

func (w *extensionWorld) discover(t *testing.T) tools.Refresh {
	t.Helper()
	out, err := w.manager.Refresh(context.Background(), w.p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAnExtensionIsDiscoveredAtItsWellKnownPathAndItsToolsAreCreatedDisabled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	w := newExtensionWorld(t, extension.Options{}, nil, nil)

	g.Expect(w.discover(t)).To(And(HaveField("Created", 2), HaveField("Total", 2)))
	found := toolsOf(g, w.ns)
	g.Expect(found).To(HaveLen(2))
	weather := found["wx-lookup-weather"]
	g.Expect(weather.Definition).To(And(HaveField("ToolName", "lookup-weather"), HaveField("Enabled", false)))
	g.Expect(weather.Status.Availability).To(Equal(platformv1.ToolAvailable))
	g.Expect(weather.Status.Description).To(Equal("Today's weather in a city."))
	g.Expect(string(weather.Status.InputSchema.Raw)).To(ContainSubstring(`"required":["city"]`))
	g.Expect(found["wx-convert-temperature"].Definition.Enabled).To(BeFalse())

	p := &platformv1.ToolProvider{}
	g.Expect(kube.Get(ctx, client.ObjectKeyFromObject(w.p), p)).To(Succeed())
	g.Expect(p.Status).To(And(HaveField("ServerName", "weather-example"), HaveField("ServerVersion", "1.0.0"),
		HaveField("ProtocolVersion", aep.Version), HaveField("Tools", int32(2))))
	g.Expect(p.Status.Connection.State).To(Equal(platformv1.ToolProviderConnected))
	info, err := w.manager.Test(ctx, p)
	g.Expect(err).NotTo(HaveOccurred(), "a connectivity test reads the discovery document again")
	g.Expect(info).To(Equal(tools.ServerInfo{Name: "weather-example", Version: "1.0.0", ProtocolVersion: aep.Version}))

	// A disabled tool is not available and the extension is never invoked.
	_, err = w.manager.Call(ctx, w.ns, "wx-convert-temperature", json.RawMessage(`{"celsius":20}`), "k1")
	g.Expect(errors.Is(err, tools.ErrToolNotAvailable)).To(BeTrue(), "%v", err)
	g.Expect(w.ext.Invocations()).To(BeEmpty())

	// A second discovery changes nothing and enables nothing.
	enable(g, w.ns, "wx-convert-temperature")
	g.Expect(w.discover(t)).To(And(HaveField("Created", 0), HaveField("Unchanged", 2)))
	g.Expect(toolsOf(g, w.ns)["wx-lookup-weather"].Definition.Enabled).To(BeFalse())
}

func TestAnEnabledExtensionToolIsCalledWithItsIdempotencyKeyAndTheCallChain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	w := newExtensionWorld(t, extension.Options{}, nil, nil)
	w.discover(t)
	enable(g, w.ns, "wx-convert-temperature")

	res, err := w.manager.Call(tools.WithCallChain(ctx, tools.CallChain{ID: "run-1", Depth: 0}), w.ns, "wx-convert-temperature",
		json.RawMessage(`{"celsius":20}`), "run-1/ask/tool/1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(And(HaveField("Text", "20 °C is 68 °F"), HaveField("IsError", false)))
	g.Expect(w.ext.Invocations()).To(Equal(map[string]int{"convert-temperature run-1/ask/tool/1": 1}))
	h := w.ext.InvocationHeaders()[0]
	g.Expect(h.Get(aep.IdempotencyKeyHeader)).To(Equal("run-1/ask/tool/1"))
	g.Expect(h.Get(aep.VersionHeader)).To(Equal(aep.Version))
	g.Expect(h.Get(tools.CallDepthHeader)).To(Equal("1"))
	g.Expect(h.Get(tools.CallChainHeader)).To(Equal("run-1"))

	// A tool's own failure is its result; a tool the extension does not know (a 4xx) a refusal
	// the model reads.
	res, err = w.manager.Call(ctx, w.ns, "wx-convert-temperature", json.RawMessage(`{}`), "k2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(And(HaveField("Text", "celsius is required"), HaveField("IsError", true)))
}

func TestTheBearerOfAnExtensionIsResolvedOnEveryRequestAndNeverAppearsInErrors(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var accepted, stored atomic.Value
	accepted.Store("first-token")
	stored.Store("first-token")
	secrets := func(_ context.Context, namespace, field string, ref platformv1.SecretReference) (string, error) {
		if field == "definition.http.credential" && ref.Name == "wx-token" {
			return stored.Load().(string), nil
		}
		return "", errors.New("no such Secret")
	}
	w := newExtensionWorld(t, extension.Options{Token: func() string { return accepted.Load().(string) }}, secrets, nil)
	p := &platformv1.ToolProvider{}
	g.Expect(kube.Get(ctx, client.ObjectKeyFromObject(w.p), p)).To(Succeed())
	p.Definition.HTTP.AuthenticationMode = platformv1.StaticBearerToolAuthentication
	p.Definition.HTTP.Credential = &platformv1.SecretReference{Name: "wx-token"}
	g.Expect(kube.Update(ctx, p)).To(Succeed())
	_, err := w.manager.Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	enable(g, w.ns, "wx-convert-temperature")
	_, err = w.manager.Call(ctx, w.ns, "wx-convert-temperature", json.RawMessage(`{"celsius":1}`), "k1")
	g.Expect(err).NotTo(HaveOccurred())

	// The Secret is rotated with the extension: the next call, in the same session, sends the
	// new value.
	stored.Store("second-token")
	accepted.Store("second-token")
	_, err = w.manager.Call(ctx, w.ns, "wx-convert-temperature", json.RawMessage(`{"celsius":2}`), "k2")
	g.Expect(err).NotTo(HaveOccurred())
	auths := w.ext.Authorizations()
	g.Expect(auths[len(auths)-1]).To(Equal("Bearer second-token"))
	g.Expect(auths).To(ContainElement("Bearer first-token"))

	// A Secret the extension no longer accepts: the provider cannot be used as declared, and
	// the error names no credential.
	stored.Store("stale-token")
	_, err = w.manager.Call(ctx, w.ns, "wx-convert-temperature", json.RawMessage(`{"celsius":3}`), "k3")
	var configErr *tools.ConfigurationError
	g.Expect(errors.As(err, &configErr)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(And(ContainSubstring("HTTP 401"), Not(ContainSubstring("token"))))
}

func TestASecretCapabilityIsRedeemedOnceForItsExactScopeWhileItsCallRuns(t *testing.T) {
	grantRevoked := func(context.Context, string, string, platformv1.SecretReference) (string, error) {
		return "", errors.New(`definition.extension.secrets[0].secret: Secret "weather-key" does not grant this workspace`)
	}
	for name, tc := range map[string]struct {
		opts      extension.Options
		secrets   tools.SecretLookup
		lifetime  time.Duration
		wantText  string
		wantError bool
		// redemptions are the statuses the platform answered, and detail the refusal's reason.
		redemptions []int
		detail      string
	}{
		"a capability is redeemed once and opens the bound Secret": {
			wantText: extension.Forecast("Oslo") + " (asked the weather service with a key of 19 characters)", redemptions: []int{200},
		},
		"a capability redeemed twice is refused the second time": {
			opts:     extension.Options{RedeemTwice: true},
			wantText: extension.Forecast("Oslo") + " (asked the weather service with a key of 19 characters)", redemptions: []int{200, 403},
			detail: "unknown, was already redeemed",
		},
		"a capability redeemed late is refused": {
			opts: extension.Options{RedeemDelay: 400 * time.Millisecond}, lifetime: 100 * time.Millisecond,
			wantError: true, redemptions: []int{403}, detail: "it expired",
		},
		"a capability presented for another scope is refused": {
			opts:      extension.Options{RedeemScope: "another-workspace"},
			wantError: true, redemptions: []int{403}, detail: "issued for another scope",
		},
		"a capability whose Secret the scope may no longer use is refused": {
			secrets:   grantRevoked,
			wantError: true, redemptions: []int{403}, detail: "does not grant this workspace",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			w := newExtensionWorld(t, tc.opts, tc.secrets, func(o *tools.Options) { o.CapabilityLifetime = tc.lifetime })
			w.discover(t)
			enable(g, w.ns, "wx-lookup-weather")
			res, err := w.manager.Call(context.Background(), w.ns, "wx-lookup-weather", json.RawMessage(`{"city":"Oslo"}`), "run/ask/tool/1")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.IsError).To(Equal(tc.wantError), res.Text)
			if tc.wantText != "" {
				g.Expect(res.Text).To(Equal(tc.wantText))
			}
			g.Expect(res.Text).NotTo(ContainSubstring(weatherKey))
			var statuses []int
			for _, r := range w.ext.Redemptions() {
				statuses = append(statuses, r.Status)
				g.Expect(r.Detail).NotTo(ContainSubstring(weatherKey))
			}
			g.Expect(statuses).To(Equal(tc.redemptions))
			if tc.detail != "" {
				last := w.ext.Redemptions()[len(statuses)-1]
				g.Expect(last.Detail).To(ContainSubstring(tc.detail))
			}
		})
	}
}

func TestACapabilityEndsWithItsCall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// The extension keeps the capability for later: a test server that records it.
	var kept atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(rw).Encode(extension.Document())
			return
		}
		var inv aep.Invocation
		_ = json.NewDecoder(r.Body).Decode(&inv)
		kept.Store(inv)
		_ = json.NewEncoder(rw).Encode(aep.Result{Content: []aep.Content{{Type: "text", Text: "kept"}}})
	}))
	defer srv.Close()
	w := newExtensionWorld(t, extension.Options{}, nil, nil)
	p := create(t, extensionProvider(w.ns, "keeper", srv.URL))
	_, err := w.manager.Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	enable(g, w.ns, "keeper-lookup-weather")
	_, err = w.manager.Call(ctx, w.ns, "keeper-lookup-weather", json.RawMessage(`{"city":"Oslo"}`), "k1")
	g.Expect(err).NotTo(HaveOccurred())
	inv := kept.Load().(aep.Invocation)
	g.Expect(inv.Scope).To(Equal(w.ns))
	c := inv.Capabilities[extension.WeatherKeyRole]
	g.Expect(c.Token).To(HavePrefix("aepcap_"))
	g.Expect(c.ExpiresAt).To(BeTemporally("~", time.Now().Add(tools.DefaultCapabilityLifetime), 5*time.Second))
	_, _, err = w.manager.Redeem(ctx, c.Token, w.ns)
	g.Expect(errors.Is(err, tools.ErrCapabilityRefused)).To(BeTrue(), "%v", err)
}

func TestAToolNeedingARoleTheProviderDoesNotBindIsAConfigurationError(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	w := newExtensionWorld(t, extension.Options{}, nil, nil)
	p := extensionProvider(w.ns, "unbound", w.url)
	p.Definition.Extension = nil
	create(t, p)
	_, err := w.manager.Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	enable(g, w.ns, "unbound-lookup-weather")
	_, err = w.manager.Call(ctx, w.ns, "unbound-lookup-weather", json.RawMessage(`{"city":"Oslo"}`), "k1")
	var configErr *tools.ConfigurationError
	g.Expect(errors.As(err, &configErr)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(`Secret role "weather-api-key", which definition.extension.secrets does not bind`))
	g.Expect(w.ext.Invocations()).To(BeEmpty())
}

func TestAnExtensionOfAnotherProtocolVersionOrAtAPrivateAddressIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		doc := extension.Document()
		doc.ProtocolVersion = "2025-01-01"
		_ = json.NewEncoder(rw).Encode(doc)
	}))
	defer srv.Close()
	w := newExtensionWorld(t, extension.Options{}, nil, nil)
	_, err := w.manager.Refresh(ctx, create(t, extensionProvider(w.ns, "old", srv.URL)))
	g.Expect(tools.IsUnavailable(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(`protocol version "2025-01-01"; this platform speaks 2026-09-18`))

	_, err = w.manager.Refresh(ctx, create(t, extensionProvider(w.ns, "private", "http://10.0.0.1:9/")))
	var configErr *tools.ConfigurationError
	g.Expect(errors.As(err, &configErr)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("extensions may not be reached at private addresses"))
}

func TestExtensionDiscoveryOnStartupIsOffByDefault(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	opts, err := tools.OptionsFromConfig(config.FromMap(config.Testing, nil), tools.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.DiscoverExtensionsOnStartup).To(BeFalse())
	_, err = tools.OptionsFromConfig(config.FromMap(config.Testing, map[string]string{"Platform:Extensions:DiscoverOnStartup": "yes"}), tools.Options{})
	g.Expect(err).To(MatchError(ContainSubstring("must be true or false")))

	// By default a start contacts no extension.
	w := newExtensionWorld(t, extension.Options{}, nil, nil)
	w.manager.DiscoverExtensions(ctx)
	g.Expect(w.ext.Authorizations()).To(BeEmpty())
	g.Expect(toolsOf(g, w.ns)).To(BeEmpty())

	// Turned on, every Extension provider is discovered.
	on := newExtensionWorld(t, extension.Options{}, nil, func(o *tools.Options) {
		*o, err = tools.OptionsFromConfig(config.FromMap(config.Testing, map[string]string{"Platform:Extensions:DiscoverOnStartup": "true"}), *o)
	})
	g.Expect(err).NotTo(HaveOccurred())
	on.manager.DiscoverExtensions(ctx)
	g.Expect(toolsOf(g, on.ns)).To(HaveLen(2))
	g.Expect(toolsOf(g, w.ns)).To(HaveLen(2), "the first world's provider is an Extension provider too")
}

func TestExtensionSettingsThatAreNotValidStopTheStart(t *testing.T) {
	for name, tc := range map[string]struct {
		settings map[string]string
		err      string
	}{
		"DiscoverOnStartup is true or false":   {map[string]string{"Platform:Extensions:DiscoverOnStartup": "1"}, "must be true or false"},
		"AllowPrivateNetwork is true or false": {map[string]string{"Platform:Extensions:AllowPrivateNetwork": "on"}, "must be true or false"},
		"RedeemUrl is an absolute http(s) URL": {map[string]string{"Platform:Extensions:RedeemUrl": "/api/extensions/capabilities/redeem"}, "must be an absolute http(s) URL"},
		"RedeemUrl holds no credentials":       {map[string]string{"Platform:Extensions:RedeemUrl": "https://u:p@platform.example.com/r"}, "without credentials"},
		"valid settings are read": {map[string]string{"Platform:Extensions:DiscoverOnStartup": "TRUE", "Platform:Extensions:AllowPrivateNetwork": "false",
			"Platform:Extensions:RedeemUrl": "https://platform.example.com/api/extensions/capabilities/redeem"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			opts, err := tools.OptionsFromConfig(config.FromMap(config.Testing, tc.settings), tools.Options{})
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(opts).To(And(HaveField("DiscoverExtensionsOnStartup", true), HaveField("ExtensionsAllowPrivateNetwork", false),
				HaveField("RedeemURL", "https://platform.example.com/api/extensions/capabilities/redeem")))
		})
	}
}
