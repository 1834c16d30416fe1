package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/httpapi"
	identityapi "platform.dev/platform/apiserver/httpapi/identity"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/oidc"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/test/oidc/oidctest"
)

const (
	platformAudience = "https://platform.test/api"
	otherAudience    = "https://other.test/api"
	clientID         = "platform"
	clientSecret     = "platform-client-secret"
)

// oidcEnv is a platform server in Hybrid mode whose OpenID Provider is a real oidc-provider, with
// a bootstrapped administrator and a second user, Alan, who is a Member of the workspace.
type oidcEnv struct {
	server    *httptest.Server
	provider  *oidctest.Provider
	svc       *identity.Service
	db        *store.Store
	callback  string
	workspace string
	admin     *http.Cookie
	adminID   string
	alanID    string
}

func startOIDCEnv(t *testing.T) *oidcEnv {
	t.Helper()
	g := NewWithT(t)
	// The server's address is known before it starts: it is the provider's redirect URI, and the
	// provider's issuer is in the server's configuration.
	server := httptest.NewUnstartedServer(nil)
	t.Cleanup(server.Close)
	base := "http://" + server.Listener.Addr().String()
	env := &oidcEnv{server: server, callback: base + oidc.DefaultCallbackPath}
	env.provider = oidctest.Start(t, oidctest.Options{ClientID: clientID, ClientSecret: clientSecret,
		RedirectURIs: []string{env.callback}, Resources: []string{platformAudience, otherAudience}})

	db, err := store.Open(context.Background(), store.Options{DataDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { db.Close() })
	env.db, env.svc = db, identity.New(db)
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Production, map[string]string{
			"Platform:Authentication:Mode":                      httpapi.ModeHybrid,
			"Platform:Authentication:Oidc:Authority":            env.provider.Issuer,
			"Platform:Authentication:Oidc:Audience":             platformAudience,
			"Platform:Authentication:Oidc:ClientId":             clientID,
			"Platform:Authentication:Oidc:ClientSecret":         clientSecret,
			"Platform:Authentication:Oidc:RequireHttpsMetadata": "false",
		}),
		Kube:               kube,
		PlatformKube:       platformKube,
		Ready:              func(ctx context.Context) error { return nil },
		Identity:           env.svc,
		ProvisionWorkspace: httpapi.NamespaceProvisioner(kube),
	})
	g.Expect(err).NotTo(HaveOccurred())
	server.Config.Handler = api.Handler()
	server.Start()

	env.workspace = uniqueWorkspace("oidc")
	r := call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(env.workspace, adminPassword))
	g.Expect(r.status).To(Equal(http.StatusCreated), "body: %v", r.body)
	env.admin = sessionFrom(g, r)
	env.adminID, _ = r.body["principalId"].(string)

	_, alan, err := env.svc.CreateLocalAccount(context.Background(), env.adminID, identity.NewLocalAccount{Username: "Alan", Password: adminPassword})
	g.Expect(err).NotTo(HaveOccurred())
	env.alanID = alan.ID
	var workspaceID string
	g.Expect(db.DB().QueryRow(`SELECT id FROM workspaces WHERE route_name = ?`, env.workspace).Scan(&workspaceID)).To(Succeed())
	_, err = db.DB().Exec(`INSERT INTO memberships (principal_id, scope_kind, scope_id, role, created_at) VALUES (?, 'workspace', ?, 'Member', ?)`,
		alan.ID, workspaceID, time.Now().UTC())
	g.Expect(err).NotTo(HaveOccurred())
	return env
}

func (e *oidcEnv) link(t *testing.T, principalID, subject string) response {
	t.Helper()
	body := fmt.Sprintf(`{"issuer":%q,"subject":%q}`, e.provider.Issuer, subject)
	return call(t, e.server, http.MethodPost, "/api/identity/principals/"+principalID+"/external-identities", body, withCookie(e.admin)...)
}

