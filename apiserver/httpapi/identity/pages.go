package identity

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/identity"
	"platform.dev/platform/internal/returnurl"
	"platform.dev/platform/workplace/web"
)

// The server-rendered pages of sign-in and account security. They look like the apps: their
// styles are the apps' base stylesheet and a small one of their own, served as files from this
// origin (see web.Shared), so the Content-Security-Policy stays without 'unsafe-inline'. Pages,
// unlike the API, redirect an anonymous browser to /login.

//go:embed pages/*.html
var pageFiles embed.FS

var pageTemplates = template.Must(template.ParseFS(pageFiles, "pages/*.html"))

// AntiforgeryCookie holds the random value each form's token is derived from.
const AntiforgeryCookie = "platform-antiforgery"

const antiforgeryField = "_antiforgery"

// pageData is what every page template reads.
type pageData struct {
	Title       string
	Antiforgery string
	ReturnURL   string
	Error       string
	Message     string
	Problems    []string
	Principal   *domain.Principal
	Initialized bool
	Values      map[string]string
	// OIDCSignIn offers the OpenID Provider's sign-in next to the local one (mode Hybrid).
	OIDCSignIn bool
	// PAT is the content of /account/pat.
	PAT *patPageData
	// Wide pages hold tables.
	Wide bool
}

// PageCSP is the pages' Content-Security-Policy: everything from this origin only, no inline
// script or style, never framed.
const PageCSP = "default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"

// sharedAssets are the files of web.Shared served under /assets/.
var sharedAssets = map[string]string{
	"base.css":    "src/shared/base.css",
	"pages.css":   "src/shared/pages.css",
	"favicon.svg": "src/shared/favicon.svg",
}

type pages struct {
	s *routes
	// key signs antiforgery tokens; a restart invalidates forms that were open, which is harmless.
	key []byte
}

func (s *routes) registerPages(mux *http.ServeMux) {
	if s.Identity() == nil || !s.Sessions() {
		return
	}
	p := &pages{s: s, key: make([]byte, 32)}
	_, _ = rand.Read(p.key)
	mux.HandleFunc("GET /assets/{name}", serveSharedAsset)
	if s.LocalAccounts() {
		mux.HandleFunc("GET /bootstrap", p.bootstrapForm)
		mux.HandleFunc("POST /bootstrap", p.bootstrap)
		mux.HandleFunc("GET /login", p.loginForm)
		mux.HandleFunc("POST /login", p.login)
		mux.HandleFunc("GET /account/security", p.security)
		mux.HandleFunc("POST /account/security/password", p.changePassword)
		mux.HandleFunc("POST /account/security/sessions", p.revokeOtherSessions)
		p.registerPATPages(mux)
	} else {
		// Mode Oidc: signing in is the OpenID Provider's, and there is no local account to manage.
		mux.HandleFunc("GET /login", p.oidcLogin)
	}
	mux.HandleFunc("GET /logout", p.logoutForm)
	mux.HandleFunc("POST /logout", p.logout)
	mux.HandleFunc("GET /access-denied", p.accessDenied)
}

