package identity

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	domain "platform.dev/platform/apiserver/identity"

	"github.com/danielgtaylor/huma/v2"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/oidc"
	"platform.dev/platform/internal/returnurl"
)

const (
	// SignInCookie carries, between the start of an OIDC sign-in and its callback, what the
	// callback checks: state, nonce, PKCE code verifier and the return URL. It is HttpOnly,
	// limited to the callback path and lives ten minutes.
	SignInCookie   = "platform-oidc-signin"
	signInLifetime = 10 * time.Minute

	// AccessDeniedPath is the web page a browser is sent to when a sign-in is refused.
	AccessDeniedPath = "/access-denied"
)

// signInState is the content of SignInCookie.
type signInState struct {
	State        string `json:"s"`
	Nonce        string `json:"n"`
	CodeVerifier string `json:"v"`
	ReturnURL    string `json:"r"`
}

func (st signInState) encode() string {
	data, _ := json.Marshal(st)
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeSignInState(value string) (signInState, bool) {
	var st signInState
	data, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || json.Unmarshal(data, &st) != nil || st.State == "" || st.Nonce == "" || st.CodeVerifier == "" {
		return signInState{}, false
	}
	return st, true
}

type oidcLoginInput struct {
	ReturnURL string `query:"returnUrl" maxLength:"2048" doc:"Local path to go to once signed in (default /); other sites are refused (400)."`
}

// oidcCallbackInput carries no schema limits: a validation error would echo the value, and the
// code and the issuer stay out of answers. The handler bounds them instead.
type oidcCallbackInput struct {
	Code             string `query:"code" doc:"The authorization code."`
	State            string `query:"state" doc:"The state of the sign-in, as sent to the provider."`
	Issuer           string `query:"iss" doc:"The provider's issuer (RFC 9207), checked when present."`
	Error            string `query:"error" doc:"The provider's refusal, instead of a code."`
	ErrorDescription string `query:"error_description" doc:"Ignored: never shown."`
	SignIn           string `cookie:"platform-oidc-signin" doc:"The sign-in started by GET /api/auth/oidc/login."`
	Accept           string `header:"Accept" doc:"A browser (text/html) is redirected to /access-denied when the sign-in is refused; other callers get Problem Details."`
}

// maxCallbackValue bounds each value of the callback.
const maxCallbackValue = 4096

type redirectOutput struct {
	Status    int
	Location  string        `header:"Location"`
	SetCookie []http.Cookie `header:"Set-Cookie"`
}

var errNoOIDC = huma.Error404NotFound("OIDC sign-in is not enabled on this server")

// requestOrigin is the scheme and host the request came to, for the redirect URI when none is
// configured. The provider accepts only registered redirect URIs, so a forged Host header leads
// nowhere.
func requestOrigin(ctx context.Context) string {
	host := httpapi.RequestHost(ctx)
	if httpapi.OverTLS(ctx) {
		return "https://" + host
	}
	return "http://" + host
}

func (s *routes) signInCookie(ctx context.Context, value string) http.Cookie {
	c := http.Cookie{Name: SignInCookie, Value: value, Path: s.OIDC().Config().CallbackPath, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: httpapi.OverTLS(ctx)}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(signInLifetime / time.Second)
	}
	return c
}