// signIn signs in through the platform as a browser: the platform's sign-in start, the provider's
// login and consent forms as login, and every redirect up to the return URL. It returns the last
// response (its body read) and the browser.
func (e *oidcEnv) signIn(t *testing.T, login, returnURL string) (*http.Response, []byte, *http.Client) {
	t.Helper()
	browser := oidctest.Browser()
	resp, err := browser.Get(e.server.URL + "/api/auth/oidc/login?returnUrl=" + url.QueryEscape(returnURL))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err = e.provider.CompleteInteractions(browser, resp, login); err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body, browser
}

func sessionCookieOf(browser *http.Client, serverURL string) *http.Cookie {
	u, _ := url.Parse(serverURL)
	for _, c := range browser.Jar.Cookies(u) {
		if c.Name == httpapi.SessionCookie {
			return c
		}
	}
	return nil
}

func TestOIDCSignInWithPKCEOpensASessionForALinkedSubject(t *testing.T) {
	g := NewWithT(t)
	env := startOIDCEnv(t)
	g.Expect(env.link(t, env.alanID, "alan-turing").status).To(Equal(http.StatusCreated))

	// The sign-in ends on the return URL, a protected route, which the new session cookie opens.
	resp, body, browser := env.signIn(t, "alan-turing", "/api/agents")
	g.Expect(resp.Request.URL.Path).To(Equal("/api/agents"))
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "body: %s", body)
	session := sessionCookieOf(browser, env.server.URL)
	g.Expect(session).NotTo(BeNil())

	r := call(t, env.server, http.MethodGet, "/api/agents", "", withCookie(session)...)
	g.Expect(r.status).To(Equal(http.StatusOK))
	// Alan is a Member, not a Platform administrator.
	expectProblem(g, call(t, env.server, http.MethodGet, "/api/identity/principals/"+env.alanID+"/external-identities", "", withCookie(session)...), http.StatusForbidden)

	// The authorization request used PKCE with S256, a state and a nonce; the sign-in cookie
	// that kept them is HttpOnly and limited to the callback.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start, err := noRedirect.Get(env.server.URL + "/api/auth/oidc/login")
	g.Expect(err).NotTo(HaveOccurred())
	start.Body.Close()
	g.Expect(start.StatusCode).To(Equal(http.StatusFound))
	authorize, err := url.Parse(start.Header.Get("Location"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(authorize.String()).To(HavePrefix(env.provider.Issuer))
	q := authorize.Query()
	g.Expect(q.Get("code_challenge_method")).To(Equal("S256"))
	g.Expect(q.Get("code_challenge")).To(HaveLen(43))
	g.Expect(q.Get("state")).NotTo(BeEmpty())
	g.Expect(q.Get("nonce")).NotTo(BeEmpty())
	g.Expect(q.Get("redirect_uri")).To(Equal(env.callback))
	g.Expect(start.Cookies()).To(ConsistOf(And(
		HaveField("Name", identityapi.SignInCookie), HaveField("HttpOnly", true), HaveField("Path", oidc.DefaultCallbackPath),
		HaveField("SameSite", http.SameSiteLaxMode), HaveField("MaxAge", BeNumerically("<=", 600)))))

	// Signing out ends the session like a local one.
	g.Expect(call(t, env.server, http.MethodPost, "/api/auth/logout", "", withCookie(session)...).status).To(Equal(http.StatusNoContent))
	expectProblem(g, call(t, env.server, http.MethodGet, "/api/agents", "", withCookie(session)...), http.StatusUnauthorized)
}

func TestOIDCSignInOfAnUnlinkedSubjectIsDenied(t *testing.T) {
	g := NewWithT(t)
	env := startOIDCEnv(t)
	g.Expect(env.link(t, env.alanID, "alan-turing").status).To(Equal(http.StatusCreated))

	// Only the exact subject is linked: another case is another identity.
	for _, login := range []string{"stranger", "Alan-Turing"} {
		resp, page, browser := env.signIn(t, login, "/api/agents")
		g.Expect(resp.Request.URL.Path).To(Equal(identityapi.AccessDeniedPath), login)
		g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden), login)
		g.Expect(string(page)).To(ContainSubstring("link it"), login)
		g.Expect(string(page)).NotTo(ContainSubstring(login), "the page does not echo the subject")
		g.Expect(sessionCookieOf(browser, env.server.URL)).To(BeNil(), login)
	}

	// A caller that is not a browser gets Problem Details instead of the redirect.
	browser := oidctest.Browser()
	browser.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == oidc.DefaultCallbackPath {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := browser.Get(env.server.URL + "/api/auth/oidc/login")
	g.Expect(err).NotTo(HaveOccurred())
	resp, err = env.provider.CompleteInteractions(browser, resp, "stranger")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Path).To(Equal(oidc.DefaultCallbackPath))
	req, _ := http.NewRequest(http.MethodGet, back.String(), nil)
	req.Header.Set("Accept", "application/json")
	for _, c := range browser.Jar.Cookies(back) {
		req.AddCookie(c)
	}
	answer, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer answer.Body.Close()
	data, _ := io.ReadAll(answer.Body)
	g.Expect(answer.StatusCode).To(Equal(http.StatusForbidden), "body: %s", data)
	g.Expect(answer.Header.Get("Content-Type")).To(Equal("application/problem+json"))
	g.Expect(string(data)).NotTo(ContainSubstring("stranger"), "the subject is not echoed")
	g.Expect(answer.Header.Values("Set-Cookie")).NotTo(ContainElement(HavePrefix(httpapi.SessionCookie + "=")))

	// A callback whose state was not started here is refused before the code is redeemed.
	r := call(t, env.server, http.MethodGet, oidc.DefaultCallbackPath+"?code=abc&state=forged", "")
	expectProblem(g, r, http.StatusBadRequest)
}

