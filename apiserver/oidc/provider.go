package oidc

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Errors of verification and sign-in. They never carry a token, a claim, an issuer or a subject:
// the messages of the underlying library do, so they are dropped.
var (
	// ErrInvalidToken: the token is malformed, badly signed, expired, or for another issuer or
	// audience.
	ErrInvalidToken = errors.New("oidc: invalid token")
	// ErrUnavailable: the provider's discovery document could not be read or is unsafe; nothing
	// can be verified until it is.
	ErrUnavailable = errors.New("oidc: the OpenID Provider is unavailable")
	// ErrSignInFailed: the authorization code could not be redeemed or the provider returned no
	// valid ID token for it.
	ErrSignInFailed = errors.New("oidc: sign-in failed")
)

const (
	// maxTokenLength bounds what is parsed at all; real tokens are a few KiB.
	maxTokenLength = 16 << 10
	// rediscoverAfter spaces the retries of a failed discovery, so that a provider outage does
	// not turn every request into a request to the provider.
	rediscoverAfter = 5 * time.Second
	// providerTimeout bounds each request to the provider.
	providerTimeout = 10 * time.Second
)

// signingAlgorithms are the asymmetric algorithms accepted on tokens: a symmetric (HS*) token
// could be minted by anyone who holds the client secret, and "none" by anyone.
var signingAlgorithms = []string{
	gooidc.RS256, gooidc.RS384, gooidc.RS512, gooidc.ES256, gooidc.ES384, gooidc.ES512,
	gooidc.PS256, gooidc.PS384, gooidc.PS512, gooidc.EdDSA,
}

// Provider is the OpenID Provider of a Config. It reads the discovery document on first use,
// not at construction, so that the platform starts while the provider is down; a failed
// discovery is retried at most every few seconds. The provider's signing keys are fetched and
// refreshed (on an unknown key id) as tokens need them.
type Provider struct {
	cfg    Config
	client *http.Client

	mu         sync.Mutex
	discovered *discovered
	failedAt   time.Time
}

type discovered struct {
	endpoint     oauth2.Endpoint
	accessTokens *gooidc.IDTokenVerifier
	idTokens     *gooidc.IDTokenVerifier
}

// NewProvider returns the provider of cfg, which must be valid (see Config.Validate).
func NewProvider(cfg Config) *Provider {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	return &Provider{cfg: cfg, client: &http.Client{Timeout: providerTimeout, Transport: transport}}
}

// Config is the configuration of the provider.
func (p *Provider) Config() Config { return p.cfg }

func (p *Provider) discover(ctx context.Context) (*discovered, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.discovered != nil {
		return p.discovered, nil
	}
	if !p.failedAt.IsZero() && time.Since(p.failedAt) < rediscoverAfter {
		return nil, ErrUnavailable
	}
	d, err := p.discoverOnce(ctx)
	if err != nil {
		p.failedAt = time.Now()
		return nil, err
	}
	p.discovered = d
	return d, nil
}

func (p *Provider) discoverOnce(ctx context.Context) (*discovered, error) {
	// The discovery outlives the request that triggered it: the key set keeps the client (not
	// the context), and a cancelled request should not fail the discovery for the others.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), providerTimeout)
	defer cancel()
	provider, err := gooidc.NewProvider(gooidc.ClientContext(ctx, p.client), p.cfg.Authority)
	if err != nil {
		// The error may repeat the issuer; the caller learns only that discovery failed.
		return nil, fmt.Errorf("%w: discovery failed", ErrUnavailable)
	}
	var metadata struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := provider.Claims(&metadata); err != nil {
		return nil, fmt.Errorf("%w: unreadable discovery document", ErrUnavailable)
	}
	endpoint := provider.Endpoint()
	if p.cfg.RequireHTTPSMetadata {
		for _, endpoint := range []string{metadata.JWKSURI, endpoint.AuthURL, endpoint.TokenURL} {
			if !strings.HasPrefix(endpoint, "https://") {
				return nil, fmt.Errorf("%w: the discovery document names an endpoint that is not https while RequireHttpsMetadata is true", ErrUnavailable)
			}
		}
	}
	return &discovered{
		endpoint: endpoint,
		accessTokens: provider.Verifier(&gooidc.Config{
			ClientID: p.cfg.Audience, SupportedSigningAlgs: signingAlgorithms,
		}),
		idTokens: provider.Verifier(&gooidc.Config{
			ClientID: p.cfg.ClientID, SupportedSigningAlgs: signingAlgorithms,
		}),
	}, nil
}