func (s *routes) registerOIDC() {
	callbackPath := oidc.DefaultCallbackPath
	if s.OIDC() != nil {
		callbackPath = s.OIDC().Config().CallbackPath
	}

	huma.Register(s.API(), huma.Operation{
		OperationID: "login-oidc", Method: http.MethodGet, Path: "/api/auth/oidc/login", Tags: []string{tagAuthentication},
		Summary: "Start an OIDC sign-in",
		Description: "Anonymous; in modes Oidc and Hybrid only (404 otherwise). Redirects to the OpenID Provider for the " +
			"authorization code flow with PKCE (S256), keeping state, nonce and code verifier in a short-lived HttpOnly " +
			"cookie for the callback. The return URL must be a local path.",
		DefaultStatus: http.StatusFound,
		Errors:        []int{http.StatusBadRequest, http.StatusNotFound, http.StatusServiceUnavailable},
	}, func(ctx context.Context, in *oidcLoginInput) (*redirectOutput, error) {
		if s.OIDC() == nil {
			return nil, errNoOIDC
		}
		returnURL, err := returnurl.Normalize(in.ReturnURL)
		if err != nil {
			return nil, huma.Error400BadRequest("the return URL is not local", &huma.ErrorDetail{Location: "query.returnUrl", Message: err.Error()})
		}
		signIn := oidc.NewSignIn()
		target, err := s.OIDC().AuthCodeURL(ctx, s.OIDC().RedirectURL(requestOrigin(ctx)), signIn)
		if err != nil {
			return nil, huma.Error503ServiceUnavailable("the OpenID Provider cannot be reached; retry later")
		}
		state := signInState{State: signIn.State, Nonce: signIn.Nonce, CodeVerifier: signIn.CodeVerifier, ReturnURL: returnURL}
		return &redirectOutput{Status: http.StatusFound, Location: target, SetCookie: []http.Cookie{s.signInCookie(ctx, state.encode())}}, nil
	})

	huma.Register(s.API(), huma.Operation{
		OperationID: "oidc-callback", Method: http.MethodGet, Path: callbackPath, Tags: []string{tagAuthentication},
		Summary: "Complete an OIDC sign-in",
		Description: "Where the OpenID Provider sends the browser back. The code is redeemed with the PKCE code verifier, " +
			"the ID token verified (signature, issuer, audience, expiry, nonce), and the Principal resolved only by the " +
			"exact link of the token's iss and sub: there is no linking by e-mail and no provisioning. A linked, active " +
			"Principal gets the session cookie and is redirected to the return URL; otherwise a browser is redirected " +
			"to " + AccessDeniedPath + " and other callers get 403.",
		DefaultStatus: http.StatusFound,
		Errors:        []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusServiceUnavailable},
	}, func(ctx context.Context, in *oidcCallbackInput) (*redirectOutput, error) {
		if s.OIDC() == nil {
			return nil, errNoOIDC
		}
		browser := strings.Contains(in.Accept, "text/html")
		clearSignIn := s.signInCookie(ctx, "")
		denied := func(apiErr error) (*redirectOutput, error) {
			if browser {
				return &redirectOutput{Status: http.StatusFound, Location: AccessDeniedPath, SetCookie: []http.Cookie{clearSignIn}}, nil
			}
			return nil, apiErr
		}
		for _, v := range []string{in.Code, in.State, in.Issuer, in.Error, in.SignIn} {
			if len(v) > maxCallbackValue {
				return nil, huma.Error400BadRequest("the provider's response is too large")
			}
		}
		st, ok := decodeSignInState(in.SignIn)
		if !ok || subtle.ConstantTimeCompare([]byte(st.State), []byte(in.State)) != 1 {
			return nil, huma.Error400BadRequest("this sign-in was not started here or has expired; start it again")
		}
		if in.Error != "" {
			return denied(huma.Error403Forbidden("the OpenID Provider refused the sign-in"))
		}
		cfg := s.OIDC().Config()
		if in.Code == "" || (in.Issuer != "" && in.Issuer != cfg.Authority) {
			return nil, huma.Error400BadRequest("the provider's response is incomplete or from another issuer")
		}
		issuer, subject, err := s.OIDC().Exchange(ctx, s.OIDC().RedirectURL(requestOrigin(ctx)), in.Code,
			oidc.SignIn{State: st.State, Nonce: st.Nonce, CodeVerifier: st.CodeVerifier})
		switch {
		case errors.Is(err, oidc.ErrUnavailable):
			return nil, huma.Error503ServiceUnavailable("the OpenID Provider cannot be reached; retry later")
		case err != nil:
			return denied(huma.Error401Unauthorized("sign-in failed: the provider's answer could not be verified"))
		}
		if s.Identity() == nil {
			return denied(httpapi.ErrNoPrincipal)
		}
		sess, _, err := s.Identity().OpenExternalSession(ctx, issuer, subject)
		switch {
		case errors.Is(err, domain.ErrNoLinkedPrincipal):
			return denied(httpapi.ErrNoPrincipal)
		case err != nil:
			return nil, httpapi.Problem(err)
		}
		// The return URL was checked at the start; it is checked again because the cookie
		// came back from the client.
		target, err := returnurl.Normalize(st.ReturnURL)
		if err != nil {
			target = "/"
		}
		return &redirectOutput{Status: http.StatusFound, Location: target, SetCookie: []http.Cookie{sessionCookie(ctx, sess), clearSignIn}}, nil
	})
}
