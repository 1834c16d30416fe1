package service_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
)

// oddValues are values of path segments and query parameters that no object can be named and
// that went wrong before: '%' (the kube client refuses it with an error of its own), NUL, dot
// segments and slashes, very long names, unicode, spaces, capitals, invalid UTF-8.
var oddValues = []string{
	"%", "%00", "\x00", "a\x00b", "..", "../wsb", "a/b", "a%2Fb", "a\\b", "a%b",
	strings.Repeat("a", 254), strings.Repeat("a", 4096), "é", "名前", "a b", "Agent", "-a", "a.", "\xff\xfe", "a?b#c", "default",
}

// route is an operation of the OpenAPI document: method, path template and the names of its
// string query parameters.
type route struct {
	method, path string
	query        []string
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// routesOf lists the operations of the OpenAPI document that take a path parameter or a query
// value, in a stable order.
func routesOf(api huma.API) []route {
	var out []route
	for path, item := range api.OpenAPI().Paths {
		for method, op := range map[string]*huma.Operation{http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodPut: item.Put,
			http.MethodPatch: item.Patch, http.MethodDelete: item.Delete} {
			if op == nil {
				continue
			}
			r := route{method: method, path: path}
			for _, p := range op.Parameters {
				// Numbers and flags answer 422 for any text; a number could make a request wait.
				if p.In == "query" && p.Schema != nil && p.Schema.Type == "string" {
					r.query = append(r.query, p.Name)
				}
			}
			if strings.Contains(path, "{") || len(r.query) > 0 {
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].method+out[i].path < out[j].method+out[j].path })
	return out
}

// target is r's URL with every path parameter and string query parameter set to value, and
// ?namespace= too (the resource namespace of the operations that take one).
func (r route) target(value string) string {
	query := url.Values{"namespace": {value}}
	for _, name := range r.query {
		query.Set(name, value)
	}
	return pathParam.ReplaceAllLiteralString(r.path, url.PathEscape(value)) + "?" + query.Encode()
}

// No value of a path segment or a query parameter makes any route of the OpenAPI document answer
// a 5xx: the platform administrator (who passes every authorization check) reads, writes and
// deletes with it and gets Problem Details of 4xx. The seed corpus runs in the normal suite;
// `go test -fuzz FuzzPathAndQueryValuesNeverAnswerA5xx` searches further.
func FuzzPathAndQueryValuesNeverAnswerA5xx(f *testing.F) {
	for _, v := range oddValues {
		f.Add(v)
	}
	db, err := store.Open(context.Background(), store.Options{DataDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	env := newIdentityEnv(f, db)
	routes := routesOf(env.api)
	if len(routes) < 100 {
		f.Fatalf("the OpenAPI document lists only %d routes with parameters", len(routes))
	}
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	f.Fuzz(func(t *testing.T, value string) {
		for _, r := range routes {
			target := r.target(value)
			req, err := http.NewRequest(r.method, env.server.URL+target, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("If-Match", `"1"`)
			req.Header.Set("X-Platform-Workspace", env.ws.RouteName)
			req.AddCookie(env.adminCookie)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", r.method, target, err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Errorf("%s %.200s: %d %s", r.method, target, resp.StatusCode, body)
			}
		}
	})
}

// The named inputs of the issue answer Problem Details on a sample of routes: 404 for a path
// segment that no object, namespace or workspace can be named, 400 for such a ?namespace= or
// workspace header; never a 5xx.
func TestNamesTheKubeAPICouldNotHoldAnswerNotFoundOrBadRequest(t *testing.T) {
	onSQLite(t, func(t *testing.T, db *store.Store) {
		env := newIdentityEnv(t, db)
		ws := "/api/workspaces/" + env.ws.RouteName
		for name, c := range map[string]struct {
			method, path string
			headers      []string
			status       int
		}{
			"a percent sign as an Agent's name":                   {http.MethodGet, "/api/agents/%25", nil, http.StatusNotFound},
			"a percent sign as a Flow's name, deleted":            {http.MethodDelete, "/api/flows/%25", nil, http.StatusNotFound},
			"a percent sign as an Entry's name, published":        {http.MethodPost, "/api/entries/%25/publish", nil, http.StatusNotFound},
			"a percent sign as a model provider's name, tested":   {http.MethodPost, "/api/modelproviders/%25/test", nil, http.StatusNotFound},
			"a percent sign as a tool provider's name, refreshed": {http.MethodPost, "/api/toolproviders/%25/tools/refresh", nil, http.StatusNotFound},
			"a percent sign as a Tool's name, enabled":            {http.MethodPost, "/api/tools/%25/enable", nil, http.StatusNotFound},
			"a percent sign as a Trigger's name, run":             {http.MethodPost, "/api/triggers/%25/run", nil, http.StatusNotFound},
			"a percent sign as a Secret's name":                   {http.MethodGet, "/api/secrets/%25", nil, http.StatusNotFound},
			"a percent sign as a Vault's name":                    {http.MethodGet, "/api/vaults/%25", nil, http.StatusNotFound},
			"a percent sign as a Dashboard's name":                {http.MethodGet, "/api/dashboards/%25", nil, http.StatusNotFound},
			"a percent sign as a resource namespace":              {http.MethodGet, "/api/namespaces/%25/triggers", nil, http.StatusNotFound},
			"a percent sign as a name in a resource namespace":    {http.MethodGet, "/api/namespaces/default/entries/%25", nil, http.StatusNotFound},
			"a percent sign as a workspace":                       {http.MethodGet, "/api/workspaces/%25/interactions", nil, http.StatusNotFound},
			"a NUL in a name":                                     {http.MethodGet, "/api/agents/a%00b", nil, http.StatusNotFound},
			"a NUL in an id":                                      {http.MethodGet, "/api/work/workitems/a%00b", nil, http.StatusNotFound},
			"a name longer than any DNS subdomain":                {http.MethodGet, "/api/agents/" + strings.Repeat("a", 254), nil, http.StatusNotFound},
			"unicode in a name":                                   {http.MethodGet, "/api/agents/%E5%90%8D%E5%89%8D", nil, http.StatusNotFound},
			"a percent sign as the workspace header":              {http.MethodGet, "/api/agents", []string{"X-Platform-Workspace", "%"}, http.StatusNotFound},
			"a percent sign as ?namespace= on opening":            {http.MethodPost, ws + "/entries/report/interactions?namespace=%25", nil, http.StatusBadRequest},
			"a NUL as ?namespace= on opening":                     {http.MethodPost, ws + "/entries/report/interactions?namespace=%00", nil, http.StatusBadRequest},
			"a dot segment as ?namespace= on opening":             {http.MethodPost, ws + "/entries/report/interactions?namespace=..", nil, http.StatusBadRequest},
			"another workspace's path as ?namespace= on opening":  {http.MethodPost, ws + "/entries/report/interactions?namespace=../wsb", nil, http.StatusBadRequest},
			"a slash in ?namespace= on opening":                   {http.MethodPost, ws + "/entries/report/interactions?namespace=a/b", nil, http.StatusBadRequest},
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				r := env.do(env.adminCookie, c.method, c.path, `{"input":{}}`, append([]string{"If-Match", `"1"`}, c.headers...)...)
				g.Expect(r.status).To(Equal(c.status), "%s", r.raw)
				g.Expect(r.header.Get("Content-Type")).To(Equal("application/problem+json"))
				g.Expect(r.body).To(HaveKeyWithValue("status", BeNumerically("==", c.status)))
				g.Expect(r.raw).NotTo(ContainSubstring("internal"))
			})
		}
	})
}

// onSQLite runs body on a fresh SQLite store: what it checks happens before any query.
func onSQLite(t *testing.T, body func(t *testing.T, db *store.Store)) {
	db, err := store.Open(context.Background(), store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	body(t, db)
}
