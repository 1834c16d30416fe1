package oidc_test

import (
	"context"
	"net"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/oidc"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/test/oidc/oidctest"
)

const (
	audience      = "https://platform.test/api"
	otherAudience = "https://other.test/api"
	// redirectURI is registered at the provider but never visited: the tests stop at the redirect.
	redirectURI = "http://127.0.0.1:1/api/auth/oidc/callback"
)

func TestConfigFromChecksTheSettings(t *testing.T) {
	complete := map[string]string{
		oidc.KeyAuthority: "https://login.example.test/realm", oidc.KeyAudience: audience, oidc.KeyClientID: "platform",
	}
	with := func(changes map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range complete {
			out[k] = v
		}
		for k, v := range changes {
			if v == "-" {
				delete(out, k)
			} else {
				out[k] = v
			}
		}
		return out
	}
	cases := map[string]struct {
		settings map[string]string
		errs     []string
	}{
		"complete":                        {settings: complete},
		"authority is required":           {settings: with(map[string]string{oidc.KeyAuthority: "-"}), errs: []string{oidc.KeyAuthority + " is required"}},
		"audience is required":            {settings: with(map[string]string{oidc.KeyAudience: "-"}), errs: []string{oidc.KeyAudience + " is required"}},
		"client id is required":           {settings: with(map[string]string{oidc.KeyClientID: "-"}), errs: []string{oidc.KeyClientID + " is required"}},
		"everything missing is reported":  {settings: map[string]string{}, errs: []string{oidc.KeyAuthority, oidc.KeyAudience, oidc.KeyClientID}},
		"http authority needs the opt-in": {settings: with(map[string]string{oidc.KeyAuthority: "http://127.0.0.1:9000"}), errs: []string{"http:// URL while " + oidc.KeyRequireHTTPSMetadata + " is true"}},
		"http authority with the opt-in":  {settings: with(map[string]string{oidc.KeyAuthority: "http://127.0.0.1:9000", oidc.KeyRequireHTTPSMetadata: "false"})},
		"authority with user information": {settings: with(map[string]string{oidc.KeyAuthority: "https://u:p@login.example.test"}), errs: []string{oidc.KeyAuthority + " must be an absolute"}},
		"relative authority":              {settings: with(map[string]string{oidc.KeyAuthority: "login.example.test"}), errs: []string{oidc.KeyAuthority + " must be an absolute"}},
		"require https is a boolean":      {settings: with(map[string]string{oidc.KeyRequireHTTPSMetadata: "maybe"}), errs: []string{oidc.KeyRequireHTTPSMetadata + " must be true or false"}},
		"callback path is a clean path":   {settings: with(map[string]string{oidc.KeyCallbackPath: "/a/../b"}), errs: []string{oidc.KeyCallbackPath}},
		"redirect URL is absolute":        {settings: with(map[string]string{oidc.KeyRedirectURL: "/signin-oidc"}), errs: []string{oidc.KeyRedirectURL}},
		"redirect URL and path disagree":  {settings: with(map[string]string{oidc.KeyRedirectURL: "https://p.example.test/a", oidc.KeyCallbackPath: "/b"}), errs: []string{oidc.KeyRedirectURL}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := oidc.ConfigFrom(config.FromMap(config.Production, tc.settings))
			if len(tc.errs) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			for _, want := range tc.errs {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring("u:p@"), "errors name settings, not values")
		})
	}

	g := NewWithT(t)
	cfg, err := oidc.ConfigFrom(config.FromMap(config.Production, with(map[string]string{oidc.KeyScopes: "profile, email"})))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.RequireHTTPSMetadata).To(BeTrue(), "the default")
	g.Expect(cfg.CallbackPath).To(Equal(oidc.DefaultCallbackPath))
	g.Expect(cfg.Scopes).To(Equal([]string{"openid", "profile", "email"}))
	cfg, err = oidc.ConfigFrom(config.FromMap(config.Production, with(map[string]string{oidc.KeyRedirectURL: "https://p.example.test/signin-oidc", oidc.KeyScopes: "[openid profile]"})))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.CallbackPath).To(Equal("/signin-oidc"))
	g.Expect(cfg.Scopes).To(Equal([]string{"openid", "profile"}))
}

func startProvider(t *testing.T) (*oidctest.Provider, oidc.Config) {
	provider := oidctest.Start(t, oidctest.Options{ClientID: "platform", ClientSecret: "platform-secret",
		RedirectURIs: []string{redirectURI}, Resources: []string{audience, otherAudience}})
	return provider, oidc.Config{Authority: provider.Issuer, Audience: audience, ClientID: "platform", ClientSecret: "platform-secret",
		CallbackPath: oidc.DefaultCallbackPath, Scopes: []string{"openid"}}
}

func TestTheVerifierAcceptsOnlySignedTokensOfTheIssuerForTheAudience(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	provider, cfg := startProvider(t)
	verifier := oidc.NewVerifier(cfg)

	tokens, err := provider.SignIn(ctx, "Alice", redirectURI, audience)
	g.Expect(err).NotTo(HaveOccurred())
	iss, sub, err := verifier.Verify(ctx, tokens.AccessToken)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(iss).To(Equal(provider.Issuer))
	g.Expect(sub).To(Equal("Alice"), "sub as issued, case preserved")

	other, err := provider.SignIn(ctx, "Alice", redirectURI, otherAudience)
	g.Expect(err).NotTo(HaveOccurred())
	parts := strings.Split(tokens.AccessToken, ".")
	tampered := parts[0] + "." + parts[1] + "." + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, parts[2])
	// The payload of another audience's token under this token's signature.
	spliced := parts[0] + "." + strings.Split(other.AccessToken, ".")[1] + "." + parts[2]
	for name, raw := range map[string]string{
		"another audience":                  other.AccessToken,
		"an ID token (audience the client)": tokens.IDToken,
		"a tampered signature":              tampered,
		"a spliced payload":                 spliced,
		"unsigned":                          parts[0] + "." + parts[1] + ".",
		"garbage":                           "not.a.jwt",
		"empty":                             "",
		"one segment":                       "abc",
		"huge":                              strings.Repeat("a", 20000) + ".b.c",
	} {
		_, _, err := verifier.Verify(ctx, raw)
		g.Expect(err).To(MatchError(oidc.ErrInvalidToken), name)
		g.Expect(err.Error()).NotTo(ContainSubstring(provider.Issuer), "errors hold no issuer")
	}

	// A verifier of another issuer rejects the token: discovery names the provider's issuer, not
	// the configured one.
	wrongIssuer := cfg
	wrongIssuer.Authority = strings.Replace(provider.Issuer, "127.0.0.1", "localhost", 1)
	_, _, err = oidc.NewVerifier(wrongIssuer).Verify(ctx, tokens.AccessToken)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).NotTo(ContainSubstring("localhost"))
}

func TestAnUnreachableProviderVerifiesNothing(t *testing.T) {
	g := NewWithT(t)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := listener.Addr().String()
	listener.Close()
	verifier := oidc.NewVerifier(oidc.Config{Authority: "http://" + addr, Audience: audience, ClientID: "platform"})
	_, _, err = verifier.Verify(context.Background(), "a.b.c")
	g.Expect(err).To(MatchError(oidc.ErrUnavailable))
	_, _, err = verifier.Verify(context.Background(), "a.b.c")
	g.Expect(err).To(MatchError(oidc.ErrUnavailable), "the failure is remembered for a few seconds")
}
