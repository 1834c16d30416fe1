package httpapi

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/internal/config"
)

// Authentication modes of Platform:Authentication:Mode.
const (
	ModeLocal       = "Local"
	ModeOidc        = "Oidc"
	ModeHybrid      = "Hybrid"
	ModeDevelopment = "Development"
	ModeDisabled    = "Disabled"

	authModeKey = "Platform:Authentication:Mode"

	// DevelopmentPrincipal is every caller in Development mode, Owner of DevelopmentWorkspace.
	DevelopmentPrincipal = "development"
	// DevelopmentWorkspace is the workspace seeded for Development mode.
	DevelopmentWorkspace = "default"

	bearerScheme = "bearer"
	// CookieScheme is the OpenAPI security scheme of the session cookie.
	CookieScheme = "cookie"

	// SessionCookie holds the session token of a signed-in browser, and nothing else does.
	SessionCookie = "platform-session"
)

// How a caller authenticated.
const (
	CredentialDevelopment = "development"
	CredentialSession     = "session"
	CredentialPAT         = "pat"
	CredentialBearer      = "bearer"
)

// Caller is who calls: an authenticated request. ID is the Principal, empty for a caller that
// authenticated but resolves to no Principal (an OIDC subject nobody linked yet).
type Caller struct {
	ID         string
	Credential string
	// DefaultWorkspace, when set, is the workspace the caller acts in unless a request selects
	// another (Development mode); with an identity store it is looked up when a request needs it.
	DefaultWorkspace string
	// PAT is set when Credential is CredentialPAT.
	PAT *PATGrant
}

// PATGrant is what a validated personal access token carries: the one workspace it reaches (its
// id) and its permission allow-list.
type PATGrant struct {
	TokenID     string
	WorkspaceID string
	Allow       identity.Permissions
}

func CallerFrom(ctx context.Context) (Caller, bool) {
	a, ok := ctx.Value(authenticatedKey{}).(*authenticated)
	if !ok || !a.hasCaller {
		return Caller{}, false
	}
	return a.caller, true
}

// authenticated is what authenticate learned of a request, under one context key: each value
// added to a request's context costs two allocations, at every request.
type authenticated struct {
	overTLS   bool
	host      string
	caller    Caller
	hasCaller bool
	// session is the session cookie's token that authenticated the request.
	session string
}

func (a *authenticated) authenticate(c Caller) { a.caller, a.hasCaller = c, true }

// authenticationMode reads and checks the mode: Development and Disabled exist for tests and
// diagnostics only, so any other environment refuses to start with them.
func authenticationMode(cfg *config.Config) (string, error) {
	mode := cfg.GetOr(authModeKey, ModeLocal)
	switch mode {
	case ModeDevelopment, ModeDisabled:
		if !cfg.IsDevelopmentOrTesting() {
			return "", fmt.Errorf("%s=%s is allowed only when %s is %s or %s (it is %s)",
				authModeKey, mode, config.EnvironmentVariable, config.Development, config.Testing, cfg.Environment())
		}
	case ModeLocal, ModeOidc, ModeHybrid:
	default:
		return "", fmt.Errorf("%s=%q: must be %s, %s, %s, %s or %s", authModeKey, mode,
			ModeLocal, ModeOidc, ModeHybrid, ModeDevelopment, ModeDisabled)
	}
	return mode, nil
}

// authenticate attaches the caller's principal. Development mode makes every caller the
// development principal. Otherwise a request with an Authorization: Bearer header is
// authenticated by that token alone: a personal access token (see authenticatePAT), or in modes
// Oidc and Hybrid a JWT access token (see authenticateJWT). Without one, the session cookie is
// resolved to its Principal in modes Local, Oidc and Hybrid when the server has the identity
// service. An invalid or missing credential leaves the request unauthenticated (401 on protected
// operations).
func (s *Server) authenticate(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		a := &authenticated{overTLS: ctx.TLS() != nil, host: ctx.Host()}
		token, bearer := bearerToken(ctx.Header("Authorization"))
		var err error
		switch {
		case s.mode == ModeDevelopment:
			a.authenticate(Caller{ID: DevelopmentPrincipal, Credential: CredentialDevelopment, DefaultWorkspace: DevelopmentWorkspace})
		case bearer && !strings.HasPrefix(token, personalAccessTokenPrefix):
			if ctx, err = s.snapshot(ctx); err != nil {
				break
			}
			caller, ok, err := s.authenticateJWT(ctx.Context(), token)
			if err != nil {
				WriteError(api, ctx, Internal(err))
				return
			}
			if ok {
				a.authenticate(caller)
			}
		case bearer:
			ctx, err = s.authenticatePAT(ctx, a, token)
		case s.Sessions() && ctx.Header("Cookie") != "":
			cookie, cerr := huma.ReadCookie(ctx, SessionCookie)
			if cerr != nil || cookie.Value == "" {
				break
			}
			if ctx, err = s.snapshot(ctx); err != nil {
				break
			}
			p, err := s.identity.Authenticate(ctx.Context(), cookie.Value)
			if errors.Is(err, identity.ErrUnauthenticated) {
				break
			}
			if err != nil {
				WriteError(api, ctx, Internal(err))
				return
			}
			// The default workspace is looked up only by requests that select none (see workspace).
			a.authenticate(Caller{ID: p.ID, Credential: CredentialSession})
			a.session = cookie.Value
		}
		if err != nil {
			WriteError(api, ctx, Internal(err))
			return
		}
		next(huma.WithValue(ctx, authenticatedKey{}, a))
	}
}

