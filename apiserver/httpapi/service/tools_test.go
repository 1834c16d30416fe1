package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/tools/mcptest"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/test/mcp/mcpclient"
)

// toolsDevServer is a Development-mode server that reaches tool providers, and a workspace
// namespace of its own, selected with the X-Platform-Workspace header.
func toolsDevServer(t *testing.T, settings map[string]string) (*httptest.Server, string) {
	t.Helper()
	if settings == nil {
		settings = map[string]string{}
	}
	settings["Platform:Authentication:Mode"] = "Development"
	cfg := config.FromMap(config.Testing, settings)
	// Development mode has no identity store, so no scope tree: no Secret resolves here.
	noSecrets := func(_ context.Context, _, field string, ref platformv1.SecretReference) (string, error) {
		return "", fmt.Errorf("%s: Secret %q has no value here", field, ref.Name)
	}
	opts, err := tools.OptionsFromConfig(cfg, tools.Options{Kube: kube, Secrets: noSecrets})
	if err != nil {
		t.Fatal(err)
	}
	m, err := tools.NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	api, err := service.New(httpapi.Options{Config: cfg, Kube: kube, Tools: m,
		Ready: func(ctx context.Context) error { return env.Server().Ready(ctx) }})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)
	ns := uniqueWorkspace("tools")
	if err := kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return server, ns
}

func toolProviderBody(name, definition string) string {
	return `{"apiVersion":"platform/v1","kind":"ToolProvider","metadata":{"name":"` + name + `"},"definition":` + definition + `}`
}

func httpProviderDefinition(url string, extra string) string {
	return `{"protocol":"MCP","transport":"StreamableHttp","timeoutSeconds":2,"http":{"url":"` + url + `"` + extra + `}}`
}

func TestAToolProvidersToolsAreDiscoveredDisabledAndEnabledOneByOneWithTheirETag(t *testing.T) {
	g := NewWithT(t)
	mcpServer := mcptest.StartHTTP(mcptest.HTTPOptions{})
	defer mcpServer.Close()
	server, ns := toolsDevServer(t, nil)
	ws := []string{httpapi.WorkspaceHeader, ns}

	created := call(t, server, http.MethodPost, "/api/toolproviders", toolProviderBody("kb", httpProviderDefinition(mcpServer.Endpoint(), "")), ws...)
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
	g.Expect(call(t, server, http.MethodGet, "/api/tools", "", ws...).body["items"]).To(BeEmpty(), "nothing is discovered before a refresh")
	g.Expect(mcpServer.Recorder.Calls()).To(BeEmpty())

	refreshed := call(t, server, http.MethodPost, "/api/toolproviders/kb/tools/refresh", "", ws...)
	g.Expect(refreshed.status).To(Equal(http.StatusOK), "%v", refreshed.body)
	g.Expect(refreshed.body).To(And(HaveKeyWithValue("created", BeNumerically("==", 8)), HaveKeyWithValue("total", BeNumerically("==", 8))))

	provider := call(t, server, http.MethodGet, "/api/toolproviders/kb", "", ws...)
	g.Expect(provider.body["status"]).To(And(
		HaveKeyWithValue("serverName", "mcptest"), HaveKeyWithValue("protocolVersion", Not(BeEmpty())),
		HaveKeyWithValue("tools", BeNumerically("==", 8)), HaveKeyWithValue("enabledTools", BeNumerically("==", 0)),
		HaveKeyWithValue("connection", HaveKeyWithValue("state", "Connected"))))

	listed := call(t, server, http.MethodGet, "/api/toolproviders/kb/tools", "", ws...)
	g.Expect(listed.body["items"]).To(HaveLen(8))
	g.Expect(listed.body["items"]).To(HaveEach(HaveKeyWithValue("definition", Not(HaveKey("enabled")))), "enabled is false, so omitted")
	echo := call(t, server, http.MethodGet, "/api/tools/kb-echo", "", ws...)
	g.Expect(echo.body["status"]).To(And(HaveKeyWithValue("availability", "Available"), HaveKeyWithValue("functionName", "kb-echo"),
		HaveKeyWithValue("description", "Repeats the text."), HaveKeyWithValue("inputSchema", HaveKeyWithValue("type", "object"))))

	first := echo.header.Get("ETag")
	expectProblem(g, call(t, server, http.MethodPost, "/api/tools/kb-echo/enable", "", ws...), http.StatusPreconditionRequired)
	enabled := call(t, server, http.MethodPost, "/api/tools/kb-echo/enable", "", append(ws, "If-Match", first)...)
	g.Expect(enabled.status).To(Equal(http.StatusOK), "%v", enabled.body)
	g.Expect(enabled.body["definition"]).To(HaveKeyWithValue("enabled", true))
	g.Expect(enabled.header.Get("ETag")).NotTo(Equal(first))
	expectProblem(g, call(t, server, http.MethodPost, "/api/tools/kb-echo/disable", "", append(ws, "If-Match", first)...), http.StatusPreconditionFailed)
	disabled := call(t, server, http.MethodPost, "/api/tools/kb-echo/disable", "", append(ws, "If-Match", enabled.header.Get("ETag"))...)
	g.Expect(disabled.status).To(Equal(http.StatusOK))
	g.Expect(disabled.body["definition"]).NotTo(HaveKey("enabled"))
	expectProblem(g, call(t, server, http.MethodPost, "/api/tools/kb-nothing/enable", "", append(ws, "If-Match", first)...), http.StatusNotFound)

	tested := call(t, server, http.MethodPost, "/api/toolproviders/kb/test", "", ws...)
	g.Expect(tested.status).To(Equal(http.StatusOK))
	g.Expect(tested.body).To(And(HaveKeyWithValue("reachable", true), HaveKeyWithValue("serverName", "mcptest")))

	deleted := call(t, server, http.MethodDelete, "/api/toolproviders/kb", "", append(ws, "If-Match", provider.header.Get("ETag"))...)
	g.Expect(deleted.status).To(Equal(http.StatusNoContent), "%v", deleted.body)
	g.Expect(call(t, server, http.MethodGet, "/api/tools", "", ws...).body["items"]).To(BeEmpty(), "a provider's Tools go with it")
}

