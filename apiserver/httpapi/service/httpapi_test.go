package service_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/internal/config"
)

var (
	env *testenv.Env
	// kube is the service API's own client: a privileged user that the kube API's admission
	// rules apply to, as in `platform serve`. Tests set objects up with it.
	kube client.Client
	// platformKube is the platform's loopback identity, for what only the platform writes
	// (published Flow versions and Entries, system-managed Flows).
	platformKube client.Client
)

func TestMain(m *testing.M) {
	if floodChild() { // the flood client of a benchmark, in its own process
		os.Exit(0)
	}
	var err error
	// Admission applies the rules of scopes with the identity store of the test that runs (see
	// newIdentityEnv), as platform serve's does with its own; the Trigger rules read the target
	// Flows through the platform's client once it exists.
	triggerRules := triggers.NewAdmission()
	if env, err = testenv.Start(context.Background(), testenv.Options{Tune: func(o *controlplane.Options) {
		o.Admission = append(o.Admission, followingAdmission{secrets.NewAdmission(nil)}, triggerRules)
	}}); err != nil {
		panic(err)
	}
	if kube, err = client.New(env.ServiceAPI, client.Options{Scheme: platformscheme.Scheme}); err != nil {
		panic(err)
	}
	if platformKube, err = client.New(env.Platform, client.Options{Scheme: platformscheme.Scheme}); err != nil {
		panic(err)
	}
	triggerRules.SetReader(platformKube)
	// Run also stops the PostgreSQL server of the tests that run on both dialects.
	code := storetest.Run(m)
	env.Stop()
	os.Exit(code)
}

// admissionIdentity is the identity store the secrets admission plugin consults; nil places every
// namespace as a workspace of its own.
var admissionIdentity atomic.Pointer[identity.Service]

type followingAdmission struct{ *secrets.Admission }

func (a followingAdmission) Validate(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	current := *a.Admission
	current.Identity = admissionIdentity.Load()
	return current.Validate(ctx, attrs, o)
}

func newServer(t *testing.T, environment string, settings map[string]string) *httptest.Server {
	t.Helper()
	api, err := service.New(httpapi.Options{
		Config:       config.FromMap(environment, settings),
		Kube:         kube,
		PlatformKube: platformKube,
		Ready:        func(ctx context.Context) error { return env.Server().Ready(ctx) },
	})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)
	return server
}

func devServer(t *testing.T) *httptest.Server {
	return newServer(t, config.Testing, map[string]string{"Platform:Authentication:Mode": "Development"})
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	// raw is the body as it came.
	raw string
}

func call(t testing.TB, server *httptest.Server, method, path, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, server.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: string(data)}
	// Only JSON is decoded: a stream of server-sent events or an artifact's bytes is read to its end.
	if len(data) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(data, &out.body); err != nil {
			t.Fatalf("%s %s: body is not JSON: %s", method, path, data)
		}
	}
	return out
}

func agentBody(name, displayName string) string {
	return `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"` + name + `","tags":{"team":"support"}},` +
		`"definition":{"displayName":"` + displayName + `","instructions":"Triage requests"}}`
}

// invalidBody is a body the API refuses with 422, and the location of the field at fault.
type invalidBody struct {
	body, location string
}

// expectFieldErrors posts each body to path and expects 422 with the field's location.
func expectFieldErrors(t *testing.T, server *httptest.Server, path string, cases map[string]invalidBody) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := call(t, server, http.MethodPost, path, tc.body)
			expectProblem(g, r, http.StatusUnprocessableEntity)
			g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", tc.location)))
		})
	}
}

func expectProblem(g Gomega, r response, status int) {
	g.ExpectWithOffset(1, r.status).To(Equal(status), "body: %v", r.body)
	g.ExpectWithOffset(1, r.header.Get("Content-Type")).To(Equal("application/problem+json"))
	g.ExpectWithOffset(1, r.body).To(HaveKeyWithValue("status", BeNumerically("==", status)))
	g.ExpectWithOffset(1, r.body).To(HaveKey("title"))
}