func TestJWTBearerTokensOfLinkedSubjectsForTheAudienceAuthenticate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env := startOIDCEnv(t)
	r := env.link(t, env.alanID, "alan-turing")
	g.Expect(r.status).To(Equal(http.StatusCreated))
	linkID, _ := r.body["id"].(string)

	linked, err := env.provider.SignIn(ctx, "alan-turing", env.callback, platformAudience)
	g.Expect(err).NotTo(HaveOccurred())
	bearer := func(token string) []string { return []string{"Authorization", "Bearer " + token} }
	g.Expect(call(t, env.server, http.MethodGet, "/api/agents", "", bearer(linked.AccessToken)...).status).To(Equal(http.StatusOK))

	wrongAudience, err := env.provider.SignIn(ctx, "alan-turing", env.callback, otherAudience)
	g.Expect(err).NotTo(HaveOccurred())
	unlinked, err := env.provider.SignIn(ctx, "stranger", env.callback, platformAudience)
	g.Expect(err).NotTo(HaveOccurred())
	for name, token := range map[string]string{
		"another audience":      wrongAudience.AccessToken,
		"an ID token":           linked.IDToken,
		"malformed":             "not-a-jwt",
		"three garbage parts":   "a.b.c",
		"non-base64 parts":      "!!!.@@@.###",
		"huge":                  strings.Repeat("x", 30000),
		"the signature dropped": strings.Join(strings.Split(linked.AccessToken, ".")[:2], ".") + ".",
	} {
		r := call(t, env.server, http.MethodGet, "/api/agents", "", bearer(token)...)
		g.Expect(r.status).To(Equal(http.StatusUnauthorized), name)
		g.Expect(r.header.Get("Content-Type")).To(Equal("application/problem+json"), name)
	}
	// A bearer token is the whole credential: a valid session cookie does not rescue a bad token.
	expectProblem(g, call(t, env.server, http.MethodGet, "/api/agents", "", append(bearer("a.b.c"), withCookie(env.admin)...)...), http.StatusUnauthorized)

	// Valid but linked to nobody: authenticated, unresolved, so not permitted.
	r = call(t, env.server, http.MethodGet, "/api/agents", "", bearer(unlinked.AccessToken)...)
	expectProblem(g, r, http.StatusForbidden)
	expectProblem(g, call(t, env.server, http.MethodGet, "/api/identity/principals/"+env.alanID+"/external-identities", "", bearer(unlinked.AccessToken)...), http.StatusForbidden)

	// Unlinking takes effect on the next request (Alan keeps his local account).
	g.Expect(call(t, env.server, http.MethodDelete, "/api/identity/principals/"+env.alanID+"/external-identities/"+linkID, "", withCookie(env.admin)...).status).
		To(Equal(http.StatusNoContent))
	expectProblem(g, call(t, env.server, http.MethodGet, "/api/agents", "", bearer(linked.AccessToken)...), http.StatusForbidden)
}