func TestARefreshThatCannotUseOrReachItsProviderIsAProblemThatNamesNoCredential(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/mcp"
	closed.Close()
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}))
	defer hanging.Close()
	guarded := mcptest.StartHTTP(mcptest.HTTPOptions{Token: "the-right-token"})
	defer guarded.Close()

	server, ns := toolsDevServer(t, nil)
	ws := []string{httpapi.WorkspaceHeader, ns}
	g := NewWithT(t)
	g.Expect(kube.Create(context.Background(), &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong-token"},
		Definition: platformv1.SecretDefinition{Vault: platformv1.VaultReference{Name: "local"}}})).To(Succeed())

	for name, tc := range map[string]struct {
		definition string
		status     int
		detail     string
	}{
		"a STDIO command the instance does not allow is 422": {
			definition: `{"protocol":"MCP","transport":"Stdio","stdio":{"command":"/bin/sh","args":["-c","echo"]}}`,
			status:     http.StatusUnprocessableEntity, detail: `the command "/bin/sh" is not one the instance allows (Platform:Tools:AllowedCommands)`,
		},
		"a URL that refuses connections is 502": {
			definition: httpProviderDefinition(closedURL, ""), status: http.StatusBadGateway, detail: "is unavailable: connecting",
		},
		"a URL that does not answer in time is 504": {
			definition: httpProviderDefinition(hanging.URL, ""), status: http.StatusGatewayTimeout, detail: "did not answer within 2s",
		},
		"a credential without a value is 422": {
			definition: httpProviderDefinition(guarded.Endpoint(), `,"authenticationMode":"StaticBearer","credential":{"name":"wrong-token"}`),
			status:     http.StatusUnprocessableEntity, detail: `Secret "wrong-token" has no value`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			provider := fmt.Sprintf("p%d", time.Now().UnixNano()%1000000)
			created := call(t, server, http.MethodPost, "/api/toolproviders", toolProviderBody(provider, tc.definition), ws...)
			g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
			r := call(t, server, http.MethodPost, "/api/toolproviders/"+provider+"/tools/refresh", "", ws...)
			expectProblem(g, r, tc.status)
			g.Expect(r.body["detail"]).To(ContainSubstring(tc.detail))
			g.Expect(r.body["detail"]).NotTo(ContainSubstring("the-right-token"))
		})
	}
	expectProblem(g, call(t, server, http.MethodPost, "/api/toolproviders/nobody/tools/refresh", "", ws...), http.StatusNotFound)
}

