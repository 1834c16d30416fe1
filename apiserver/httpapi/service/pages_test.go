package service_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
)

// browser is an HTTP client with a cookie jar that follows redirects, like a browser.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, client: &http.Client{Jar: jar}}
}

type page struct {
	status int
	url    string
	html   string
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, url: resp.Request.URL.RequestURI(), html: string(body)}
}

func (b *browser) get(path string) page {
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	return b.do(req)
}

// submit posts the form fields to action with the antiforgery token of the page, as the page's
// form would.
func (b *browser) submit(from page, action string, fields url.Values) page {
	b.t.Helper()
	if m := antiforgeryToken.FindStringSubmatch(from.html); m != nil {
		fields.Set("_antiforgery", m[1])
	}
	req, _ := http.NewRequest(http.MethodPost, b.base+action, strings.NewReader(fields.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	return b.do(req)
}

var antiforgeryToken = regexp.MustCompile(`name="_antiforgery" value="([^"]+)"`)

func TestPagesBootstrapThenChangePasswordSignOutAndSignInAgain(t *testing.T) {
	g := NewWithT(t)
	server, _, _ := localServer(t, nil)
	b := newBrowser(t, server.URL)
	ws := uniqueWorkspace("pages")

	form := b.get("/bootstrap")
	g.Expect(form.status).To(Equal(http.StatusOK))
	g.Expect(form.html).To(ContainSubstring(`name="workspaceName"`))
	g.Expect(form.html).To(ContainSubstring("the kube namespace of the same name"), "the page says which namespace a workspace is")

	weak := b.submit(form, "/bootstrap", url.Values{"username": {adminUser}, "password": {"short"}, "confirmPassword": {"short"},
		"tenantName": {"Navy"}, "workspaceName": {ws}})
	g.Expect(weak.status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(weak.html).To(ContainSubstring("at least 12 characters"))
	g.Expect(weak.html).To(ContainSubstring(`value="Navy"`), "what was typed is kept, except passwords")

	home := b.submit(weak, "/bootstrap", url.Values{"username": {adminUser}, "displayName": {"Grace"}, "password": {adminPassword},
		"confirmPassword": {adminPassword}, "tenantName": {"Navy"}, "workspaceName": {ws}})
	g.Expect(home.status).To(Equal(http.StatusOK))
	g.Expect(home.url).To(Equal("/"), "without a return URL, on to the Console's home")
	home = b.get("/account/security")
	g.Expect(home.html).To(ContainSubstring("Signed in as Grace"))

	again := b.get("/bootstrap")
	g.Expect(again.url).To(Equal("/"), "bootstrap is offered only once: on to sign-in, where this browser is signed in")
	g.Expect(again.html).NotTo(ContainSubstring(`name="workspaceName"`))

	wrong := b.submit(home, "/account/security/password", url.Values{"currentPassword": {"not-it"},
		"newPassword": {"Second-Password-2!"}, "confirmPassword": {"Second-Password-2!"}})
	g.Expect(wrong.status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(wrong.html).To(ContainSubstring("current password is wrong"))

	changed := b.submit(home, "/account/security/password", url.Values{"currentPassword": {adminPassword},
		"newPassword": {"Second-Password-2!"}, "confirmPassword": {"Second-Password-2!"}})
	g.Expect(changed.status).To(Equal(http.StatusOK))
	g.Expect(changed.html).To(ContainSubstring("Your password was changed"), "the refreshed cookie keeps this browser signed in")

	out := b.submit(b.get("/logout"), "/logout", url.Values{})
	g.Expect(out.url).To(HavePrefix("/login"))
	g.Expect(b.get("/account/security").url).To(Equal("/login?returnUrl=%2Faccount%2Fsecurity"), "signed out: the page asks for sign-in")

	login := b.get("/login?returnUrl=%2Faccount%2Fsecurity")
	failed := b.submit(login, "/login", url.Values{"username": {adminUser}, "password": {adminPassword}, "returnUrl": {"/account/security"}})
	g.Expect(failed.status).To(Equal(http.StatusUnauthorized), "the old password no longer signs in")
	back := b.submit(failed, "/login", url.Values{"username": {adminUser}, "password": {"Second-Password-2!"}, "returnUrl": {"/account/security"}})
	g.Expect(back.url).To(Equal("/account/security"))
	g.Expect(back.html).To(ContainSubstring("Signed in as Grace"))
}

func TestPageFormsWithoutTheAntiforgeryTokenAreRefused(t *testing.T) {
	g := NewWithT(t)
	server, _, _ := localServer(t, nil)
	b := newBrowser(t, server.URL)
	b.get("/bootstrap") // sets the antiforgery cookie, but the forged form below lacks the token
	forged := b.submit(page{}, "/bootstrap", url.Values{"username": {adminUser}, "password": {adminPassword},
		"confirmPassword": {adminPassword}, "tenantName": {"Navy"}, "workspaceName": {uniqueWorkspace("forged")}})
	g.Expect(forged.status).To(Equal(http.StatusBadRequest))
	g.Expect(call(t, server, http.MethodGet, "/api/auth/bootstrap", "").body).To(HaveKeyWithValue("initialized", false))
}

func TestSignInRedirectsOnlyToLocalNormalizedReturnURLs(t *testing.T) {
	g := NewWithT(t)
	server, _, _ := localServer(t, nil)
	b := newBrowser(t, server.URL)
	form := b.get("/bootstrap")
	b.submit(form, "/bootstrap", url.Values{"username": {adminUser}, "password": {adminPassword}, "confirmPassword": {adminPassword},
		"tenantName": {"Navy"}, "workspaceName": {uniqueWorkspace("return")}})
	b.submit(b.get("/logout"), "/logout", url.Values{})
	for raw, want := range map[string]string{
		"":                           "/",
		"//evil.example/":            "/",
		"https://evil.example/x":     "/",
		"/a/../account/security?x=1": "/account/security?x=1",
	} {
		signedIn := b.submit(b.get("/login"), "/login", url.Values{"username": {adminUser}, "password": {adminPassword}, "returnUrl": {raw}})
		g.Expect(signedIn.url).To(Equal(want), "return URL %q", raw)
		b.submit(b.get("/logout"), "/logout", url.Values{})
	}
}

func TestAccessDeniedIsAPageWith403(t *testing.T) {
	g := NewWithT(t)
	server, _, _ := localServer(t, nil)
	p := newBrowser(t, server.URL).get("/access-denied")
	g.Expect(p.status).To(Equal(http.StatusForbidden))
	g.Expect(p.html).To(ContainSubstring("Access denied"))
}

func TestThePATPageShowsANewTokenOnceAndRevokesIt(t *testing.T) {
	g := NewWithT(t)
	server, svc, _ := localServer(t, nil)
	b := newBrowser(t, server.URL)
	ws := uniqueWorkspace("patpage")
	b.submit(b.get("/bootstrap"), "/bootstrap", url.Values{"username": {adminUser}, "password": {adminPassword},
		"confirmPassword": {adminPassword}, "tenantName": {"Navy"}, "workspaceName": {ws}})

	form := b.get("/account/pat")
	g.Expect(form.status).To(Equal(http.StatusOK))
	g.Expect(form.html).To(ContainSubstring("No tokens yet"))
	workspaceID := regexp.MustCompile(`<option value="([^"]+)">` + ws + `<`).FindStringSubmatch(form.html)
	g.Expect(workspaceID).NotTo(BeNil(), form.html)

	refused := b.submit(form, "/account/pat", url.Values{"name": {"ci"}, "workspace": {workspaceID[1]}, "expiresInDays": {"400"},
		"permissions": {"resources/read"}})
	g.Expect(refused.status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(refused.html).To(ContainSubstring("1 to 365 days"))

	created := b.submit(form, "/account/pat", url.Values{"name": {"ci"}, "workspace": {workspaceID[1]}, "expiresInDays": {"30"},
		"permissions": {"resources/read", "workspaces/read"}})
	g.Expect(created.status).To(Equal(http.StatusCreated))
	token := regexp.MustCompile(`<code id="new-token">(platform_pat_[A-Za-z0-9_-]+)</code>`).FindStringSubmatch(created.html)
	g.Expect(token).NotTo(BeNil(), created.html)
	_, err := svc.AuthenticatePAT(context.Background(), token[1])
	g.Expect(err).NotTo(HaveOccurred(), "the token shown works")

	again := b.get("/account/pat")
	g.Expect(again.html).NotTo(ContainSubstring(token[1]), "the token is shown once")
	g.Expect(again.html).To(ContainSubstring("Active"))
	// The permissions read as a list a line can break (the table fits the page).
	g.Expect(again.html).To(ContainSubstring("<td>workspaces/read, resources/read</td>"))

	revoked := b.submit(again, "/account/pat/revoke", url.Values{})
	g.Expect(revoked.url).To(Equal("/account/pat?done=revoked"))
	_, err = svc.AuthenticatePAT(context.Background(), token[1])
	g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
}

func TestIdentityPagesTakeTheAppsStylesFromThisOriginUnderAStrictContentSecurityPolicy(t *testing.T) {
	g := NewWithT(t)
	server, _, _ := localServer(t, nil)
	b := newBrowser(t, server.URL)
	for _, path := range []string{"/bootstrap", "/login", "/access-denied"} {
		resp, err := b.client.Get(server.URL + path)
		g.Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		g.Expect(csp).To(ContainSubstring("default-src 'self'"), path)
		g.Expect(csp).NotTo(ContainSubstring("unsafe-inline"), path)
		g.Expect(csp).To(ContainSubstring("frame-ancestors 'none'"), path)
		html := string(body)
		g.Expect(html).To(ContainSubstring(`<link rel="stylesheet" href="/assets/base.css">`), path)
		g.Expect(html).To(ContainSubstring(`<link rel="stylesheet" href="/assets/pages.css">`), path)
		g.Expect(html).NotTo(ContainSubstring("<style"), "%s: an inline style is what the policy blocks", path)
		g.Expect(html).NotTo(ContainSubstring("style="), path)
		g.Expect(html).To(ContainSubstring(`href="/workplace/"`), "%s: the way back to the Workplace", path)
	}
	for path, want := range map[string]string{"/assets/base.css": "--accent:", "/assets/pages.css": ".identity", "/assets/favicon.svg": "<svg"} {
		resp, err := b.client.Get(server.URL + path)
		g.Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), path)
		g.Expect(string(body)).To(ContainSubstring(want), path)
		g.Expect(resp.Header.Get("X-Content-Type-Options")).To(Equal("nosniff"), path)
	}
	g.Expect(b.get("/assets/styles.css").status).To(Equal(http.StatusNotFound), "only the shared files are served")
	g.Expect(b.get("/assets/..%2Fassets.go").status).To(Equal(http.StatusNotFound))
}

func TestSignOutIsOneFormPostThatReturnsToTheLocalPageItCameFrom(t *testing.T) {
	g := NewWithT(t)
	server, _, _ := localServer(t, nil)
	b := newBrowser(t, server.URL)
	form := b.get("/bootstrap")
	b.submit(form, "/bootstrap", url.Values{"username": {adminUser}, "password": {adminPassword}, "confirmPassword": {adminPassword},
		"tenantName": {"Navy"}, "workspaceName": {uniqueWorkspace("signout")}})
	b.submit(b.get("/logout"), "/logout", url.Values{})
	noFollow := &http.Client{Jar: b.client.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for raw, want := range map[string]string{
		"":                         "/login",
		"/workplace/w/x/d/home":    "/workplace/w/x/d/home",
		"/a/../tasks?page=2":       "/tasks?page=2",
		"//evil.example/":          "/login",
		"https://evil.example/x":   "/login",
		"/\\evil.example/x":        "/login",
		"javascript:alert(1)":      "/login",
		"/settings/profile#anchor": "/settings/profile#anchor",
	} {
		// The page's own sign-out button: every signed-in page carries it with its token.
		signedIn := b.submit(b.get("/login"), "/login", url.Values{"username": {adminUser}, "password": {adminPassword}})
		g.Expect(signedIn.status).To(Equal(http.StatusOK))
		security := b.get("/account/security")
		g.Expect(security.html).To(MatchRegexp(`<form method="post" action="/logout">`), "sign-out is a button on the page")
		fields := url.Values{"returnUrl": {raw}, "_antiforgery": {antiforgeryToken.FindStringSubmatch(security.html)[1]}}
		req, _ := http.NewRequest(http.MethodPost, server.URL+"/logout", strings.NewReader(fields.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", server.URL)
		resp, err := noFollow.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusSeeOther), "return URL %q", raw)
		g.Expect(resp.Header.Get("Location")).To(Equal(want), "return URL %q", raw)
		g.Expect(b.get("/account/security").url).To(HavePrefix("/login?"), "signed out after %q", raw)
	}
}
