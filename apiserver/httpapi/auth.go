package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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
	cookieScheme = "cookie"

	// SessionCookie holds the session token of a signed-in browser, and nothing else does.
	SessionCookie = "platform-session"
)

// Principal is who calls. DefaultWorkspace, when set, is the workspace they act in unless a
// request selects another; with local accounts it is looked up when a request needs it.
type Principal struct {
	ID               string
	DefaultWorkspace string
}

type principalKey struct{}

func principalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

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
// development principal. Local and Hybrid modes, when the server has local accounts, resolve the
// session cookie to its Principal; an invalid or missing cookie leaves the
// request unauthenticated (401 on protected operations). Other modes have no callers yet.
func (s *Server) authenticate(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		ctx = huma.WithValue(ctx, tlsKey{}, ctx.TLS() != nil)
		switch {
		case s.mode == ModeDevelopment:
			ctx = huma.WithValue(ctx, principalKey{}, Principal{ID: DevelopmentPrincipal, DefaultWorkspace: DevelopmentWorkspace})
		case s.localAccounts():
			cookie, err := huma.ReadCookie(ctx, SessionCookie)
			if err != nil || cookie.Value == "" {
				break
			}
			p, err := s.identity.Authenticate(ctx.Context(), cookie.Value)
			if errors.Is(err, identity.ErrUnauthenticated) {
				break
			}
			if err != nil {
				_ = huma.WriteErr(api, ctx, http.StatusInternalServerError, "internal error")
				return
			}
			// The default workspace is looked up only by requests that select none (see workspace).
			ctx = huma.WithValue(ctx, principalKey{}, Principal{ID: p.ID})
			ctx = huma.WithValue(ctx, sessionKey{}, cookie.Value)
		}
		next(ctx)
	}
}

// localAccounts reports whether callers sign in with local accounts: mode Local or Hybrid on a
// server that has the identity service.
func (s *Server) localAccounts() bool {
	return s.identity != nil && (s.mode == ModeLocal || s.mode == ModeHybrid)
}

type (
	tlsKey     struct{}
	sessionKey struct{}
)

// overTLS reports whether the request came over TLS (its cookies are then Secure).
func overTLS(ctx context.Context) bool {
	v, _ := ctx.Value(tlsKey{}).(bool)
	return v
}

// requireAuthentication guards the operations that declare security requirements.
func requireAuthentication(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		if len(ctx.Operation().Security) == 0 {
			next(ctx)
			return
		}
		if _, ok := principalFrom(ctx.Context()); !ok {
			_ = huma.WriteErr(api, ctx, http.StatusUnauthorized, "authentication required")
			return
		}
		next(ctx)
	}
}

// protected is the security requirement of every operation that needs a caller: a JWT bearer
// token (or PAT) or the session cookie.
var protected = []map[string][]string{{bearerScheme: {}}, {cookieScheme: {}}}

func securitySchemes() map[string]*huma.SecurityScheme {
	return map[string]*huma.SecurityScheme{
		bearerScheme: {Type: "http", Scheme: "bearer", BearerFormat: "JWT",
			Description: "An OIDC access token (JWT) for the configured audience, or a personal access token."},
		cookieScheme: {Type: "apiKey", In: "cookie", Name: SessionCookie,
			Description: "The session cookie of a signed-in browser."},
	}
}