func TestTheOfficialMCPClientListsAndCallsTheWorkspacesEnabledToolsWithAPAT(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		e := newIdentityEnv(t, db)
		mcpServer := mcptest.StartHTTP(mcptest.HTTPOptions{})
		defer mcpServer.Close()
		admin := func(method, path, body string, headers ...string) response {
			return e.do(e.adminCookie, method, path, body, append(headers, httpapi.WorkspaceHeader, e.ws.RouteName)...)
		}
		g.Expect(admin(http.MethodPost, "/api/toolproviders", toolProviderBody("kb", httpProviderDefinition(mcpServer.Endpoint(), ""))).status).
			To(Equal(http.StatusCreated))
		g.Expect(admin(http.MethodPost, "/api/toolproviders/kb/tools/refresh", "").status).To(Equal(http.StatusOK))
		for _, name := range []string{"kb-echo", "kb-add"} {
			etag := admin(http.MethodGet, "/api/tools/"+name, "").header.Get("ETag")
			g.Expect(admin(http.MethodPost, "/api/tools/"+name+"/enable", "", "If-Match", etag).status).To(Equal(http.StatusOK))
		}
		// kb-add needs an approval, which nobody could give at /mcp: it is not offered there.
		add := &platformv1.Tool{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: e.ws.RouteName, Name: "kb-add"}, add)).To(Succeed())
		add.Definition.RequiresApproval = true
		g.Expect(kube.Update(ctx, add)).To(Succeed())

		// The demo Entries, published; quick-answer's Flow can run, as its reconciler would report.
		publishDemo(t, e.ws.RouteName)
		quick := &platformv1.PublishedEntry{}
		g.Expect(platformKube.Get(ctx, client.ObjectKey{Namespace: e.ws.RouteName, Name: "quick-answer"}, quick)).To(Succeed())
		quick.Status.TargetState = platformv1.TargetExecutable
		g.Expect(platformKube.Status().Update(ctx, quick)).To(Succeed())

		e.account("Ada", e.ws, "Member")
		member := e.signIn("Ada", adminPassword)
		token := func(permissions ...string) string {
			r := e.do(member, http.MethodPost, "/api/identity/pat", patRequest(e.ws.RouteName, permissions, nil))
			g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
			return r.body["token"].(string)
		}
		endpoint := e.server.URL + "/mcp"

		out := mcpclient.Run(t, endpoint, token("workspaces/read", "resources/read", "runs/read", "runs/execute"),
			mcpclient.Call{Name: "kb-echo", Arguments: map[string]any{"text": "hi"}},
			mcpclient.Call{Name: "kb-fail"},
			mcpclient.Call{Name: "platform_get_work_item", Arguments: map[string]any{"id": "no-such-item"}},
			mcpclient.Call{Name: "platform_list_entries"},
			mcpclient.Call{Name: "platform_open_interaction", Arguments: map[string]any{"entry": "quick-answer",
				"input": map[string]any{"question": "What is MCP?"}}})
		g.Expect(out.Error).To(BeEmpty())
		g.Expect(out.Server.Name).To(Equal("platform"))
		g.Expect(out.ToolNames()).To(ConsistOf("kb-echo", "platform_list_entries", "platform_open_interaction", "platform_get_task",
			"platform_get_work_item", "platform_get_flow_run"))
		g.Expect(out.Results).To(HaveLen(5))
		g.Expect(out.Results[3]).To(HaveField("IsError", false))
		g.Expect(out.Results[3].Text).To(And(ContainSubstring(`"name":"quick-answer"`), Not(ContainSubstring(`"name":"prepare-report"`))),
			"only the Entries whose Flow can run")
		g.Expect(out.Results[4]).To(HaveField("IsError", false), out.Results[4].Text)
		g.Expect(out.Results[4].Text).To(ContainSubstring(`Here is a quick answer to \"What is MCP?\".`), "the Entry's run answered")
		g.Expect(out.Results[0]).To(Equal(mcpclient.Result{Text: "echo: hi"}))
		g.Expect(out.Results[1].IsError || out.Results[1].Error != "").To(BeTrue(), "a disabled tool is not callable: %+v", out.Results[1])
		g.Expect(out.Results[2]).To(HaveField("IsError", true))
		g.Expect(out.Results[2].Text).To(HavePrefix("404 Not Found: "))
		g.Expect(mcpServer.Recorder.CallsOf("echo")).To(HaveLen(1))
		for key := range mcpServer.Recorder.CallsOf("echo") {
			g.Expect(key).To(HavePrefix("mcp/"), "a call at /mcp carries a key of its own")
		}

		out = mcpclient.Run(t, endpoint, token("resources/read"), mcpclient.Call{Name: "kb-echo", Arguments: map[string]any{"text": "hi"}},
			mcpclient.Call{Name: "platform_get_flow_run", Arguments: map[string]any{"id": "x"}})
		g.Expect(out.Results).To(ConsistOf(
			mcpclient.Result{IsError: true, Text: fmt.Sprintf("not permitted: runs/execute is required in workspace %q", e.ws.RouteName)},
			mcpclient.Result{IsError: true, Text: fmt.Sprintf("403 Forbidden: not permitted: runs/read is required in workspace %q", e.ws.RouteName)}),
			"every call is authorized like its route")
		g.Expect(mcpServer.Recorder.CallsOf("echo")).To(HaveLen(1))

		out = mcpclient.Run(t, endpoint, token("runs/read"))
		g.Expect(out.Error).To(ContainSubstring("403"), "connecting needs resources/read")
		out = mcpclient.Run(t, endpoint, "")
		g.Expect(out.Error).To(ContainSubstring("401"))
		out = mcpclient.Run(t, endpoint, "platform_pat_not-a-token")
		g.Expect(out.Error).To(ContainSubstring("401"))

		// A PAT reaches its own workspace only: another workspace's holder sees none of these tools.
		other := e.workspace("mcp-other")
		e.account("Bob", other, "Member")
		bob := e.signIn("Bob", adminPassword)
		r := e.do(bob, http.MethodPost, "/api/identity/pat", patRequest(other.RouteName, []string{"resources/read", "runs/execute"}, nil))
		g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
		out = mcpclient.Run(t, endpoint, r.body["token"].(string), mcpclient.Call{Name: "kb-echo", Arguments: map[string]any{"text": "hi"}})
		g.Expect(out.ToolNames()).NotTo(ContainElement("kb-echo"))
		g.Expect(out.Results[0].IsError || out.Results[0].Error != "").To(BeTrue())
		g.Expect(mcpServer.Recorder.CallsOf("echo")).To(HaveLen(1))
	})
}

