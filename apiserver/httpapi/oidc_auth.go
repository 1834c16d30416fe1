package httpapi

import (
	"context"
	"errors"
	"fmt"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/oidc"
	"platform.dev/platform/internal/config"
)

const (
	// personalAccessTokenPrefix starts every personal access token; other bearer tokens are JWTs.
	personalAccessTokenPrefix = identity.PATPrefix
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