// expectWritesNeedTheCurrentETag checks that replace and delete of path refuse a missing (428)
// and a stale (412) If-Match, replaces the object with body, then deletes it. first is the ETag
// as created; the answer is the replace's.
func expectWritesNeedTheCurrentETag(t *testing.T, server *httptest.Server, path, first, body string) response {
	t.Helper()
	g := NewWithT(t)
	expectProblem(g, call(t, server, http.MethodPut, path, body), http.StatusPreconditionRequired)
	replaced := call(t, server, http.MethodPut, path, body, "If-Match", first)
	g.Expect(replaced.status).To(Equal(http.StatusOK), "%v", replaced.body)
	g.Expect(replaced.header.Get("ETag")).NotTo(Equal(first), "a write returns the new ETag")
	expectProblem(g, call(t, server, http.MethodPut, path, body, "If-Match", first), http.StatusPreconditionFailed)
	expectProblem(g, call(t, server, http.MethodDelete, path, ""), http.StatusPreconditionRequired)
	expectProblem(g, call(t, server, http.MethodDelete, path, "", "If-Match", first), http.StatusPreconditionFailed)
	g.Expect(call(t, server, http.MethodDelete, path, "", "If-Match", replaced.header.Get("ETag")).status).To(Equal(http.StatusNoContent))
	expectProblem(g, call(t, server, http.MethodGet, path, ""), http.StatusNotFound)
	return replaced
}

func TestAgentWritesNeedTheCurrentETag(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)

	created := call(t, server, http.MethodPost, "/api/agents", agentBody("etag-agent", "First"))
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
	first := created.header.Get("ETag")
	g.Expect(first).To(MatchRegexp(`^"\d+"$`))
	g.Expect(created.body).To(HaveKeyWithValue("apiVersion", "platform/v1"))
	g.Expect(created.body["metadata"]).To(HaveKeyWithValue("tags", HaveKeyWithValue("team", "support")))

	read := call(t, server, http.MethodGet, "/api/agents/etag-agent", "")
	g.Expect(read.status).To(Equal(http.StatusOK))
	g.Expect(read.header.Get("ETag")).To(Equal(first))

	expectProblem(g, call(t, server, http.MethodPut, "/api/agents/etag-agent", agentBody("etag-agent", "Second")), http.StatusPreconditionRequired)

	replaced := call(t, server, http.MethodPut, "/api/agents/etag-agent", agentBody("etag-agent", "Second"), "If-Match", first)
	g.Expect(replaced.status).To(Equal(http.StatusOK), "%v", replaced.body)
	second := replaced.header.Get("ETag")
	g.Expect(second).NotTo(Equal(first), "a write returns the new ETag")
	g.Expect(replaced.body["definition"]).To(HaveKeyWithValue("displayName", "Second"))

	stale := call(t, server, http.MethodPut, "/api/agents/etag-agent", agentBody("etag-agent", "Third"), "If-Match", first)
	expectProblem(g, stale, http.StatusPreconditionFailed)

	again := call(t, server, http.MethodPut, "/api/agents/etag-agent", agentBody("etag-agent", "Second"), "If-Match", second)
	g.Expect(again.status).To(Equal(http.StatusOK))
	g.Expect(again.header.Get("ETag")).To(Equal(second), "PUT is idempotent")

	expectProblem(g, call(t, server, http.MethodDelete, "/api/agents/etag-agent", ""), http.StatusPreconditionRequired)
	expectProblem(g, call(t, server, http.MethodDelete, "/api/agents/etag-agent", "", "If-Match", first), http.StatusPreconditionFailed)
	deleted := call(t, server, http.MethodDelete, "/api/agents/etag-agent", "", "If-Match", second)
	g.Expect(deleted.status).To(Equal(http.StatusNoContent))
	expectProblem(g, call(t, server, http.MethodGet, "/api/agents/etag-agent", ""), http.StatusNotFound)
}

func TestInvalidAgentsAreRefusedWithTheirFieldPaths(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	expectFieldErrors(t, server, "/api/agents", map[string]invalidBody{
		"a model profile is named by name or resourceId, not both": {
			body:     `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"both"},"definition":{"modelProfile":{"name":"a","resourceId":"b"}}}`,
			location: "body.definition.modelProfile",
		},
		"a name follows the DNS subdomain rule": {
			body:     `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"Not_Valid"},"definition":{}}`,
			location: "body.metadata.name",
		},
		"an unknown field is refused": {
			body:     `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"x"},"definition":{"colour":"red"}}`,
			location: "body.definition.colour",
		},
		"the apiVersion is the platform's": {
			body:     `{"apiVersion":"apps/v1","kind":"Agent","metadata":{"name":"x"},"definition":{}}`,
			location: "body.apiVersion",
		},
	})
	// Nothing was half-created.
	list := call(t, server, http.MethodGet, "/api/agents", "")
	g.Expect(list.body["items"]).NotTo(ContainElement(HaveKeyWithValue("metadata", HaveKeyWithValue("name", "both"))))
}