func TestExternalIdentityLinksAreForPlatformAdministrators(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	server, svc, db := localServer(t, nil)
	ws := uniqueWorkspace("links")
	r := call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(ws, adminPassword))
	g.Expect(r.status).To(Equal(http.StatusCreated))
	admin := sessionFrom(g, r)
	adminID, _ := r.body["principalId"].(string)
	_, alan, err := svc.CreateLocalAccount(ctx, adminID, identity.NewLocalAccount{Username: "Alan", Password: adminPassword})
	g.Expect(err).NotTo(HaveOccurred())
	r = call(t, server, http.MethodPost, "/api/auth/local/login", fmt.Sprintf(`{"username":"Alan","password":%q}`, adminPassword))
	g.Expect(r.status).To(Equal(http.StatusOK))
	alanSession := sessionFrom(g, r)
	// Kate signs in only through the provider: no local account.
	_, err = db.DB().Exec(`INSERT INTO principals (id, kind, display_name, status, created_at) VALUES ('kate', 'Human', 'Kate', 'Active', ?)`, time.Now().UTC())
	g.Expect(err).NotTo(HaveOccurred())

	const issuer = "https://login.example.test/realms/Navy"
	links := func(principal string) string { return "/api/identity/principals/" + principal + "/external-identities" }
	body := func(iss, sub string) string {
		data, _ := json.Marshal(map[string]string{"issuer": iss, "subject": sub})
		return string(data)
	}
	asAdmin := withCookie(admin)

	expectProblem(g, call(t, server, http.MethodGet, links(alan.ID), ""), http.StatusUnauthorized)
	expectProblem(g, call(t, server, http.MethodPost, links(alan.ID), body(issuer, "alan"), withCookie(alanSession)...), http.StatusForbidden)

	r = call(t, server, http.MethodPost, links(alan.ID), body(issuer, "alan"), asAdmin...)
	g.Expect(r.status).To(Equal(http.StatusCreated), "body: %v", r.body)
	g.Expect(r.body).To(And(HaveKeyWithValue("issuer", issuer), HaveKeyWithValue("subject", "alan"), HaveKeyWithValue("principalId", alan.ID)))
	alanLink, _ := r.body["id"].(string)
	r = call(t, server, http.MethodPost, links(alan.ID), body(issuer, "alan"), asAdmin...)
	g.Expect(r.status).To(Equal(http.StatusOK), "linking again changes nothing")
	g.Expect(r.body).To(HaveKeyWithValue("id", alanLink))
	r = call(t, server, http.MethodPost, links("kate"), body(issuer, "alan"), asAdmin...)
	expectProblem(g, r, http.StatusConflict)
	g.Expect(fmt.Sprint(r.body)).NotTo(ContainSubstring("example.test"), "the answer does not repeat the issuer")
	expectProblem(g, call(t, server, http.MethodPost, links("nobody"), body(issuer, "x"), asAdmin...), http.StatusNotFound)

	for name, tc := range map[string]struct{ body, location string }{
		"issuer with user information": {body(strings.Replace(issuer, "https://", "https://me@", 1), "k"), "body.issuer"},
		"issuer with a query":          {body(issuer+"?x=1", "k"), "body.issuer"},
		"relative issuer":              {body("/realms/Navy", "k"), "body.issuer"},
		"padded subject":               {body(issuer, " k"), "body.subject"},
		"subject with a control":       {body(issuer, "k\u0007"), "body.subject"},
		"empty subject":                {body(issuer, ""), "body.subject"},
		"over-long subject":            {body(issuer, strings.Repeat("k", 256)), "body.subject"},
		"missing subject":              {`{"issuer":"` + issuer + `"}`, "body.subject"},
	} {
		r := call(t, server, http.MethodPost, links("kate"), tc.body, asAdmin...)
		expectProblem(g, r, http.StatusUnprocessableEntity)
		g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", tc.location)), name)
		g.Expect(fmt.Sprint(r.body)).NotTo(ContainSubstring("example.test"), "%s: the answer does not repeat the issuer", name)
	}

	r = call(t, server, http.MethodPost, links("kate"), body(issuer, "kate"), asAdmin...)
	g.Expect(r.status).To(Equal(http.StatusCreated))
	kateLink, _ := r.body["id"].(string)
	r = call(t, server, http.MethodGet, links("kate"), "", asAdmin...)
	g.Expect(r.status).To(Equal(http.StatusOK))
	g.Expect(r.body["items"]).To(ConsistOf(And(HaveKeyWithValue("id", kateLink), HaveKeyWithValue("issuer", issuer), HaveKeyWithValue("subject", "kate"))))

	// Kate's link is her only way in; Alan's local account remains when his link goes.
	r = call(t, server, http.MethodDelete, links("kate")+"/"+kateLink, "", asAdmin...)
	expectProblem(g, r, http.StatusConflict)
	expectProblem(g, call(t, server, http.MethodDelete, links("kate")+"/"+alanLink, "", asAdmin...), http.StatusNotFound)
	g.Expect(call(t, server, http.MethodDelete, links(alan.ID)+"/"+alanLink, "", asAdmin...).status).To(Equal(http.StatusNoContent))
	expectProblem(g, call(t, server, http.MethodDelete, links(alan.ID)+"/"+alanLink, "", asAdmin...), http.StatusNotFound)

	events, err := svc.Audit.Latest(ctx, 0)
	g.Expect(err).NotTo(HaveOccurred())
	var actions []string
	for _, e := range events {
		actions = append(actions, e.Action+" "+e.Outcome)
		data, _ := json.Marshal(e)
		g.Expect(string(data)).NotTo(ContainSubstring("example.test"), "audit holds no issuer")
		g.Expect(string(data)).NotTo(ContainSubstring(`"alan"`), "audit holds no subject")
	}
	g.Expect(actions).To(ContainElements("external-identity.linked success", "external-identity.linked failure",
		"external-identity.unlinked success", "external-identity.unlinked failure"))
}

