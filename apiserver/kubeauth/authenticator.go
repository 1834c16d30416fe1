package kubeauth

import (
	"context"
	"errors"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/user"

	"platform.dev/platform/apiserver/identity"
)

// BearerVerifier verifies an OIDC JWT bearer token (signature, issuer, audience, expiry) and
// returns its exact iss and sub.
type BearerVerifier interface {
	Verify(ctx context.Context, raw string) (issuer, subject string, err error)
}

// Authenticator authenticates the bearer tokens of Principals on the kube API: personal access
// tokens always, OIDC JWTs when JWT is set. Tokens are checked on every request, so a revoked
// or expired token, or a disabled Principal or workspace, fails at once.
type Authenticator struct {
	Identity *identity.Service
	// JWT verifies OIDC bearer tokens; nil when OIDC is not configured.
	JWT BearerVerifier
}

// UnresolvedUser is the kube user of a valid OIDC token whose (iss, sub) no Principal is linked
// to: authenticated, but granted nothing beyond discovery.
const UnresolvedUser = "platform:unresolved"

var errInvalidToken = errors.New("invalid bearer token")

// Request is the request authenticator to plug into the control plane.
func (a *Authenticator) Request() authenticator.Request { return bearertoken.New(a) }

// AuthenticateToken implements authenticator.Token. Errors never carry the token.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if strings.HasPrefix(token, identity.PATPrefix) {
		pat, err := a.Identity.AuthenticatePAT(ctx, token)
		if errors.Is(err, identity.ErrUnauthenticated) {
			return nil, false, errInvalidToken
		}
		if err != nil {
			return nil, false, err
		}
		permissions := make([]string, 0, len(identity.Catalog))
		for _, p := range pat.Permissions.List() {
			permissions = append(permissions, string(p))
		}
		return response(pat.PrincipalID, map[string][]string{
			ExtraPrincipalID:    {pat.PrincipalID},
			ExtraCredential:     {CredentialPAT},
			ExtraPATWorkspaceID: {pat.WorkspaceID},
			ExtraPATPermissions: permissions,
			ExtraTokenID:        {pat.ID},
		}), true, nil
	}
	if a.JWT == nil {
		// Neither a PAT nor, without OIDC, a JWT: not ours (the bearer authenticator then
		// rejects it as invalid).
		return nil, false, nil
	}
	issuer, subject, err := a.JWT.Verify(ctx, token)
	if err != nil {
		return nil, false, errInvalidToken
	}
	p, err := a.Identity.PrincipalByExternalIdentity(ctx, issuer, subject)
	if errors.Is(err, identity.ErrNoLinkedPrincipal) {
		// Authenticated but unresolved until an administrator links the identity; no issuer or
		// subject in the user name, which shows up in responses.
		return &authenticator.Response{User: &user.DefaultInfo{Name: UnresolvedUser}}, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return response(p.ID, map[string][]string{ExtraPrincipalID: {p.ID}, ExtraCredential: {CredentialBearer}}), true, nil
}

func response(principalID string, extra map[string][]string) *authenticator.Response {
	return &authenticator.Response{User: &user.DefaultInfo{Name: UserPrefix + principalID, UID: principalID, Extra: extra}}
}