func TestAnUnknownWorkspaceIsNotFound(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	expectProblem(g, call(t, server, http.MethodGet, "/api/agents", "", "X-Platform-Workspace", "nowhere"), http.StatusNotFound)
	expectProblem(g, call(t, server, http.MethodPost, "/api/agents", agentBody("a", "A"), "X-Platform-Workspace", "nowhere"), http.StatusNotFound)
	for _, path := range []string{
		"/api/flows", "/api/flows/a", "/api/flows/a/versions", "/api/flows/a/versions/1.0.0",
		"/api/modelproviders", "/api/modelproviders/a", "/api/modelproviders/a/status", "/api/modelproviders/a/models", "/api/modelproviders/a/usages",
		"/api/models", "/api/modelprofiles", "/api/modelprofiles/a", "/api/modelprofiles/a/resolution", "/api/modelprofiles/a/usages",
		"/api/agents/a/model", "/api/deployments/a",
	} {
		r := call(t, server, http.MethodGet, path, "", "X-Platform-Workspace", "nowhere")
		expectProblem(g, r, http.StatusNotFound)
		g.Expect(r.body["detail"]).To(Equal(`workspace "nowhere" not found`), path)
	}
	expectProblem(g, call(t, server, http.MethodPost, "/api/flows/a/versions", `{"version":"1.0.0"}`, "X-Platform-Workspace", "nowhere"), http.StatusNotFound)
	expectProblem(g, call(t, server, http.MethodDelete, "/api/modelproviders/a", "", "X-Platform-Workspace", "nowhere", "If-Match", `"1"`), http.StatusNotFound)
}

func TestTheWorkspaceHeaderSelectsTheNamespace(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	created := call(t, server, http.MethodPost, "/api/agents", agentBody("in-system", "S"), "X-Platform-Workspace", "kube-public")
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
	expectProblem(g, call(t, server, http.MethodGet, "/api/agents/in-system", ""), http.StatusNotFound)
	g.Expect(call(t, server, http.MethodGet, "/api/agents/in-system", "", "X-Platform-Workspace", "kube-public").status).To(Equal(http.StatusOK))
}

func TestUnknownAPIRoutesAnswerProblemDetails(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	expectProblem(g, call(t, server, http.MethodGet, "/api/no-such-route", ""), http.StatusNotFound)
}

func TestCallersWithoutCredentialsGet401OutsideDevelopmentMode(t *testing.T) {
	g := NewWithT(t)
	server := newServer(t, config.Production, nil)
	expectProblem(g, call(t, server, http.MethodGet, "/api/agents", ""), http.StatusUnauthorized)
	g.Expect(call(t, server, http.MethodGet, "/livez", "").status).To(Equal(http.StatusOK))
	g.Expect(call(t, server, http.MethodGet, "/readyz", "").status).To(Equal(http.StatusOK))
}

func TestDevelopmentAndDisabledModesRefuseToStartOutsideDevelopmentOrTesting(t *testing.T) {
	for _, mode := range []string{"Development", "Disabled"} {
		_, err := service.New(httpapi.Options{
			Config: config.FromMap(config.Production, map[string]string{"Platform:Authentication:Mode": mode}),
			Kube:   kube, Ready: func(context.Context) error { return nil },
		})
		if err == nil || !strings.Contains(err.Error(), "PLATFORM_ENVIRONMENT") {
			t.Fatalf("mode %s in Production: %v", mode, err)
		}
	}
}