func TestOIDCSettingsAreCheckedAtStartup(t *testing.T) {
	newAPI := func(settings map[string]string) error {
		_, err := service.New(httpapi.Options{Config: config.FromMap(config.Production, settings), Kube: kube,
			Ready: func(context.Context) error { return nil }})
		return err
	}
	complete := func(mode string) map[string]string {
		return map[string]string{
			"Platform:Authentication:Mode": mode, oidc.KeyAuthority: "https://login.example.test",
			oidc.KeyAudience: platformAudience, oidc.KeyClientID: clientID,
		}
	}
	for _, mode := range []string{httpapi.ModeOidc, httpapi.ModeHybrid} {
		t.Run(mode, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(newAPI(complete(mode))).To(Succeed(), "the provider is not contacted at startup")
			for _, key := range []string{oidc.KeyAuthority, oidc.KeyAudience, oidc.KeyClientID} {
				settings := complete(mode)
				delete(settings, key)
				g.Expect(newAPI(settings)).To(MatchError(ContainSubstring(key + " is required")))
			}
			settings := complete(mode)
			settings[oidc.KeyAuthority] = "http://login.example.test"
			g.Expect(newAPI(settings)).To(MatchError(ContainSubstring(oidc.KeyRequireHTTPSMetadata + " is true")))
			settings[oidc.KeyRequireHTTPSMetadata] = "false"
			g.Expect(newAPI(settings)).To(Succeed())
		})
	}
	g := NewWithT(t)
	g.Expect(newAPI(map[string]string{"Platform:Authentication:Mode": httpapi.ModeLocal})).To(Succeed(), "Local mode needs no provider")
}

