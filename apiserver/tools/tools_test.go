package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/tools/mcptest"
)

// The control plane starts on first use, so that fuzz targets of this package run without it.
var (
	kube    client.Client
	env     *testenv.Env
	envOnce sync.Once
	envErr  error
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfRequested()
	code := m.Run()
	if env != nil {
		env.Stop()
	}
	os.Exit(code)
}

func startKube(t *testing.T) {
	t.Helper()
	envOnce.Do(func() {
		if env, envErr = testenv.Start(context.Background(), testenv.Options{}); envErr == nil {
			kube, envErr = client.New(env.Config, client.Options{Scheme: platformscheme.Scheme})
		}
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
}

var namespaces atomic.Int64

// newNamespace creates a workspace namespace of its own for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	startKube(t)
	name := fmt.Sprintf("tools-%d-%d", time.Now().UnixNano()%100000, namespaces.Add(1))
	if err := kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// noSecrets refuses every Secret, as an instance without values would.
func noSecrets(context.Context, string, string, platformv1.SecretReference) (string, error) {
	return "", errors.New("no secrets here")
}

func newManager(t *testing.T, secrets tools.SecretLookup) *tools.Manager {
	t.Helper()
	startKube(t)
	if secrets == nil {
		secrets = noSecrets
	}
	m, err := tools.NewManager(tools.Options{Kube: kube, Secrets: secrets, AllowedCommands: []string{os.Args[0]},
		MaxResultBytes: 4096, MaxMessageBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func httpProvider(ns, name, url string) *platformv1.ToolProvider {
	return &platformv1.ToolProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Definition: platformv1.ToolProviderDefinition{Protocol: platformv1.MCPProtocol, Transport: platformv1.StreamableHTTPTransport,
			HTTP: &platformv1.HTTPTransportSettings{URL: url, AuthenticationMode: platformv1.NoToolAuthentication}, TimeoutSeconds: ptr.To[int32](5)}}
}

// stdioProvider runs this test binary as the MCP server in mode (see mcptest.StdioVariable).
func stdioProvider(ns, name, mode string, env ...platformv1.EnvVar) *platformv1.ToolProvider {
	return &platformv1.ToolProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Definition: platformv1.ToolProviderDefinition{Protocol: platformv1.MCPProtocol, Transport: platformv1.StdioTransport,
			Stdio: &platformv1.StdioTransportSettings{Command: os.Args[0],
				Env: append([]platformv1.EnvVar{{Name: mcptest.StdioVariable, Value: mode}}, env...)},
			TimeoutSeconds: ptr.To[int32](2)}}
}

func create(t *testing.T, p *platformv1.ToolProvider) *platformv1.ToolProvider {
	t.Helper()
	if err := kube.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func toolsOf(g Gomega, ns string) map[string]platformv1.Tool {
	list := &platformv1.ToolList{}
	g.Expect(kube.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	out := map[string]platformv1.Tool{}
	for _, t := range list.Items {
		out[t.Name] = t
	}
	return out
}

func enable(g Gomega, ns, name string) {
	tool := &platformv1.Tool{}
	g.Expect(kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, tool)).To(Succeed())
	tool.Definition.Enabled = true
	g.Expect(kube.Update(context.Background(), tool)).To(Succeed())
}

// discoveredOverHTTP is the test server as the provider "kb" of a namespace of its own,
// discovered by a manager.
func discoveredOverHTTP(t *testing.T) (*mcptest.HTTPServer, string, *tools.Manager) {
	t.Helper()
	srv := mcptest.StartHTTP(mcptest.HTTPOptions{})
	t.Cleanup(srv.Close)
	ns := newNamespace(t)
	m := newManager(t, nil)
	if _, err := m.Refresh(context.Background(), create(t, httpProvider(ns, "kb", srv.Endpoint()))); err != nil {
		t.Fatal(err)
	}
	return srv, ns, m
}

func TestDiscoveryOverStreamableHTTPCreatesDisabledToolsAndARefreshNeverEnablesAnything(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := mcptest.StartHTTP(mcptest.HTTPOptions{})
	defer srv.Close()
	ns := newNamespace(t)
	p := create(t, httpProvider(ns, "kb", srv.Endpoint()))
	m := newManager(t, nil)

	refresh, err := m.Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refresh.Created).To(Equal(8))
	g.Expect(refresh.Total).To(Equal(8))
	found := toolsOf(g, ns)
	g.Expect(found).To(HaveKey("kb-echo"))
	for name, tool := range found {
		g.Expect(tool.Definition.Enabled).To(BeFalse(), "%s is disabled until someone enables it", name)
		g.Expect(tool.Status.Availability).To(Equal(platformv1.ToolAvailable))
		g.Expect(tool.OwnerReferences).To(ConsistOf(HaveField("Name", "kb")))
	}
	g.Expect(found["kb-echo"].Status.Description).To(Equal("Repeats the text."))
	g.Expect(string(found["kb-echo"].Status.InputSchema.Raw)).To(ContainSubstring(`"text"`))

	provider := &platformv1.ToolProvider{}
	g.Expect(kube.Get(ctx, client.ObjectKeyFromObject(p), provider)).To(Succeed())
	g.Expect(provider.Status.ServerName).To(Equal("mcptest"))
	g.Expect(provider.Status.ProtocolVersion).NotTo(BeEmpty())
	g.Expect(provider.Status.Tools).To(Equal(int32(8)))
	g.Expect(provider.Status.Connection.State).To(Equal(platformv1.ToolProviderConnected))

	// The provider changes: echo gets a new description, crash goes away, shout arrives.
	enable(g, ns, "kb-echo")
	srv.MCP.RemoveTools("crash", "echo")
	srv.MCP.AddTool(&mcp.Tool{Name: "echo", Description: "Repeats the text, louder.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.MCP.AddTool(&mcp.Tool{Name: "shout", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	refresh, err = m.Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refresh).To(Equal(tools.Refresh{Created: 1, Updated: 1, Unchanged: 6, Missing: 1, Total: 9}))
	found = toolsOf(g, ns)
	g.Expect(found["kb-crash"].Status.Availability).To(Equal(platformv1.ToolMissing))
	g.Expect(found["kb-echo"].Definition.Enabled).To(BeTrue(), "a refresh keeps what people enabled")
	g.Expect(found["kb-echo"].Status.Description).To(Equal("Repeats the text, louder."))
	g.Expect(found["kb-shout"].Definition.Enabled).To(BeFalse())
	g.Expect(kube.Get(ctx, client.ObjectKeyFromObject(p), provider)).To(Succeed())
	g.Expect(provider.Status.Tools).To(Equal(int32(8)))
	g.Expect(provider.Status.MissingTools).To(Equal(int32(1)))
	g.Expect(provider.Status.EnabledTools).To(Equal(int32(1)))
}

func TestToolsWhoseNamesCollideAreKeptApartOrSkippedWithAReason(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := mcptest.StartHTTP(mcptest.HTTPOptions{})
	defer srv.Close()
	srv.MCP.AddTool(&mcp.Tool{Name: "Echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	ns := newNamespace(t)
	// A Tool someone created by hand holds the name the provider's "add" would get.
	g.Expect(kube.Create(ctx, &platformv1.Tool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kb-add"},
		Definition: platformv1.ToolDefinition{Provider: platformv1.LocalObjectReference{Name: "other"}, ToolName: "add"}})).To(Succeed())
	p := create(t, httpProvider(ns, "kb", srv.Endpoint()))

	refresh, err := newManager(t, nil).Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	found := toolsOf(g, ns)
	g.Expect(found).To(HaveKey("kb-echo"))
	g.Expect(found).To(HaveKey(MatchRegexp(`^kb-echo-[0-9a-f]{8}$`)), "Echo folds to echo, so a digest keeps it apart")
	g.Expect(refresh.Skipped).To(ConsistOf(`tool "add": the name kb-add is taken by a Tool of provider "other" (tool "add")`))
	g.Expect(found["kb-add"].Definition.Provider.Name).To(BeEquivalentTo("other"), "the other provider's Tool is left alone")
}

func TestAnEnabledToolIsCalledWithTheIdempotencyKeyAndADisabledOneIsNotAvailable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, ns, m := discoveredOverHTTP(t)

	_, err := m.Call(ctx, ns, "kb-echo", json.RawMessage(`{"text":"hi"}`), "run-1/ask/tool/1")
	g.Expect(errors.Is(err, tools.ErrToolNotAvailable)).To(BeTrue(), "a disabled tool: %v", err)
	_, err = m.Call(ctx, ns, "kb-nothing", nil, "k")
	g.Expect(errors.Is(err, tools.ErrToolNotAvailable)).To(BeTrue(), "an unknown tool: %v", err)
	g.Expect(srv.Recorder.Calls()).To(BeEmpty())

	enable(g, ns, "kb-echo")
	enable(g, ns, "kb-fail")
	res, err := m.Call(ctx, ns, "kb-echo", json.RawMessage(`{"text":"hi"}`), "run-1/ask/tool/1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(HaveField("Text", "echo: hi"))
	g.Expect(res.IsError).To(BeFalse())
	g.Expect(srv.Recorder.CallsOf("echo")).To(Equal(map[string]int{"run-1/ask/tool/1": 1}))

	res, err = m.Call(ctx, ns, "kb-fail", nil, "k2")
	g.Expect(err).NotTo(HaveOccurred(), "a tool's error is its result, not a failure of the call")
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(res.Text).To(Equal("the tool failed on purpose"))

	res, err = m.Call(ctx, ns, "kb-echo", json.RawMessage(`[1,2]`), "k3")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(HaveField("IsError", true))
}

func TestResultsAreCutAtTheResultLimitAndAnswersOverTheMessageLimitAreDiscarded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, ns, m := discoveredOverHTTP(t)
	enable(g, ns, "kb-huge")
	enable(g, ns, "kb-echo")

	res, err := m.Call(ctx, ns, "kb-huge", json.RawMessage(`{"bytes":10000}`), "k1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Truncated).To(BeTrue())
	g.Expect(len(res.Text)).To(BeNumerically("<", 4200))
	g.Expect(res.Text).To(HaveSuffix("[cut: the result had 10000 bytes; at most 4096 are kept]"))

	res, err = m.Call(ctx, ns, "kb-huge", json.RawMessage(`{"bytes":1000000}`), "k2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(res.Text).To(Equal("the tool's answer exceeded 262144 bytes and was discarded"))

	res, err = m.Call(ctx, ns, "kb-echo", json.RawMessage(`{"text":"after"}`), "k3")
	g.Expect(err).NotTo(HaveOccurred(), "the provider is reached again after an oversized answer")
	g.Expect(res.Text).To(Equal("echo: after"))
}

func TestTheBearerCredentialIsResolvedOnEveryRequestAndNeverAppearsInErrors(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := mcptest.StartHTTP(mcptest.HTTPOptions{Token: "first-token"})
	defer srv.Close()
	ns := newNamespace(t)
	p := httpProvider(ns, "kb", srv.Endpoint())
	p.Definition.HTTP.AuthenticationMode = platformv1.StaticBearerToolAuthentication
	p.Definition.HTTP.Credential = &platformv1.SecretReference{Name: "kb-token"}
	create(t, p)
	var current atomic.Value
	current.Store("first-token")
	secrets := func(_ context.Context, namespace, field string, ref platformv1.SecretReference) (string, error) {
		g.Expect(namespace).To(Equal(ns))
		g.Expect(field).To(Equal("definition.http.credential"))
		g.Expect(ref.Name).To(BeEquivalentTo("kb-token"))
		return current.Load().(string), nil
	}
	m := newManager(t, secrets)
	_, err := m.Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	enable(g, ns, "kb-echo")
	_, err = m.Call(ctx, ns, "kb-echo", json.RawMessage(`{"text":"a"}`), "k1")
	g.Expect(err).NotTo(HaveOccurred())

	// The Secret changes: the next request sends the new value, which the server refuses.
	current.Store("second-token")
	_, err = m.Call(ctx, ns, "kb-echo", json.RawMessage(`{"text":"b"}`), "k2")
	g.Expect(tools.IsUnavailable(err)).To(BeTrue(), "%v", err)
	g.Expect(srv.Authorizations()).To(ContainElement("Bearer second-token"))
	g.Expect(err.Error()).NotTo(ContainSubstring("token"), "the error names no credential: %v", err)
	for _, a := range srv.Authorizations() {
		g.Expect(a).To(BeElementOf("Bearer first-token", "Bearer second-token"))
	}
}

func TestAServerAnsweringGarbageOrHugeBodiesIsUnavailableWithAClearReason(t *testing.T) {
	for name, opts := range map[string]mcptest.HTTPOptions{
		"garbage":     {Garbage: true},
		"a huge body": {HugeBody: 1 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv := mcptest.StartHTTP(opts)
			defer srv.Close()
			p := create(t, httpProvider(newNamespace(t), "kb", srv.Endpoint()))
			_, err := newManager(t, nil).Refresh(context.Background(), p)
			g.Expect(tools.IsUnavailable(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).NotTo(ContainSubstring("html"), "never the server's output")
			g.Expect(err.Error()).NotTo(ContainSubstring("xxxx"))
			provider := &platformv1.ToolProvider{}
			g.Expect(kube.Get(context.Background(), client.ObjectKeyFromObject(p), provider)).To(Succeed())
			g.Expect(provider.Status.Connection).NotTo(BeNil())
			g.Expect(provider.Status.Connection.State).To(Equal(platformv1.ToolProviderConnectionFailed))
		})
	}
}

func TestAStdioProviderRunsWithItsOwnEnvironmentAndSecretsButNotThePlatforms(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	t.Setenv("PLATFORM_TEST_PRIVATE", "platform-secret")
	ns := newNamespace(t)
	p := create(t, stdioProvider(ns, "local", "serve",
		platformv1.EnvVar{Name: "GREETING", Value: "hello"},
		platformv1.EnvVar{Name: "API_TOKEN", Secret: &platformv1.SecretReference{Name: "local-token"}}))
	m := newManager(t, func(_ context.Context, _, field string, ref platformv1.SecretReference) (string, error) {
		g.Expect(field).To(Equal("definition.stdio.env[2].secret"))
		return "from-the-secret", nil
	})
	refresh, err := m.Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refresh.Created).To(Equal(8))
	enable(g, ns, "local-env")
	for name, want := range map[string]string{"GREETING": "set: hello", "API_TOKEN": "set: from-the-secret",
		"PLATFORM_TEST_PRIVATE": "unset", mcptest.StdioVariable: "set: serve"} {
		res, err := m.Call(ctx, ns, "local-env", json.RawMessage(`{"name":"`+name+`"}`), "k-"+name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Text).To(Equal(want), name)
	}
}

func TestAStdioCommandMustBeAllowedByTheInstance(t *testing.T) {
	g := NewWithT(t)
	p := stdioProvider(newNamespace(t), "local", "serve")
	p.Definition.Stdio.Command = "/bin/sh"
	create(t, p)
	_, err := newManager(t, nil).Refresh(context.Background(), p)
	var configErr *tools.ConfigurationError
	g.Expect(errors.As(err, &configErr)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(`the command "/bin/sh" is not one the instance allows (Platform:Tools:AllowedCommands)`))
}

func TestAStdioProviderThatExitsHangsFloodsOrAnswersGarbageIsUnavailableInBoundedTime(t *testing.T) {
	for mode, reason := range map[string]string{
		"exit":    "the connection closed before the answer",
		"hang":    "did not answer within 2s",
		"flood":   "over the size limit",
		"garbage": "not MCP",
	} {
		t.Run(mode, func(t *testing.T) {
			g := NewWithT(t)
			p := create(t, stdioProvider(newNamespace(t), "local", mode))
			start := time.Now()
			_, err := newManager(t, nil).Refresh(context.Background(), p)
			g.Expect(tools.IsUnavailable(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(reason))
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		})
	}
}

func TestAStdioProcessThatExitsIsRestartedOnNextUse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	p := create(t, stdioProvider(ns, "local", "serve"))
	m := newManager(t, nil)
	_, err := m.Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	enable(g, ns, "local-crash")
	enable(g, ns, "local-echo")

	_, err = m.Call(ctx, ns, "local-crash", nil, "k1")
	g.Expect(tools.IsUnavailable(err)).To(BeTrue(), "the process died during the call: %v", err)
	g.Eventually(func(g Gomega) {
		provider := &platformv1.ToolProvider{}
		g.Expect(kube.Get(ctx, client.ObjectKeyFromObject(p), provider)).To(Succeed())
		g.Expect(provider.Status.Connection.State).To(Equal(platformv1.ToolProviderConnectionFailed))
		g.Expect(provider.Status.Connection.Message).To(ContainSubstring("exited"))
	}).Should(Succeed())

	res, err := m.Call(ctx, ns, "local-echo", json.RawMessage(`{"text":"again"}`), "k2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Text).To(Equal("echo: again"))
	provider := &platformv1.ToolProvider{}
	g.Expect(kube.Get(ctx, client.ObjectKeyFromObject(p), provider)).To(Succeed())
	g.Expect(provider.Status.Connection.State).To(Equal(platformv1.ToolProviderConnected))
}

func TestFunctionNamesFitModelsAndNeverCollide(t *testing.T) {
	g := NewWithT(t)
	g.Expect(tools.FunctionName("kb-search")).To(Equal("kb-search"))
	g.Expect(tools.FunctionName("kb-v1.search")).To(Equal("kb-v1_search"))
	long := tools.FunctionName(strings.Repeat("a", 100))
	g.Expect(len(long)).To(BeNumerically("<=", 64))
	g.Expect(long).NotTo(Equal(tools.FunctionName(strings.Repeat("a", 99))))
	g.Expect(tools.ObjectName("kb", "search")).To(Equal("kb-search"))
	g.Expect(tools.ObjectName("kb", "Search")).To(MatchRegexp(`^kb-search-[0-9a-f]{8}$`))
	g.Expect(tools.ObjectName("kb", "web/search")).To(MatchRegexp(`^kb-web-search-[0-9a-f]{8}$`))
}

// A call is not made past MaxCallDepth nested calls (a tool that calls back into the platform),
// nor past the workspace's concurrent calls; the provider sees neither. Once a call ended, its
// slot serves the next.
func TestACallIsNotMadePastTheDepthOfItsChainOrTheWorkspacesConcurrentCalls(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	startKube(t)
	srv := mcptest.StartHTTP(mcptest.HTTPOptions{})
	t.Cleanup(srv.Close)
	ns := newNamespace(t)
	m, err := tools.NewManager(tools.Options{Kube: kube, Secrets: noSecrets, MaxConcurrentCallsPerWorkspace: 1})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(m.Close)
	_, err = m.Refresh(ctx, create(t, httpProvider(ns, "kb", srv.Endpoint())))
	g.Expect(err).NotTo(HaveOccurred())
	enable(g, ns, "kb-echo")
	enable(g, ns, "kb-wait")

	deep := tools.WithCallChain(ctx, tools.CallChain{ID: "chain-1", Depth: tools.MaxCallDepth})
	_, err = m.Call(deep, ns, "kb-echo", json.RawMessage(`{"text":"hi"}`), "k1")
	g.Expect(err).To(MatchError(tools.ErrCallChainTooDeep))
	g.Expect(tools.IsRefused(err)).To(BeTrue())
	_, err = m.Call(tools.WithCallChain(ctx, tools.CallChain{ID: "chain-1", Depth: tools.MaxCallDepth - 1}), ns, "kb-echo",
		json.RawMessage(`{"text":"hi"}`), "k2")
	g.Expect(err).NotTo(HaveOccurred(), "the last level allowed")

	waited := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, ns, "kb-wait", nil, "k3")
		waited <- err
	}()
	select {
	case <-srv.Recorder.Entered():
	case <-time.After(30 * time.Second):
		t.Fatal("the wait tool was not called")
	}
	_, err = m.Call(ctx, ns, "kb-echo", json.RawMessage(`{"text":"hi"}`), "k4")
	g.Expect(err).To(MatchError(tools.ErrTooManyCalls))
	g.Expect(srv.Recorder.CallsOf("echo")).To(Equal(map[string]int{"k2": 1}), "refused calls never reach the provider")

	srv.Recorder.Release()
	g.Expect(<-waited).NotTo(HaveOccurred())
	_, err = m.Call(ctx, ns, "kb-echo", json.RawMessage(`{"text":"hi"}`), "k5")
	g.Expect(err).NotTo(HaveOccurred())
}

func TestCallChainHeadersAreReadStrictly(t *testing.T) {
	for name, tc := range map[string]struct {
		depth, id string
		want      int
		wantErr   bool
		keepsID   bool
	}{
		"no headers begin a chain":            {want: 0},
		"a depth is kept":                     {depth: "2", id: "run-1/ask/tool/1", want: 2, keepsID: true},
		"a depth that is not a number":        {depth: "two", wantErr: true},
		"a negative depth":                    {depth: "-1", wantErr: true},
		"an absurd depth":                     {depth: "100000", wantErr: true},
		"an unprintable chain id is replaced": {depth: "1", id: "a b\n", want: 1},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			chain, err := tools.ParseCallChain(tc.depth, tc.id)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(chain.Depth).To(Equal(tc.want))
			g.Expect(chain.ID).NotTo(BeEmpty())
			g.Expect(chain.ID == tc.id).To(Equal(tc.keepsID))
		})
	}
}
