package service_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/internal/config"
)

// HTTP payload capture is for Development only: enabled in any other environment, the service
// does not start, and says why in one line.
func TestPayloadCaptureEnabledOutsideDevelopmentRefusesToStart(t *testing.T) {
	for _, environment := range []string{config.Production, config.Testing} {
		_, err := service.New(httpapi.Options{
			Config: config.FromMap(environment, map[string]string{httpapi.PayloadCaptureEnabledSetting: "true"}),
			Kube:   kube, Ready: func(context.Context) error { return nil },
		})
		if err == nil || !strings.Contains(err.Error(), httpapi.PayloadCaptureEnabledSetting) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %v", environment, err)
		}
	}
	_, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Development, map[string]string{httpapi.PayloadCaptureEnabledSetting: "true", httpapi.PayloadCaptureMaxLengthSetting: "0"}),
		Kube:   kube, Ready: func(context.Context) error { return nil },
	})
	if err == nil || !strings.Contains(err.Error(), httpapi.PayloadCaptureMaxLengthSetting) {
		t.Fatalf("a MaximumBodyLength of 0: %v", err)
	}
}

// Captured exchanges are bounded by MaximumBodyLength, responses are kept only when asked, and
// no password, token, resume token, credential header or Secret value is ever kept.
func TestPayloadCaptureKeepsBoundedRedactedExchangesForPlatformAdministrators(t *testing.T) {
	g := NewWithT(t)
	off := devServer(t)
	g.Expect(call(t, off, http.MethodGet, "/api/diagnostics/requests", "").status).To(Equal(http.StatusNotFound), "no capture unless enabled")

	settings := func(responses string) map[string]string {
		return map[string]string{"Platform:Authentication:Mode": "Development", httpapi.PayloadCaptureEnabledSetting: "true",
			httpapi.PayloadCaptureMaxLengthSetting: "120", httpapi.PayloadCaptureResponsesSetting: responses}
	}
	server := newServer(t, config.Development, settings("true"))
	ws := routingWorkspace(t)
	in := func(method, path, body string, headers ...string) response {
		return call(t, server, method, path, body, append([]string{httpapi.WorkspaceHeader, ws}, headers...)...)
	}
	long := strings.Repeat("a long description ", 40)
	in(http.MethodPost, "/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"capture"},"definition":{"displayName":"`+long+`"}}`)
	in(http.MethodPost, "/api/auth/login", `{"username":"ada","password":"hunter2-password"}`)
	in(http.MethodPost, "/api/workspaces/"+ws+"/interactions/x/pending-actions/y/responses", `{"resumeToken":"resume-token-value","value":"table"}`)
	in(http.MethodPut, "/api/secrets/openai/value", `{"value":"sk-secret-value"}`)
	in(http.MethodGet, "/api/agents?access_token=query-token-value", "", "Authorization", "Bearer header-token-value")
	// A body cut by MaximumBodyLength in the middle of a token is redacted all the same.
	in(http.MethodPost, "/api/agents", `{"padding":"`+strings.Repeat("x", 90)+`","refreshToken":"cut-token-value-that-goes-on-and-on"}`)

	listed := in(http.MethodGet, "/api/diagnostics/requests?take=200", "")
	g.Expect(listed.status).To(Equal(http.StatusOK), listed.raw)
	for _, secret := range []string{"hunter2-password", "resume-token-value", "sk-secret-value", "query-token-value", "header-token-value", "cut-token", "cut-to"} {
		g.Expect(listed.raw).NotTo(ContainSubstring(secret))
	}
	items := listed.body["items"].([]any)
	g.Expect(len(items)).To(BeNumerically(">=", 6))
	byPath := map[string]map[string]any{}
	for _, item := range items {
		e := item.(map[string]any)
		body, _ := e["requestBody"].(string)
		g.Expect(len(body)).To(BeNumerically("<=", 120), "bounded by MaximumBodyLength")
		if _, seen := byPath[e["method"].(string)+" "+e["path"].(string)]; !seen {
			byPath[e["method"].(string)+" "+e["path"].(string)] = e
		}
	}
	g.Expect(byPath).To(HaveKey("GET /api/agents"))
	get := byPath["GET /api/agents"]
	g.Expect(get["requestHeaders"]).To(HaveKeyWithValue("Authorization", "[redacted]"))
	g.Expect(get["query"]).To(ContainSubstring("access_token=%5Bredacted%5D"))
	g.Expect(get["responseBody"]).To(ContainSubstring(`"items"`), "responses are kept when CaptureResponses is on")
	answer := byPath["POST /api/workspaces/"+ws+"/interactions/x/pending-actions/y/responses"]
	g.Expect(answer["requestBody"]).To(ContainSubstring(`"value":"table"`), "an answer's value is not a Secret's")
	g.Expect(byPath["PUT /api/secrets/openai/value"]["requestBody"]).To(ContainSubstring(`"value":"[redacted]"`))

	quiet := newServer(t, config.Development, settings("false"))
	call(t, quiet, http.MethodGet, "/api/agents", "", httpapi.WorkspaceHeader, ws)
	first := call(t, quiet, http.MethodGet, "/api/diagnostics/requests", "").body["items"].([]any)[0].(map[string]any)
	g.Expect(first).NotTo(HaveKey("responseBody"), "responses are not captured by default")
	g.Expect(first).To(HaveKeyWithValue("status", 200.0))
}
