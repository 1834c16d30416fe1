// Package oidctest runs a real OpenID Provider for tests: the npm package oidc-provider (a
// certified implementation) under the machine's Node.js, from test/oidc/provider.js, on a
// loopback port. It also drives the provider's sign-in pages as a browser would.
//
// The provider needs `npm ci` in test/oidc (.ci/run does it); without node or without the
// installed packages the tests that need it are skipped.
package oidctest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// Options configure the provider's one client.
type Options struct {
	// ClientID is "platform" when empty.
	ClientID string
	// ClientSecret makes the client confidential; a public client when empty.
	ClientSecret string
	// RedirectURIs of the client; at least one.
	RedirectURIs []string
	// Resources are the resource indicators for which the provider issues JWT access tokens, with
	// the resource as their audience; at least one.
	Resources []string
}

// Provider is a running OpenID Provider.
type Provider struct {
	// Issuer is http://127.0.0.1:<port>, the exact iss of its tokens.
	Issuer string
	opts   Options
}

const startTimeout = 30 * time.Second

// dir is test/oidc, where provider.js and its node_modules are.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// Start runs the provider until the test ends; it skips the test when node or the provider's npm
// packages are not installed.
func Start(t testing.TB, opts Options) *Provider {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("OIDC tests skipped: node is not on PATH (install Node.js, then run `npm ci` in test/oidc)")
	}
	if _, err := os.Stat(filepath.Join(dir(), "node_modules", "oidc-provider", "package.json")); err != nil {
		t.Skip("OIDC tests skipped: test/oidc/node_modules is missing (run `npm ci` in test/oidc)")
	}
	if opts.ClientID == "" {
		opts.ClientID = "platform"
	}
	cmd := exec.Command(node, "provider.js")
	cmd.Dir = dir()
	cmd.Env = append(os.Environ(),
		"OIDC_CLIENT_ID="+opts.ClientID,
		"OIDC_CLIENT_SECRET="+opts.ClientSecret,
		"OIDC_REDIRECT_URIS="+strings.Join(opts.RedirectURIs, ","),
		"OIDC_RESOURCES="+strings.Join(opts.Resources, ","),
	)
	// The provider exits when its stdin closes: when Cleanup closes it, and when this process
	// dies without cleaning up.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the OIDC provider: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("OIDC provider output:\n%s", stderr.String())
		}
	})

	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-ready:
	case <-exited:
		t.Fatalf("the OIDC provider exited before it was ready:\n%s", stderr.String())
	case <-time.After(startTimeout):
		t.Fatalf("the OIDC provider was not ready within %s:\n%s", startTimeout, stderr.String())
	}
	var hello struct {
		Issuer string `json:"issuer"`
	}
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Issuer == "" {
		t.Fatalf("the OIDC provider said %q instead of its issuer:\n%s", line, stderr.String())
	}
	return &Provider{Issuer: hello.Issuer, opts: opts}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Browser returns an HTTP client that acts like a browser: a cookie jar, redirects followed, and
// HTML preferred (so servers answer it as an interactive user, not as an API client).
func Browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: acceptHTML{http.DefaultTransport}, Timeout: 30 * time.Second}
}

type acceptHTML struct{ next http.RoundTripper }

func (a acceptHTML) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8")
	return a.next.RoundTrip(req)
}

var (
	formPattern  = regexp.MustCompile(`(?s)<form[^>]*\saction="([^"]*)"[^>]*>(.*?)</form>`)
	inputPattern = regexp.MustCompile(`<input([^>]*)>`)
	attrPattern  = regexp.MustCompile(`\s(name|value|type)="([^"]*)"`)
)

// CompleteInteractions takes the response of a request that led to the provider (such as the
// platform's sign-in start) and, as long as it is one of the provider's interaction pages, fills
// and submits its form: the login form with login as the login name (the subject) and any
// password, the consent form as it is. It returns the first response that is no interaction
// page, whose body the caller closes.
func (p *Provider) CompleteInteractions(client *http.Client, resp *http.Response, login string) (*http.Response, error) {
	for range 10 {
		if !strings.HasPrefix(resp.Request.URL.String(), p.Issuer+"/interaction/") {
			return resp, nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		form := formPattern.FindSubmatch(body)
		if form == nil {
			return nil, fmt.Errorf("no form on the provider's page %s (status %d): %s", resp.Request.URL.Path, resp.StatusCode, body)
		}
		values := url.Values{}
		for _, input := range inputPattern.FindAllSubmatch(form[2], -1) {
			attrs := map[string]string{}
			for _, a := range attrPattern.FindAllSubmatch(input[1], -1) {
				attrs[string(a[1])] = html.UnescapeString(string(a[2]))
			}
			switch attrs["name"] {
			case "":
			case "login":
				values.Set("login", login)
			case "password":
				values.Set("password", "any password")
			default:
				values.Set(attrs["name"], attrs["value"])
			}
		}
		action, err := resp.Request.URL.Parse(html.UnescapeString(string(form[1])))
		if err != nil {
			return nil, err
		}
		if resp, err = client.PostForm(action.String(), values); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("the provider kept asking after 10 forms")
}

// Tokens are what the provider issued to the client for one sign-in.
type Tokens struct {
	AccessToken string
	IDToken     string
}

// SignIn runs the authorization code flow with PKCE as the provider's client itself (not through
// the platform) for the user login, asking for a JWT access token for resource, and returns the
// tokens. redirectURI must be one of the client's; it is never visited.
func (p *Provider) SignIn(ctx context.Context, login, redirectURI, resource string) (Tokens, error) {
	var discovery struct {
		AuthURL  string `json:"authorization_endpoint"`
		TokenURL string `json:"token_endpoint"`
	}
	resp, err := http.Get(p.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		return Tokens{}, err
	}
	err = json.NewDecoder(resp.Body).Decode(&discovery)
	resp.Body.Close()
	if err != nil {
		return Tokens{}, err
	}
	endpoint := oauth2.Endpoint{AuthURL: discovery.AuthURL, TokenURL: discovery.TokenURL}
	cfg := &oauth2.Config{ClientID: p.opts.ClientID, ClientSecret: p.opts.ClientSecret, Endpoint: endpoint,
		RedirectURL: redirectURI, Scopes: []string{"openid", "api"}}
	verifier, state := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	client := Browser()
	client.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirectURI) {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err = client.Get(cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource)))
	if err != nil {
		return Tokens{}, err
	}
	if resp, err = p.CompleteInteractions(client, resp, login); err != nil {
		return Tokens{}, err
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Query().Get("code") == "" || back.Query().Get("state") != state {
		return Tokens{}, fmt.Errorf("the provider did not redirect back with a code (status %d, %s)", resp.StatusCode, back)
	}
	token, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		return Tokens{}, err
	}
	idToken, _ := token.Extra("id_token").(string)
	return Tokens{AccessToken: token.AccessToken, IDToken: idToken}, nil
}
