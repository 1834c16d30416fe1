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
	g.Expect(home.url).To(Equal("/account/security"))
	g.Expect(home.html).To(ContainSubstring("Signed in as Grace"))

	again := b.get("/bootstrap")
	g.Expect(again.url).To(Equal("/account/security"), "bootstrap is offered only once: on to sign-in, where this browser is signed in")
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
		"//evil.example/":            "/account/security",
		"https://evil.example/x":     "/account/security",
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

	revoked := b.submit(again, "/account/pat/revoke", url.Values{})
	g.Expect(revoked.url).To(Equal("/account/pat?done=revoked"))
	_, err = svc.AuthenticatePAT(context.Background(), token[1])
	g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
}