// Verifier verifies JWT bearer tokens issued to the platform as a resource server. The kube API
// authenticator and the service API share it.
type Verifier struct {
	provider *Provider
}

// NewVerifier returns the access token verifier of cfg's provider.
func NewVerifier(cfg Config) *Verifier { return NewProvider(cfg).Verifier() }

// Verifier returns the access token verifier of the provider.
func (p *Provider) Verifier() *Verifier { return &Verifier{provider: p} }

// Verify checks a JWT access token: its signature against the provider's published keys, its
// issuer (exactly the Authority), its audience (the configured Audience among its aud) and its
// expiry and not-before times. It returns the token's iss and sub claims as they are, without any
// claim mapping. Errors are ErrInvalidToken or ErrUnavailable, without details of the token.
func (v *Verifier) Verify(ctx context.Context, raw string) (issuer, subject string, err error) {
	if len(raw) == 0 || len(raw) > maxTokenLength || strings.Count(raw, ".") != 2 {
		return "", "", ErrInvalidToken
	}
	d, err := v.provider.discover(ctx)
	if err != nil {
		return "", "", err
	}
	token, err := d.accessTokens.Verify(ctx, raw)
	if err != nil || token.Subject == "" {
		return "", "", ErrInvalidToken
	}
	return token.Issuer, token.Subject, nil
}

// SignIn is what the authorization request of one interactive sign-in needs to be checked when the
// browser comes back: the state it must return, the nonce the ID token must carry, and the PKCE
// code verifier whose S256 challenge was sent.
type SignIn struct {
	State, Nonce, CodeVerifier string
}

// AuthCodeURL returns the provider's authorization URL for the authorization code flow with PKCE
// (S256), the state and the nonce of in, redirecting back to redirectURL.
func (p *Provider) AuthCodeURL(ctx context.Context, redirectURL string, in SignIn) (string, error) {
	d, err := p.discover(ctx)
	if err != nil {
		return "", err
	}
	return p.oauth2Config(d, redirectURL).AuthCodeURL(in.State, gooidc.Nonce(in.Nonce), oauth2.S256ChallengeOption(in.CodeVerifier)), nil
}

// Exchange redeems the authorization code with the PKCE code verifier of in, then verifies the ID
// token of the response: signature, issuer, audience (the ClientID; with several audiences the
// authorized party must be the ClientID too), expiry, and the nonce of in. It returns the ID
// token's iss and sub claims as they are.
func (p *Provider) Exchange(ctx context.Context, redirectURL, code string, in SignIn) (issuer, subject string, err error) {
	d, err := p.discover(ctx)
	if err != nil {
		return "", "", err
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, p.client)
	token, err := p.oauth2Config(d, redirectURL).Exchange(ctx, code, oauth2.VerifierOption(in.CodeVerifier))
	if err != nil {
		return "", "", ErrSignInFailed
	}
	raw, _ := token.Extra("id_token").(string)
	if raw == "" || len(raw) > maxTokenLength {
		return "", "", ErrSignInFailed
	}
	idToken, err := d.idTokens.Verify(ctx, raw)
	if err != nil || idToken.Subject == "" || subtle.ConstantTimeCompare([]byte(idToken.Nonce), []byte(in.Nonce)) != 1 || in.Nonce == "" {
		return "", "", ErrSignInFailed
	}
	if len(idToken.Audience) > 1 {
		var claims struct {
			AuthorizedParty string `json:"azp"`
		}
		if err := idToken.Claims(&claims); err != nil || claims.AuthorizedParty != p.cfg.ClientID {
			return "", "", ErrSignInFailed
		}
	}
	return idToken.Issuer, idToken.Subject, nil
}

func (p *Provider) oauth2Config(d *discovered, redirectURL string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret,
		Endpoint: d.endpoint, RedirectURL: redirectURL, Scopes: p.cfg.Scopes,
	}
}

// RedirectURL is the redirect URI of a sign-in started by a request to origin (scheme and host,
// such as https://platform.example): the configured RedirectUrl, else origin with the callback
// path.
func (p *Provider) RedirectURL(origin string) string {
	if p.cfg.RedirectURL != "" {
		return p.cfg.RedirectURL
	}
	return strings.TrimSuffix(origin, "/") + p.cfg.CallbackPath
}

// NewSignIn returns fresh, random state, nonce and PKCE code verifier.
func NewSignIn() SignIn {
	return SignIn{State: oauth2.GenerateVerifier(), Nonce: oauth2.GenerateVerifier(), CodeVerifier: oauth2.GenerateVerifier()}
}