// render writes the page template name with status.
func (p *pages) render(w http.ResponseWriter, r *http.Request, status int, name string, data pageData) {
	data.Antiforgery = p.antiforgery(w, r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", PageCSP)
	w.WriteHeader(status)
	_ = pageTemplates.ExecuteTemplate(w, name, data)
}

// serveSharedAsset serves one of the files the pages share with the apps. Their names carry no
// content hash, so a browser revalidates them after a few minutes.
func serveSharedAsset(w http.ResponseWriter, r *http.Request) {
	name, ok := sharedAssets[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := fs.ReadFile(web.Shared, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Content-Security-Policy", PageCSP)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
}

// antiforgery returns the form token of the browser's antiforgery cookie, setting a new cookie
// when it has none: a signed double-submit token, so a page of another site can neither read
// nor forge it.
func (p *pages) antiforgery(w http.ResponseWriter, r *http.Request) string {
	seed := ""
	if c, err := r.Cookie(AntiforgeryCookie); err == nil && len(c.Value) >= 22 {
		seed = c.Value
	} else {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		seed = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: AntiforgeryCookie, Value: seed, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	}
	return p.sign(seed)
}

func (p *pages) sign(seed string) string {
	mac := hmac.New(sha256.New, p.key)
	mac.Write([]byte(seed))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// verified parses the form and checks its antiforgery token against the cookie.
func (p *pages) verified(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	c, err := r.Cookie(AntiforgeryCookie)
	if err != nil || r.ParseForm() != nil ||
		!hmac.Equal([]byte(r.PostFormValue(antiforgeryField)), []byte(p.sign(c.Value))) {
		p.render(w, r, http.StatusBadRequest, "error.html", pageData{Title: "Form expired",
			Error: "The form expired or did not come from this site. Reload the page and try again."})
		return false
	}
	return true
}

// localReturnURL is raw normalized to a local path (see returnurl), else def.
func localReturnURL(raw, def string) string {
	if raw == "" {
		return def
	}
	if u, err := returnurl.Normalize(raw); err == nil {
		return u
	}
	return def
}

const accountHome = "/account/security"

// consoleHome is where signing in or creating the first administrator leads without a return URL.
const consoleHome = "/"

// signedIn resolves the browser's session; false when there is none.
func (p *pages) signedIn(r *http.Request) (domain.Principal, string, bool) {
	c, err := r.Cookie(httpapi.SessionCookie)
	if err != nil || c.Value == "" {
		return domain.Principal{}, "", false
	}
	pr, err := p.s.Identity().Authenticate(r.Context(), c.Value)
	if err != nil {
		return domain.Principal{}, "", false
	}
	return pr, c.Value, true
}

// requireSession redirects an anonymous browser to /login, back here afterwards.
func (p *pages) requireSession(w http.ResponseWriter, r *http.Request) (domain.Principal, string, bool) {
	pr, token, ok := p.signedIn(r)
	if !ok {
		http.Redirect(w, r, "/login?returnUrl="+url.QueryEscape(localReturnURL(r.URL.RequestURI(), accountHome)), http.StatusSeeOther)
	}
	return pr, token, ok
}

func setSession(w http.ResponseWriter, r *http.Request, sess domain.Session) {
	c := sessionCookie(httpapi.WithTLS(r.Context(), r.TLS != nil), sess)
	http.SetCookie(w, &c)
}

func (p *pages) bootstrapForm(w http.ResponseWriter, r *http.Request) {
	done, err := p.s.Identity().Initialized(r.Context())
	if err != nil {
		p.internalError(w, r)
		return
	}
	returnURL := localReturnURL(r.URL.Query().Get("returnUrl"), consoleHome)
	if done {
		http.Redirect(w, r, "/login?returnUrl="+url.QueryEscape(returnURL), http.StatusSeeOther)
		return
	}
	p.render(w, r, http.StatusOK, "bootstrap.html", pageData{Title: "Create the first administrator", ReturnURL: returnURL})
}

func (p *pages) bootstrap(w http.ResponseWriter, r *http.Request) {
	if !p.verified(w, r) {
		return
	}
	in := domain.BootstrapRequest{
		Username: r.PostFormValue("username"), Password: r.PostFormValue("password"), DisplayName: r.PostFormValue("displayName"),
		TenantName: r.PostFormValue("tenantName"), WorkspaceName: r.PostFormValue("workspaceName"),
	}
	// Where the new administrator goes once created (the Workplace, through /workplace/...).
	returnURL := localReturnURL(r.PostFormValue("returnUrl"), consoleHome)
	values := map[string]string{"username": in.Username, "displayName": in.DisplayName, "tenantName": in.TenantName, "workspaceName": in.WorkspaceName}
	if r.PostFormValue("password") != r.PostFormValue("confirmPassword") {
		p.render(w, r, http.StatusUnprocessableEntity, "bootstrap.html", pageData{Title: "Create the first administrator", Values: values, ReturnURL: returnURL, Problems: []string{"The passwords do not match."}})
		return
	}
	sess, _, _, err := p.s.Identity().Bootstrap(r.Context(), in, p.s.ProvisionFirst)
	if errors.Is(err, domain.ErrAlreadyInitialized) {
		p.render(w, r, http.StatusConflict, "error.html", pageData{Title: "Already initialized", Error: "This instance already has its first administrator. Sign in instead."})
		return
	}
	if err != nil {
		p.render(w, r, problemStatus(bootstrapProblem(err)), "bootstrap.html", pageData{Title: "Create the first administrator", Values: values, ReturnURL: returnURL, Problems: problemMessages(bootstrapProblem(err))})
		return
	}
	setSession(w, r, sess)
	http.Redirect(w, r, returnURL, http.StatusSeeOther)
}

func (p *pages) loginForm(w http.ResponseWriter, r *http.Request) {
	returnURL := localReturnURL(r.URL.Query().Get("returnUrl"), consoleHome)
	if _, _, ok := p.signedIn(r); ok {
		http.Redirect(w, r, returnURL, http.StatusSeeOther)
		return
	}
	done, err := p.s.Identity().Initialized(r.Context())
	if err != nil {
		p.internalError(w, r)
		return
	}
	p.render(w, r, http.StatusOK, "login.html", pageData{Title: "Sign in", ReturnURL: returnURL, Initialized: done, OIDCSignIn: p.s.OIDC() != nil})
}

// oidcLogin starts the OpenID Provider's sign-in, coming back to the return URL.
func (p *pages) oidcLogin(w http.ResponseWriter, r *http.Request) {
	returnURL := localReturnURL(r.URL.Query().Get("returnUrl"), "/")
	http.Redirect(w, r, "/api/auth/oidc/login?returnUrl="+url.QueryEscape(returnURL), http.StatusSeeOther)
}

func (p *pages) login(w http.ResponseWriter, r *http.Request) {
	if !p.verified(w, r) {
		return
	}
	returnURL := localReturnURL(r.PostFormValue("returnUrl"), consoleHome)
	sess, _, err := p.s.Identity().Login(r.Context(), r.PostFormValue("username"), r.PostFormValue("password"))
	if err != nil {
		status, message := http.StatusUnauthorized, "Sign-in failed: invalid username or password."
		if !errors.Is(err, domain.ErrInvalidCredentials) && !errors.Is(err, domain.ErrLockedOut) && !errors.Is(err, domain.ErrAccountDisabled) {
			status, message = http.StatusInternalServerError, "Sign-in failed: internal error. Try again later."
		}
		p.render(w, r, status, "login.html", pageData{Title: "Sign in", ReturnURL: returnURL, Initialized: true,
			Values: map[string]string{"username": r.PostFormValue("username")}, Error: message, OIDCSignIn: p.s.OIDC() != nil})
		return
	}
	setSession(w, r, sess)
	http.Redirect(w, r, returnURL, http.StatusSeeOther)
}

// signedOutHome is where signing out leads without a return URL.
const signedOutHome = "/login"

func (p *pages) logoutForm(w http.ResponseWriter, r *http.Request) {
	returnURL := localReturnURL(r.URL.Query().Get("returnUrl"), signedOutHome)
	pr, _, ok := p.signedIn(r)
	if !ok {
		http.Redirect(w, r, returnURL, http.StatusSeeOther)
		return
	}
	p.render(w, r, http.StatusOK, "logout.html", pageData{Title: "Sign out", Principal: &pr, ReturnURL: returnURL})
}

func (p *pages) logout(w http.ResponseWriter, r *http.Request) {
	if !p.verified(w, r) {
		return
	}
	if _, token, ok := p.signedIn(r); ok {
		if err := p.s.Identity().Logout(r.Context(), token); err != nil {
			p.internalError(w, r)
			return
		}
	}
	setSession(w, r, domain.Session{})
	// Back where the browser came from (the app asks for its own page), which asks for sign-in
	// again and returns there afterwards.
	http.Redirect(w, r, localReturnURL(r.PostFormValue("returnUrl"), signedOutHome), http.StatusSeeOther)
}

func (p *pages) accessDenied(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusForbidden, "error.html", pageData{Title: "Access denied",
		Error: "You are signed in, but this identity has no access here. Ask a Platform administrator to link it or to grant you a role."})
}

func (p *pages) security(w http.ResponseWriter, r *http.Request) {
	pr, _, ok := p.requireSession(w, r)
	if !ok {
		return
	}
	p.render(w, r, http.StatusOK, "security.html", pageData{Title: "Account security", Principal: &pr, Message: r.URL.Query().Get("done")})
}

func (p *pages) changePassword(w http.ResponseWriter, r *http.Request) {
	pr, _, ok := p.requireSession(w, r)
	if !ok || !p.verified(w, r) {
		return
	}
	fail := func(status int, problems ...string) {
		p.render(w, r, status, "security.html", pageData{Title: "Account security", Principal: &pr, Problems: problems})
	}
	if r.PostFormValue("newPassword") != r.PostFormValue("confirmPassword") {
		fail(http.StatusUnprocessableEntity, "The new passwords do not match.")
		return
	}
	acct, err := p.s.Identity().LocalAccountOf(r.Context(), pr.ID)
	if err != nil {
		fail(http.StatusConflict, "This identity has no local account; its password is managed by its identity provider.")
		return
	}
	sess, err := p.s.Identity().ChangePassword(r.Context(), acct.AccountID, r.PostFormValue("currentPassword"), r.PostFormValue("newPassword"))
	var weak *domain.PasswordError
	switch {
	case errors.As(err, &weak):
		problems := make([]string, 0, len(weak.Unmet))
		for _, rule := range weak.Unmet {
			problems = append(problems, "The new password needs "+rule+".")
		}
		fail(http.StatusUnprocessableEntity, problems...)
		return
	case errors.Is(err, domain.ErrInvalidCredentials):
		fail(http.StatusUnprocessableEntity, "The current password is wrong.")
		return
	case err != nil:
		p.internalError(w, r)
		return
	}
	// The password change rotated the security stamp; this browser continues with a new session.
	setSession(w, r, sess)
	http.Redirect(w, r, accountHome+"?done=password", http.StatusSeeOther)
}

func (p *pages) revokeOtherSessions(w http.ResponseWriter, r *http.Request) {
	pr, _, ok := p.requireSession(w, r)
	if !ok || !p.verified(w, r) {
		return
	}
	acct, err := p.s.Identity().LocalAccountOf(r.Context(), pr.ID)
	if err != nil {
		p.render(w, r, http.StatusConflict, "security.html", pageData{Title: "Account security", Principal: &pr,
			Problems: []string{"This identity has no local account."}})
		return
	}
	sess, err := p.s.Identity().RevokeOtherSessions(r.Context(), acct.AccountID)
	if err != nil {
		p.internalError(w, r)
		return
	}
	setSession(w, r, sess)
	http.Redirect(w, r, accountHome+"?done=sessions", http.StatusSeeOther)
}

func (p *pages) internalError(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusInternalServerError, "error.html", pageData{Title: "Something went wrong", Error: "Internal error. Try again later."})
}

// problemStatus and problemMessages show a Problem Details error on a page.
func problemStatus(err error) int {
	var se interface{ GetStatus() int }
	if errors.As(err, &se) {
		return se.GetStatus()
	}
	return http.StatusInternalServerError
}

func problemMessages(err error) []string {
	var model *huma.ErrorModel
	if !errors.As(err, &model) {
		return []string{"Internal error. Try again later."}
	}
	out := make([]string, 0, len(model.Errors))
	for _, d := range model.Errors {
		out = append(out, d.Message)
	}
	if len(out) == 0 {
		out = append(out, model.Detail)
	}
	return out
}
