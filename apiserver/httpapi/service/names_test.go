package service_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// badNames are path parameter values that no object can be named and that a path or a client
// treats specially: dot segments, plain and percent-encoded, an encoded slash, '%', NUL, unicode.
var badNames = []string{".", "..", "%2E", "%2e%2E", "a%2Fb", "%2F", "..%2F..", "a%5Cb", "%25", "a%00b", "%C3%A9"}

// Every route with a path parameter answers a name that no object can have with a 4xx Problem
// Details, never a 5xx or a redirect, even for a Platform administrator, who passes every
// authorization check.
func TestNoNameInAPathAnswersA5xxOnAnyRoute(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		env := newIdentityEnv(t, db)
		param := regexp.MustCompile(`\{[^}]+\}`)
		var routes []string
		for path, item := range env.api.OpenAPI().Paths {
			if !strings.Contains(path, "{") {
				continue
			}
			for method, op := range map[string]*huma.Operation{http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodPut: item.Put,
				http.MethodPatch: item.Patch, http.MethodDelete: item.Delete} {
				if op != nil {
					routes = append(routes, method+" "+path)
				}
			}
		}
		sort.Strings(routes)
		g.Expect(len(routes)).To(BeNumerically(">", 20))
		var wrong []string
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, route := range routes {
			method, path, _ := strings.Cut(route, " ")
			for _, name := range badNames {
				target := param.ReplaceAllString(path, name)
				req, err := http.NewRequest(method, env.server.URL+target, strings.NewReader("{}"))
				g.Expect(err).NotTo(HaveOccurred())
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("If-Match", `"1"`)
				req.AddCookie(env.adminCookie)
				resp, err := noRedirect.Do(req)
				g.Expect(err).NotTo(HaveOccurred())
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode < 400 || resp.StatusCode >= 500 || resp.Header.Get("Content-Type") != "application/problem+json" {
					wrong = append(wrong, fmt.Sprintf("%s %s: %d %s %.120s", method, target, resp.StatusCode, resp.Header.Get("Content-Type"), body))
				}
			}
		}
		g.Expect(wrong).To(BeEmpty())
	})
}

// The answers that net/http writes itself are Problem Details too: an unknown path outside /api,
// and a method the route does not have (405, naming the allowed ones).
func TestUnknownPathsAndMethodsAnswerProblemDetails(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		server := workServer(t, db)
		for _, c := range []struct {
			method, path string
			status       int
		}{
			{http.MethodGet, "/no-such-page", http.StatusNotFound},
			{http.MethodGet, "/api/no-such-route", http.StatusNotFound},
			{http.MethodDelete, "/livez", http.StatusMethodNotAllowed},
			{http.MethodPut, "/api/work/workitems", http.StatusMethodNotAllowed},
		} {
			req, err := http.NewRequest(c.method, server.URL+c.path, nil)
			g.Expect(err).NotTo(HaveOccurred())
			resp, err := http.DefaultClient.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			g.Expect(resp.StatusCode).To(Equal(c.status), "%s %s: %s", c.method, c.path, body)
			g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/problem+json"), "%s %s: %s", c.method, c.path, body)
			var problem map[string]any
			g.Expect(json.Unmarshal(body, &problem)).To(Succeed())
			g.Expect(problem).To(HaveKeyWithValue("status", BeNumerically("==", c.status)))
			if c.status == http.StatusMethodNotAllowed {
				g.Expect(resp.Header.Get("Allow")).NotTo(BeEmpty())
				g.Expect(problem["detail"]).To(ContainSubstring("allowed"))
			}
		}
	})
}

// A Problem's detail is a sentence for people: it does not end with the name of the error kind
// that chose its status (": conflict").
func TestProblemDetailsEndWithoutTheErrorKind(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		server := workServer(t, db)
		flow := reportFlowSetup(t, server)
		runID := field(submitWork(t, server, `{"name":"`+flow+`"}`).body, "flowRun", "id").(string)
		g.Expect(call(t, server, http.MethodPost, "/api/flowRuns/"+runID+"/cancel", "").status).To(Equal(http.StatusOK))
		again := call(t, server, http.MethodPost, "/api/flowRuns/"+runID+"/cancel", "")
		expectProblem(g, again, http.StatusConflict)
		g.Expect(again.body["detail"]).To(Equal("the run is already Cancelled"))
	})
}
