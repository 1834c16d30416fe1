package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/oidc"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/returnurl"
)

const (
	// personalAccessTokenPrefix starts every personal access token; other bearer tokens are JWTs.
	personalAccessTokenPrefix = identity.PATPrefix

	// SignInCookie carries, between the start of an OIDC sign-in and its callback, what the
	// callback checks: state, nonce, PKCE code verifier and the return URL. It is HttpOnly,
	// limited to the callback path and lives ten minutes.
	SignInCookie   = "platform-oidc-signin"
	signInLifetime = 10 * time.Minute

	// AccessDeniedPath is the web page a browser is sent to when a sign-in is refused.
	AccessDeniedPath = "/access-denied"
)

// configureOIDC reads the OpenID Provider settings in modes Oidc and Hybrid, where they are
// required; startup fails on an incomplete or unsafe configuration.
func (s *Server) configureOIDC(cfg *config.Config) error {
	provider, err := OIDCProvider(cfg)
	if err != nil || provider == nil {
		return err
	}
	s.oidc = provider
	s.tokens = s.oidc.Verifier()
	return nil
}

// OIDCProvider is the OpenID Provider of modes Oidc and Hybrid, nil in the other modes; an
// incomplete or unsafe configuration is an error. The kube API verifies JWT bearer tokens with it
// too.
func OIDCProvider(cfg *config.Config) (*oidc.Provider, error) {
	mode, err := authenticationMode(cfg)
	if err != nil || (mode != ModeOidc && mode != ModeHybrid) {
		return nil, err
	}
	oidcConfig, err := oidc.ConfigFrom(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", authModeKey, mode, err)
	}
	return oidc.NewProvider(oidcConfig), nil
}

// authenticateJWT authenticates a JWT bearer token in modes Oidc and Hybrid: signature by the
// provider's keys, issuer, the configured audience and expiry. A valid token whose exact (iss,
// sub) is linked to an active Principal is that Principal; a valid token linked to none is an
// authenticated caller without a Principal (ok with an empty ID), which workspace and
// administration policies refuse with 403. An invalid token, or a provider that cannot be
// reached to check it, authenticates nobody (ok false). err is only for a failing identity store.
func (s *Server) authenticateJWT(ctx context.Context, token string) (caller Caller, ok bool, err error) {
	if s.tokens == nil {
		return Caller{}, false, nil
	}
	issuer, subject, err := s.tokens.Verify(ctx, token)
	if err != nil {
		return Caller{}, false, nil
	}
	caller = Caller{Credential: CredentialBearer}
	if s.identity == nil {
		return caller, true, nil
	}
	p, err := s.identity.PrincipalByExternalIdentity(ctx, issuer, subject)
	switch {
	case errors.Is(err, identity.ErrNoLinkedPrincipal):
		return caller, true, nil
	case err != nil:
		return Caller{}, false, err
	}
	caller.ID = p.ID
	return caller, true, nil
}

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
	host, _ := ctx.Value(hostKey{}).(string)
	if overTLS(ctx) {
		return "https://" + host
	}
	return "http://" + host
}

func (s *Server) signInCookie(ctx context.Context, value string) http.Cookie {
	c := http.Cookie{Name: SignInCookie, Value: value, Path: s.oidc.Config().CallbackPath, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: overTLS(ctx)}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(signInLifetime / time.Second)
	}
	return c
}

func (s *Server) registerOIDC() {
	callbackPath := oidc.DefaultCallbackPath
	if s.oidc != nil {
		callbackPath = s.oidc.Config().CallbackPath
	}

	huma.Register(s.api, huma.Operation{
		OperationID: "login-oidc", Method: http.MethodGet, Path: "/api/auth/oidc/login", Tags: []string{tagAuthentication},
		Summary: "Start an OIDC sign-in",
		Description: "Anonymous; in modes Oidc and Hybrid only (404 otherwise). Redirects to the OpenID Provider for the " +
			"authorization code flow with PKCE (S256), keeping state, nonce and code verifier in a short-lived HttpOnly " +
			"cookie for the callback. The return URL must be a local path.",
		DefaultStatus: http.StatusFound,
		Errors:        []int{http.StatusBadRequest, http.StatusNotFound, http.StatusServiceUnavailable},
	}, func(ctx context.Context, in *oidcLoginInput) (*redirectOutput, error) {
		if s.oidc == nil {
			return nil, errNoOIDC
		}
		returnURL, err := returnurl.Normalize(in.ReturnURL)
		if err != nil {
			return nil, huma.Error400BadRequest("the return URL is not local", &huma.ErrorDetail{Location: "query.returnUrl", Message: err.Error()})
		}
		signIn := oidc.NewSignIn()
		target, err := s.oidc.AuthCodeURL(ctx, s.oidc.RedirectURL(requestOrigin(ctx)), signIn)
		if err != nil {
			return nil, huma.Error503ServiceUnavailable("the OpenID Provider cannot be reached; retry later")
		}
		state := signInState{State: signIn.State, Nonce: signIn.Nonce, CodeVerifier: signIn.CodeVerifier, ReturnURL: returnURL}
		return &redirectOutput{Status: http.StatusFound, Location: target, SetCookie: []http.Cookie{s.signInCookie(ctx, state.encode())}}, nil
	})

	huma.Register(s.api, huma.Operation{
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
		if s.oidc == nil {
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
		cfg := s.oidc.Config()
		if in.Code == "" || (in.Issuer != "" && in.Issuer != cfg.Authority) {
			return nil, huma.Error400BadRequest("the provider's response is incomplete or from another issuer")
		}
		issuer, subject, err := s.oidc.Exchange(ctx, s.oidc.RedirectURL(requestOrigin(ctx)), in.Code,
			oidc.SignIn{State: st.State, Nonce: st.Nonce, CodeVerifier: st.CodeVerifier})
		switch {
		case errors.Is(err, oidc.ErrUnavailable):
			return nil, huma.Error503ServiceUnavailable("the OpenID Provider cannot be reached; retry later")
		case err != nil:
			return denied(huma.Error401Unauthorized("sign-in failed: the provider's answer could not be verified"))
		}
		if s.identity == nil {
			return denied(errNoPrincipal)
		}
		sess, _, err := s.identity.OpenExternalSession(ctx, issuer, subject)
		switch {
		case errors.Is(err, identity.ErrNoLinkedPrincipal):
			return denied(errNoPrincipal)
		case err != nil:
			return nil, problem(err)
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