func TestAStaticBearerIsItsSecretsValueFromTheVaultReadForEveryRequestAndNeverShown(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		const first, second = "tok-first-81d2a7", "tok-second-5be0c3"
		mcpServer := mcptest.StartHTTP(mcptest.HTTPOptions{Token: first})
		defer mcpServer.Close()
		as := func(method, path, body string, headers ...string) response {
			return e.do(e.adminCookie, method, path, body, append(headers, httpapi.WorkspaceHeader, e.ws.RouteName)...)
		}
		g.Expect(as(http.MethodPut, "/api/vaults/tools-vault", vaultBody("tools-vault", "")).status).To(Equal(http.StatusCreated))
		g.Expect(as(http.MethodPut, "/api/secrets/kb-token", secretBody("kb-token", "tools-vault", "", "")).status).To(Equal(http.StatusCreated))
		g.Expect(as(http.MethodPut, "/api/secrets/kb-token/value", `{"value":"`+first+`"}`).status).To(Equal(http.StatusNoContent))
		created := as(http.MethodPost, "/api/toolproviders", toolProviderBody("kb", httpProviderDefinition(mcpServer.Endpoint(),
			`,"authenticationMode":"StaticBearer","credential":{"name":"kb-token"}`)))
		g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)

		refreshed := as(http.MethodPost, "/api/toolproviders/kb/tools/refresh", "")
		g.Expect(refreshed.status).To(Equal(http.StatusOK), "%v", refreshed.body)
		g.Expect(mcpServer.Authorizations()).To(HaveEach("Bearer " + first))

		// A new value is used from the next request on; the server still wants the first.
		g.Expect(as(http.MethodPut, "/api/secrets/kb-token/value", `{"value":"`+second+`"}`).status).To(Equal(http.StatusNoContent))
		refused := as(http.MethodPost, "/api/toolproviders/kb/test", "")
		expectProblem(g, refused, http.StatusBadGateway)
		g.Expect(mcpServer.Authorizations()).To(ContainElement("Bearer " + second))

		// The value appears in no answer: not the provider, its tools or the failure.
		for _, r := range []response{created, refreshed, refused, as(http.MethodGet, "/api/toolproviders/kb", ""), as(http.MethodGet, "/api/tools", "")} {
			g.Expect(fmt.Sprint(r.body)).NotTo(Or(ContainSubstring(first), ContainSubstring(second)))
		}

		// Without a value the provider cannot be used as declared: 422, naming the Secret only.
		g.Expect(as(http.MethodDelete, "/api/secrets/kb-token/value", "").status).To(Equal(http.StatusNoContent))
		missing := as(http.MethodPost, "/api/toolproviders/kb/test", "")
		expectProblem(g, missing, http.StatusUnprocessableEntity)
		g.Expect(missing.body["detail"]).To(ContainSubstring(`Secret "kb-token"`))
	})
}