func TestOIDCSignInIsOnlyInModesOidcAndHybridAndReturnsOnlyLocally(t *testing.T) {
	g := NewWithT(t)
	local, _, _ := localServer(t, nil)
	expectProblem(g, call(t, local, http.MethodGet, "/api/auth/oidc/login", ""), http.StatusNotFound)
	expectProblem(g, call(t, local, http.MethodGet, oidc.DefaultCallbackPath+"?code=a&state=b", ""), http.StatusNotFound)

	env := startOIDCEnv(t)
	for _, returnURL := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"} {
		r := call(t, env.server, http.MethodGet, "/api/auth/oidc/login?returnUrl="+url.QueryEscape(returnURL), "")
		expectProblem(g, r, http.StatusBadRequest)
		g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "query.returnUrl")), returnURL)
	}

	// Mode Hybrid offers both sign-ins on the login page.
	page, err := http.Get(env.server.URL + "/login?returnUrl=%2Fapi%2Fagents")
	g.Expect(err).NotTo(HaveOccurred())
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	g.Expect(string(html)).To(ContainSubstring(`action="/login"`))
	g.Expect(string(html)).To(ContainSubstring(`href="/api/auth/oidc/login?returnUrl=%2fapi%2fagents"`))

	g.Expect(env.link(t, env.alanID, "alan-turing").status).To(Equal(http.StatusCreated))
	resp, _, _ := env.signIn(t, "alan-turing", "/api/../api/./agents?limit=1")
	g.Expect(resp.Request.URL.RequestURI()).To(Equal("/api/agents?limit=1"), "the return URL is normalized")
}

func TestLocalSignInAndItsPagesAreOffInModeOidc(t *testing.T) {
	g := NewWithT(t)
	db, err := store.Open(context.Background(), store.Options{DataDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { db.Close() })
	svc := identity.New(db)
	_, _, err = svc.CreateLocalAccount(context.Background(), "", identity.NewLocalAccount{Username: "Alan", Password: adminPassword})
	g.Expect(err).NotTo(HaveOccurred())
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Production, map[string]string{
			"Platform:Authentication:Mode": httpapi.ModeOidc, oidc.KeyAuthority: "https://login.example.test",
			oidc.KeyAudience: platformAudience, oidc.KeyClientID: clientID,
		}),
		Kube: kube, PlatformKube: platformKube, Ready: func(context.Context) error { return nil },
		Identity: svc, ProvisionWorkspace: httpapi.NamespaceProvisioner(kube),
	})
	g.Expect(err).NotTo(HaveOccurred())
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)
	expectProblem(g, call(t, server, http.MethodPost, "/api/auth/local/login", fmt.Sprintf(`{"username":"Alan","password":%q}`, adminPassword)), http.StatusNotFound)

	// The login page hands over to the provider; there is no local bootstrap page.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(server.URL + "/login?returnUrl=%2Fapi%2Fagents")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
	g.Expect(resp.Header.Get("Location")).To(Equal("/api/auth/oidc/login?returnUrl=%2Fapi%2Fagents"))
	resp, err = noRedirect.Get(server.URL + "/bootstrap")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
}
