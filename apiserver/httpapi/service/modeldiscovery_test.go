package service_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/provider/openaitest"
	"platform.dev/platform/internal/config"
)

const discoveryKey = "sk-discovery-secret"

// discoveryServer is a service API whose provider <name> has discoveryKey configured and answers
// within a second.
func discoveryServer(t *testing.T, name string) *httptest.Server {
	return newServer(t, config.Testing, map[string]string{"Platform:Authentication:Mode": "Development",
		"AI:Providers:" + name + ":ApiKey": discoveryKey, "AI:Providers:" + name + ":TimeoutSeconds": "1"})
}

func providerAt(name, endpoint string) string {
	return `{"apiVersion":"platform/v1","kind":"ModelProvider","metadata":{"name":"` + name + `"},` +
		`"definition":{"type":"OpenAICompatible","endpoint":"` + endpoint + `",` +
		`"specificationOverrides":[{"modelId":"org/Model-A","specification":{"maxOutputTokens":1024,"toolCalling":true}}]}}`
}

func refreshCounts(g Gomega, r response) map[string]any {
	g.ExpectWithOffset(1, r.status).To(Equal(http.StatusOK), "%v", r.body)
	return r.body
}

func counts(created, updated, unchanged, missing, reappeared, total float64) map[string]any {
	return map[string]any{"created": created, "updated": updated, "unchanged": unchanged, "missing": missing,
		"reappeared": reappeared, "total": total}
}

func TestModelRefreshReconcilesModelsAndReportsEachCount(t *testing.T) {
	g := NewWithT(t)
	endpoint := openaitest.New()
	defer endpoint.Close()
	endpoint.APIKey, endpoint.Models = discoveryKey, []string{"org/Model-A", "small"}
	server := discoveryServer(t, "refresh-llm")
	g.Expect(call(t, server, http.MethodPost, "/api/modelproviders", providerAt("refresh-llm", endpoint.BaseURL())).status).To(Equal(http.StatusCreated))
	refresh := "/api/modelproviders/refresh-llm/models/refresh"

	g.Expect(refreshCounts(g, call(t, server, http.MethodPost, refresh, ""))).To(Equal(counts(2, 0, 0, 0, 0, 2)), "first discovery creates")
	g.Expect(refreshCounts(g, call(t, server, http.MethodPost, refresh, ""))).To(Equal(counts(0, 0, 2, 0, 0, 2)), "nothing changed")
	endpoint.Set(func(s *openaitest.Server) { s.Models = []string{"org/Model-A"} })
	g.Expect(refreshCounts(g, call(t, server, http.MethodPost, refresh, ""))).To(Equal(counts(0, 0, 1, 1, 0, 2)), "an unlisted model is missing")
	g.Expect(refreshCounts(g, call(t, server, http.MethodPost, refresh, ""))).To(Equal(counts(0, 0, 1, 1, 0, 2)), "and stays missing")
	endpoint.Set(func(s *openaitest.Server) { s.Models = []string{"org/Model-A", "small"} })
	g.Expect(refreshCounts(g, call(t, server, http.MethodPost, refresh, ""))).To(Equal(counts(0, 0, 1, 0, 1, 2)), "a listed missing model reappears")

	models := call(t, server, http.MethodGet, "/api/modelproviders/refresh-llm/models", "")
	g.Expect(models.status).To(Equal(http.StatusOK))
	var byID = map[string]map[string]any{}
	for _, item := range models.body["items"].([]any) {
		m := item.(map[string]any)
		byID[m["definition"].(map[string]any)["modelId"].(string)] = m
	}
	g.Expect(byID).To(HaveLen(2))
	status := byID["org/Model-A"]["status"].(map[string]any)
	g.Expect(status["availability"]).To(Equal("Available"))
	g.Expect(status["observedSpecification"]).To(Equal(map[string]any{"contextWindowTokens": 8192.0}))
	g.Expect(status["overrideSpecification"]).To(Equal(map[string]any{"maxOutputTokens": 1024.0, "toolCalling": true}))
	g.Expect(status["effectiveSpecification"]).To(Equal(map[string]any{"contextWindowTokens": 8192.0, "maxOutputTokens": 1024.0, "toolCalling": true}))
	g.Expect(byID["org/Model-A"]["metadata"].(map[string]any)["name"]).To(MatchRegexp(`^refresh-llm-org-model-a-[0-9a-f]{8}$`))

	providerStatus := call(t, server, http.MethodGet, "/api/modelproviders/refresh-llm/status", "")
	g.Expect(providerStatus.body["models"]).To(Equal(2.0))
	g.Expect(providerStatus.body["lastDiscoveryTime"]).NotTo(BeEmpty())
}

func TestAConnectivityTestAnswersProblemDetailsWithoutEchoingSecrets(t *testing.T) {
	cases := map[string]struct {
		setup  func(*openaitest.Server)
		status int
		detail string
	}{
		"a reachable endpoint with the right key passes": {setup: func(s *openaitest.Server) { s.APIKey = discoveryKey }, status: http.StatusOK},
		"a refused key is 502 naming the setting": {setup: func(s *openaitest.Server) { s.APIKey = "sk-another" }, status: http.StatusBadGateway,
			detail: "model provider probe-llm: model list: the endpoint answered 401 Unauthorized (invalid_api_key); check the API key, the variable AI__Providers__probe-llm__ApiKey"},
		"a slow endpoint is 504": {setup: func(s *openaitest.Server) { s.Delay = 3 * time.Second }, status: http.StatusGatewayTimeout,
			detail: "model provider probe-llm: model list: the endpoint did not answer within 1s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			endpoint := openaitest.New()
			defer endpoint.Close()
			tc.setup(endpoint)
			server := discoveryServer(t, "probe-llm")
			created := call(t, server, http.MethodPost, "/api/modelproviders", providerAt("probe-llm", endpoint.BaseURL()))
			g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
			defer call(t, server, http.MethodDelete, "/api/modelproviders/probe-llm", "", "If-Match", created.header.Get("ETag"))

			r := call(t, server, http.MethodPost, "/api/modelproviders/probe-llm/test", "")
			g.Expect(r.status).To(Equal(tc.status), "%v", r.body)
			raw, _ := json.Marshal(r.body)
			g.Expect(string(raw)).NotTo(ContainSubstring("sk-"), "never a key, not even the one the endpoint echoes")
			if tc.status == http.StatusOK {
				g.Expect(r.body).To(HaveKeyWithValue("reachable", true))
				g.Expect(r.body).To(HaveKeyWithValue("models", 1.0))
				return
			}
			g.Expect(r.header.Get("Content-Type")).To(Equal("application/problem+json"))
			g.Expect(r.body["detail"]).To(Equal(tc.detail))
		})
	}
}

func TestModelDiscoveryOfAnUnknownProviderIsNotFound(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	for _, path := range []string{"/api/modelproviders/no-such-llm/models/refresh", "/api/modelproviders/no-such-llm/test"} {
		r := call(t, server, http.MethodPost, path, "")
		g.Expect(r.status).To(Equal(http.StatusNotFound), path)
		g.Expect(r.header.Get("Content-Type")).To(Equal("application/problem+json"))
	}
}
