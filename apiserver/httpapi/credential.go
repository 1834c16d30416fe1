package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"platform.dev/platform/apiserver/identity"
)

// Credential is what authenticated a request, kept by a long-lived connection (the real-time
// hub) to authenticate it again while it lasts: a revoked token, an ended session or a disabled
// Principal then ends the connection. It never leaves the process: not logged, shown or stored.
type Credential struct {
	kind  string
	token string
}

// AccessTokenParam carries a bearer token in the query of the requests that browsers cannot give
// headers (a WebSocket upgrade); only the hub's routes read it.
const AccessTokenParam = "access_token"

// AuthenticateRequest authenticates a plain net/http request as the authenticate middleware does
// the API's: the bearer token of the Authorization header, else of the access_token query
// parameter, else the session cookie. ok is false when none authenticates; err is internal.
func (s *Server) AuthenticateRequest(r *http.Request) (caller Caller, cred Credential, ok bool, err error) {
	cred, ok = s.CredentialOf(r)
	if !ok {
		return Caller{}, Credential{}, false, nil
	}
	caller, ok, err = s.Reauthenticate(r.Context(), cred)
	return caller, cred, ok, err
}

// CredentialOf is the credential a plain net/http request carries, as AuthenticateRequest reads
// it, without authenticating it; ok is false when it carries none.
func (s *Server) CredentialOf(r *http.Request) (Credential, bool) {
	switch {
	case s.mode == ModeDevelopment:
		return Credential{kind: CredentialDevelopment}, true
	case s.mode == ModeDisabled:
		return Credential{}, false
	}
	if token, bearer := bearerToken(r.Header.Get("Authorization")); bearer {
		return Credential{kind: CredentialBearer, token: token}, true
	}
	if token := strings.TrimSpace(r.URL.Query().Get(AccessTokenParam)); token != "" {
		return Credential{kind: CredentialBearer, token: token}, true
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" && s.Sessions() {
		return Credential{kind: CredentialSession, token: c.Value}, true
	}
	return Credential{}, false
}

// Digest is the SHA-256 digest of what the caller sends (the bearer token, the session cookie's
// value): the key under which the rate limits remember a credential they refused
// (ratelimit.Counter.RememberBearer), as the service API's and the kube API's refusals do for
// tokens.
func (c Credential) Digest() [32]byte { return sha256.Sum256([]byte(c.token)) }

// Reauthenticate resolves a credential again, as a request bearing it would be: ok is false once
// it no longer authenticates (a revoked or expired token, an ended session, a disabled Principal).
func (s *Server) Reauthenticate(ctx context.Context, cred Credential) (Caller, bool, error) {
	switch cred.kind {
	case CredentialDevelopment:
		if s.mode != ModeDevelopment {
			return Caller{}, false, nil
		}
		return Caller{ID: DevelopmentPrincipal, Credential: CredentialDevelopment, DefaultWorkspace: DevelopmentWorkspace}, true, nil
	case CredentialBearer:
		if !strings.HasPrefix(cred.token, personalAccessTokenPrefix) {
			return s.authenticateJWT(ctx, cred.token)
		}
		if s.identity == nil || s.mode == ModeDisabled {
			return Caller{}, false, nil
		}
		pat, err := s.identity.AuthenticatePAT(ctx, cred.token)
		if errors.Is(err, identity.ErrUnauthenticated) {
			return Caller{}, false, nil
		}
		if err != nil {
			return Caller{}, false, err
		}
		return Caller{ID: pat.PrincipalID, Credential: CredentialPAT,
			PAT: &PATGrant{TokenID: pat.ID, WorkspaceID: pat.WorkspaceID, Allow: pat.Permissions}}, true, nil
	case CredentialSession:
		if !s.Sessions() {
			return Caller{}, false, nil
		}
		p, err := s.identity.Authenticate(ctx, cred.token)
		if errors.Is(err, identity.ErrUnauthenticated) {
			return Caller{}, false, nil
		}
		if err != nil {
			return Caller{}, false, err
		}
		return Caller{ID: p.ID, Credential: CredentialSession}, true, nil
	}
	return Caller{}, false, nil
}

// WorkspaceContext resolves the workspace a caller names (its id or route name) as a request of
// that workspace would: its context and the caller's permissions there, or 404 when it is not
// the caller's (or not active).
func (s *Server) WorkspaceContext(ctx context.Context, caller Caller, workspace string) (RequestContext, error) {
	if caller.ID == "" {
		return RequestContext{}, ErrNoPrincipal
	}
	var (
		rc  RequestContext
		err error
	)
	if s.identity == nil || caller.Credential == CredentialDevelopment {
		rc, err = s.developmentContext(caller, workspace, "")
	} else {
		rc, err = s.IdentityContext(ctx, caller, workspace, "")
	}
	if err != nil {
		return rc, err
	}
	// The namespace's annotations carry the workspace's limits (LimitsOf), as a request's do.
	rc.annotations, err = s.workspaceNamespace(ctx, rc.Namespace)
	return rc, err
}

// Key identifies the credential without revealing it (a SHA-256 digest), for caches of what it
// may do.
func (c Credential) Key() string {
	sum := sha256.Sum256([]byte(c.kind + "\x00" + c.token))
	return hex.EncodeToString(sum[:])
}

// IsBearer reports whether the credential is a bearer token (a personal access token or a JWT),
// not a session or Development mode's.
func (c Credential) IsBearer() bool { return c.kind == CredentialBearer }