// authenticatePAT attaches the Principal of a valid personal access token, with the token's
// workspace and allow-list, which authorization intersects with the live rights. An invalid,
// revoked or expired token leaves the request unauthenticated, like a missing one: a presented
// bearer token is the request's credential and the session cookie is not consulted. The error
// is an internal one (the store failed).
func (s *Server) authenticatePAT(ctx huma.Context, a *authenticated, token string) (huma.Context, error) {
	// Disabled mode has no callers; without the identity store there are no tokens.
	if s.identity == nil || s.mode == ModeDisabled {
		return ctx, nil
	}
	ctx, err := s.snapshot(ctx)
	if err != nil {
		return ctx, err
	}
	pat, err := s.identity.AuthenticatePAT(ctx.Context(), token)
	if errors.Is(err, identity.ErrUnauthenticated) {
		return ctx, nil
	}
	if err != nil {
		return ctx, err
	}
	a.authenticate(Caller{
		ID: pat.PrincipalID, Credential: CredentialPAT,
		PAT: &PATGrant{TokenID: pat.ID, WorkspaceID: pat.WorkspaceID, Allow: pat.Permissions},
	})
	return ctx, nil
}

// snapshot reads the identity generation once for the request: what it resolves of its caller
// (its token or session, its rights in the workspace) is then checked against the store as of
// now, from memory when nothing changed since (identity.Service.Snapshot).
func (s *Server) snapshot(ctx huma.Context) (huma.Context, error) {
	if s.identity == nil {
		return ctx, nil
	}
	snapshot, err := s.identity.Snapshot(ctx.Context())
	if err != nil {
		return ctx, err
	}
	return huma.WithContext(ctx, snapshot), nil
}

// bearerToken returns the token of an Authorization: Bearer header (the scheme is
// case-insensitive).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// localAccounts reports whether callers sign in with local accounts: mode Local or Hybrid on a
// server that has the identity service.
func (s *Server) LocalAccounts() bool {
	return s.identity != nil && (s.mode == ModeLocal || s.mode == ModeHybrid)
}

// sessions reports whether session cookies authenticate: the server has the identity service and
// callers sign in, locally or through the OpenID Provider.
func (s *Server) Sessions() bool {
	return s.identity != nil && (s.mode == ModeLocal || s.mode == ModeOidc || s.mode == ModeHybrid)
}

type (
	// tlsKey holds whether a web page's request came over TLS (WithTLS); authenticatedKey holds
	// the *authenticated of a request that passed the authenticate middleware.
	tlsKey           struct{}
	authenticatedKey struct{}
)

// OverTLS reports whether the request came over TLS (its cookies are then Secure).
func OverTLS(ctx context.Context) bool {
	if a, ok := ctx.Value(authenticatedKey{}).(*authenticated); ok {
		return a.overTLS
	}
	v, _ := ctx.Value(tlsKey{}).(bool)
	return v
}

// WithTLS records whether a request that did not pass the authenticate middleware (a web page)
// came over TLS, for OverTLS.
func WithTLS(ctx context.Context, overTLS bool) context.Context {
	return context.WithValue(ctx, tlsKey{}, overTLS)
}

// RequestHost is the Host the request was sent to.
func RequestHost(ctx context.Context) string {
	if a, ok := ctx.Value(authenticatedKey{}).(*authenticated); ok {
		return a.host
	}
	return ""
}

// SessionToken is the session cookie's token that authenticated the request, "" for any other
// credential.
func SessionToken(ctx context.Context) string {
	if a, ok := ctx.Value(authenticatedKey{}).(*authenticated); ok {
		return a.session
	}
	return ""
}

// protected is the security requirement of every operation that needs a caller: a JWT bearer
// token (or PAT) or the session cookie.
var protected = []map[string][]string{{bearerScheme: {}}, {CookieScheme: {}}}

func securitySchemes() map[string]*huma.SecurityScheme {
	return map[string]*huma.SecurityScheme{
		bearerScheme: {Type: "http", Scheme: "bearer", BearerFormat: "JWT",
			Description: "An OIDC access token (JWT) for the configured audience, or a personal access token."},
		CookieScheme: {Type: "apiKey", In: "cookie", Name: SessionCookie,
			Description: "The session cookie of a signed-in browser."},
	}
}
