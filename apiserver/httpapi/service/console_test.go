package service_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

var consoleAsset = regexp.MustCompile(`src="(/console/assets/[^"]+\.js)"`)

// consoleAppPages are the paths of the pages the Console app draws, read from its router (each
// :parameter given a value), so that a page added to the app without a server route fails.
func consoleAppPages(t *testing.T) []string {
	t.Helper()
	app, err := os.ReadFile("../../../workplace/web/src/console/App.tsx")
	if err != nil {
		t.Fatal(err)
	}
	var pages []string
	for _, m := range regexp.MustCompile(`p === "(/[^"]*)"|match\("(/[^"]+)", p\)`).FindAllStringSubmatch(string(app), -1) {
		pages = append(pages, regexp.MustCompile(`:[A-Za-z]+`).ReplaceAllString(m[1]+m[2], "x1"))
	}
	if len(pages) < 20 {
		t.Fatalf("the Console's router was not read: %v", pages)
	}
	return pages
}

func TestConsolePagesNeedASignInAndComeBackToThePageAskedFor(t *testing.T) {
	g := NewWithT(t)
	server, _, _ := localServer(t, nil)
	b := newBrowser(t, server.URL)
	ws := uniqueWorkspace("console")

	// The first administrator is sent on to the Workplace (through /workplace/...) when asked.
	form := b.get("/bootstrap?returnUrl=%2Fworkplace%2F")
	g.Expect(form.html).To(ContainSubstring(`name="returnUrl" value="/workplace/"`))
	noFollow := &http.Client{Jar: b.client.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fields := url.Values{"username": {adminUser}, "displayName": {"Grace"}, "password": {adminPassword}, "confirmPassword": {adminPassword},
		"tenantName": {"Navy"}, "workspaceName": {ws}, "returnUrl": {"/workplace/"}, "_antiforgery": {antiforgeryToken.FindStringSubmatch(form.html)[1]}}
	req, _ := http.NewRequest(http.MethodPost, server.URL+"/bootstrap", strings.NewReader(fields.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", server.URL)
	resp, err := noFollow.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
	g.Expect(resp.Header.Get("Location")).To(Equal("/workplace/"))

	for path, want := range map[string]string{
		"/workplace/w/" + ws + "/d/home?c=1": "http://127.0.0.1:5180/w/" + ws + "/d/home?c=1",
		"/workplace/":                        "http://127.0.0.1:5180/",
		"/workplace/%2F%2Fevil.example/x":    "http://127.0.0.1:5180/",
	} {
		resp, err := noFollow.Get(server.URL + path)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusSeeOther), path)
		g.Expect(resp.Header.Get("Location")).To(Equal(want), "only the configured Workplace origin is a target: %s", path)
	}

	// Signed in, every page the Console app draws is served as the app (not as its "not found"
	// page, with 404); its assets are served under /console/.
	for _, path := range consoleAppPages(t) {
		p := b.get(path)
		g.Expect(p.status).To(Equal(http.StatusOK), path)
		g.Expect(p.html).To(MatchRegexp(consoleAsset.String()), path)
	}
	asset := consoleAsset.FindStringSubmatch(b.get("/tasks").html)[1]
	g.Expect(b.get(asset).status).To(Equal(http.StatusOK))
	g.Expect(b.get("/console/index.html").status).To(Equal(http.StatusNotFound))

	// Another browser, not signed in, is sent to sign in first and back to the page.
	resp, err = (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(server.URL + "/cleanup")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
	g.Expect(resp.Header.Get("Location")).To(Equal("/login?returnUrl=%2Fcleanup"))
}

func TestAnUnknownPathIsTheConsolesNotFoundPageForABrowserAndProblemDetailsForOtherCallers(t *testing.T) {
	g := NewWithT(t)
	server, _, _ := localServer(t, nil)
	b := newBrowser(t, server.URL)
	form := b.get("/bootstrap")
	b.submit(form, "/bootstrap", url.Values{"username": {adminUser}, "password": {adminPassword}, "confirmPassword": {adminPassword},
		"tenantName": {"Navy"}, "workspaceName": {uniqueWorkspace("notfound")}})
	get := func(path, accept string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodGet, server.URL+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := b.client.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}
	for name, tc := range map[string]struct {
		path, accept, contentType string
		app                       bool
	}{
		"a browser's page is the app, which draws its not-found page": {path: "/no/such/page", accept: "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8", contentType: "text/html", app: true},
		"an API client gets Problem Details":                          {path: "/no/such/page", accept: "application/json", contentType: "application/problem+json"},
		"a caller without Accept gets Problem Details":                {path: "/no/such/page", contentType: "application/problem+json"},
		"an unknown API route is never the app":                       {path: "/api/no-such-route", accept: "text/html", contentType: "application/problem+json"},
	} {
		status, contentType, body := get(tc.path, tc.accept)
		g.Expect(status).To(Equal(http.StatusNotFound), name)
		g.Expect(contentType).To(HavePrefix(tc.contentType), name)
		if tc.app {
			g.Expect(body).To(MatchRegexp(consoleAsset.String()), name)
		} else {
			g.Expect(body).NotTo(MatchRegexp(consoleAsset.String()), name)
		}
	}
}
