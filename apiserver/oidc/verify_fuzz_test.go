package oidc_test

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/oidc"
)

// inProcessProvider serves a discovery document and a key set from this process, for tests that
// need tokens no real provider would issue (expired, symmetric, unsigned) and for fuzzing.
type inProcessProvider struct {
	issuer string
	key    *rsa.PrivateKey
}

func startInProcessProvider(t testing.TB) *inProcessProvider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &inProcessProvider{key: key}
	mux := http.NewServeMux()
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	p.issuer = server.URL
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": p.issuer, "jwks_uri": p.issuer + "/jwks",
			"authorization_endpoint": p.issuer + "/auth", "token_endpoint": p.issuer + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	return p
}

func b64(data []byte) string { return base64.RawURLEncoding.EncodeToString(data) }

func (p *inProcessProvider) token(header, claims map[string]any) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	signingInput := b64(h) + "." + b64(c)
	switch header["alg"] {
	case "RS256":
		digest := sha256.Sum256([]byte(signingInput))
		sig, _ := rsa.SignPKCS1v15(rand.Reader, p.key, crypto.SHA256, digest[:])
		return signingInput + "." + b64(sig)
	case "HS256":
		mac := hmac.New(sha256.New, []byte("the client secret"))
		mac.Write([]byte(signingInput))
		return signingInput + "." + b64(mac.Sum(nil))
	}
	return signingInput + "."
}

func (p *inProcessProvider) claims(changes map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": p.issuer, "sub": "Alice", "aud": audience, "exp": now.Add(time.Minute).Unix(), "iat": now.Unix()}
	for k, v := range changes {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

var rs256 = map[string]any{"alg": "RS256", "kid": "k1", "typ": "at+jwt"}

func TestTheVerifierRejectsExpiredSymmetricAndUnsignedTokens(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := startInProcessProvider(t)
	v := oidc.NewVerifier(oidc.Config{Authority: p.issuer, Audience: audience, ClientID: "platform"})

	iss, sub, err := v.Verify(ctx, p.token(rs256, p.claims(nil)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]string{iss, sub}).To(Equal([]string{p.issuer, "Alice"}))
	_, _, err = v.Verify(ctx, p.token(rs256, p.claims(map[string]any{"aud": []string{"https://x.test", audience}})))
	g.Expect(err).NotTo(HaveOccurred(), "the audience among several")

	for name, token := range map[string]string{
		"expired":          p.token(rs256, p.claims(map[string]any{"exp": time.Now().Add(-time.Second).Unix()})),
		"without expiry":   p.token(rs256, p.claims(map[string]any{"exp": nil})),
		"not yet valid":    p.token(rs256, p.claims(map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})),
		"another issuer":   p.token(rs256, p.claims(map[string]any{"iss": p.issuer + "/"})),
		"another audience": p.token(rs256, p.claims(map[string]any{"aud": "platform"})),
		"without subject":  p.token(rs256, p.claims(map[string]any{"sub": nil})),
		"HS256":            p.token(map[string]any{"alg": "HS256", "kid": "k1"}, p.claims(nil)),
		"alg none":         p.token(map[string]any{"alg": "none"}, p.claims(nil)),
		"unknown key id":   p.token(map[string]any{"alg": "RS256", "kid": "k2"}, p.claims(nil)),
	} {
		_, _, err := v.Verify(ctx, token)
		g.Expect(err).To(MatchError(oidc.ErrInvalidToken), name)
	}
}

// Bearer tokens come from anyone: Verify never panics, fails only with its own errors, and what
// it accepts is of the issuer with a subject.
func FuzzVerify(f *testing.F) {
	p := startInProcessProvider(f)
	v := oidc.NewVerifier(oidc.Config{Authority: p.issuer, Audience: audience, ClientID: "platform"})
	for _, seed := range []string{
		p.token(rs256, p.claims(nil)),
		p.token(rs256, p.claims(map[string]any{"exp": 1})),
		p.token(map[string]any{"alg": "none"}, p.claims(nil)),
		"a.b.c", "..", "eyJhbGciOiJSUzI1NiJ9..", "", "\x00.\x00.\x00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		iss, sub, err := v.Verify(context.Background(), raw)
		if err != nil {
			if !errors.Is(err, oidc.ErrInvalidToken) && !errors.Is(err, oidc.ErrUnavailable) {
				t.Fatalf("Verify(%q): unexpected error %v", raw, err)
			}
			return
		}
		if iss != p.issuer || sub == "" {
			t.Fatalf("Verify(%q) accepted issuer %q, subject %q", raw, iss, sub)
		}
	})
}