func TestTheOpenAPIDocumentIsOpenAPI31WithStableUniqueOperations(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	resp, err := http.Get(server.URL + "/openapi/v1.json")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var doc struct {
		OpenAPI    string                               `json:"openapi"`
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			SecuritySchemes map[string]any `json:"securitySchemes"`
		} `json:"components"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&doc)).To(Succeed())
	g.Expect(doc.OpenAPI).To(HavePrefix("3.1"))
	g.Expect(doc.Components.SecuritySchemes).To(HaveKey("bearer"))
	g.Expect(doc.Components.SecuritySchemes).To(HaveKey("cookie"))

	seen := map[string]bool{}
	for path, item := range doc.Paths {
		for method, op := range item {
			id, _ := op["operationId"].(string)
			g.Expect(id).NotTo(BeEmpty(), "%s %s", method, path)
			g.Expect(seen[id]).To(BeFalse(), "operationId %s is unique", id)
			seen[id] = true
			g.Expect(op["tags"]).NotTo(BeEmpty(), "%s has a functional tag", id)
			switch {
			case id == "logout":
				g.Expect(op["security"]).To(ConsistOf(HaveKey("cookie")), "logout is for a signed-in browser")
			case strings.HasPrefix(path, "/api/auth/"):
				g.Expect(op).NotTo(HaveKey("security"), "%s is anonymous, as the spec says", id)
			case id == "redeem-extension-capability":
				g.Expect(op).NotTo(HaveKey("security"), "an extension has no identity at the platform: the one-use capability is its credential")
			case strings.HasPrefix(path, "/api/"):
				g.Expect(op["security"]).To(ContainElements(HaveKey("bearer"), HaveKey("cookie")), "%s is protected", id)
			}
		}
	}
	g.Expect(seen).To(HaveKey("list-agents"))
	g.Expect(seen).To(HaveKey("replace-agent"))
	for _, id := range []string{
		"list-agents", "get-agent", "create-agent", "replace-agent", "delete-agent", "get-agent-model",
		"list-flows", "get-flow", "create-flow", "replace-flow", "delete-flow",
		"publish-flow-version", "list-flow-versions", "get-flow-version",
		"list-model-providers", "get-model-provider", "create-model-provider", "replace-model-provider", "delete-model-provider",
		"get-model-provider-status", "list-model-provider-models", "list-model-provider-usages",
		"list-models",
		"list-model-profiles", "get-model-profile", "create-model-profile", "replace-model-profile", "delete-model-profile",
		"get-model-profile-resolution", "list-model-profile-usages",
		"get-deployment",
		"get-bootstrap-state", "bootstrap", "login-local", "logout",
	} {
		g.Expect(seen).To(HaveKey(id))
	}
}

func TestSwaggerIsServedOnlyInDevelopmentOrTestingAndWorksOffline(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	resp, err := http.Get(server.URL + "/swagger")
	g.Expect(err).NotTo(HaveOccurred())
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(string(page)).To(ContainSubstring("/openapi/v1.json"))
	g.Expect(string(page)).NotTo(MatchRegexp(`(src|href)="https?://`), "every asset is served by the platform itself")
	for _, asset := range []string{"/swagger/swagger-ui-bundle.js", "/swagger/swagger-ui.css"} {
		resp, err := http.Get(server.URL + asset)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), asset)
	}

	resp, err = http.Get(newServer(t, config.Production, nil).URL + "/swagger")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
}

// Versioning 4 and the endpoint table: the contract document is served in Development or Testing
// only; everyone else prints it with `platform openapi`, which gives the same document.
func TestTheOpenAPIDocumentIsServedOnlyInDevelopmentOrTestingAndPrintedEverywhere(t *testing.T) {
	g := NewWithT(t)
	for _, path := range []string{"/openapi/v1.json", "/openapi/v1.yaml"} {
		resp, err := http.Get(newServer(t, config.Production, nil).URL + path)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound), path)
	}

	resp, err := http.Get(devServer(t).URL + "/openapi/v1.json")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var served map[string]any
	g.Expect(json.NewDecoder(resp.Body).Decode(&served)).To(Succeed())

	doc, err := service.OpenAPIDocument()
	g.Expect(err).NotTo(HaveOccurred())
	var printed map[string]any
	g.Expect(json.Unmarshal(doc, &printed)).To(Succeed())
	g.Expect(printed["paths"]).To(Equal(served["paths"]), "the printed document describes the served routes")
	g.Expect(printed["components"]).To(Equal(served["components"]))
}
