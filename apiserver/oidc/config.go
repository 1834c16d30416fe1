package oidc

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"platform.dev/platform/internal/config"
)

// Settings under Platform:Authentication:Oidc.
const (
	KeyAuthority            = "Platform:Authentication:Oidc:Authority"
	KeyAudience             = "Platform:Authentication:Oidc:Audience"
	KeyClientID             = "Platform:Authentication:Oidc:ClientId"
	KeyClientSecret         = "Platform:Authentication:Oidc:ClientSecret"
	KeyRequireHTTPSMetadata = "Platform:Authentication:Oidc:RequireHttpsMetadata"
	KeyCallbackPath         = "Platform:Authentication:Oidc:CallbackPath"
	KeyRedirectURL          = "Platform:Authentication:Oidc:RedirectUrl"
	KeyScopes               = "Platform:Authentication:Oidc:Scopes"
)

// DefaultCallbackPath is where the provider sends the browser back with the authorization code,
// unless CallbackPath or RedirectUrl says otherwise.
const DefaultCallbackPath = "/api/auth/oidc/callback"

// Config is the OpenID Provider the platform trusts and the platform's registration there.
type Config struct {
	// Authority is the issuer: its discovery document is at
	// <Authority>/.well-known/openid-configuration and tokens carry it, exactly, as iss.
	Authority string
	// Audience is the aud that JWT bearer tokens must carry: the platform as a resource server.
	Audience string
	// ClientID is the platform's client for the interactive sign-in; ID tokens carry it as aud.
	ClientID string
	// ClientSecret is empty for a public client (PKCE alone).
	ClientSecret string
	// RequireHTTPSMetadata refuses an http:// Authority and discovered endpoints that are not
	// https (default true).
	RequireHTTPSMetadata bool
	// CallbackPath is the path of the sign-in callback on this server.
	CallbackPath string
	// RedirectURL, when set, is the absolute redirect URI registered at the provider (for a
	// server reached through a proxy); its path is the callback path. Otherwise the redirect URI
	// is the request's own origin with CallbackPath.
	RedirectURL string
	// Scopes requested at sign-in; openid is always among them.
	Scopes []string
}

// ConfigFrom reads Platform:Authentication:Oidc from cfg and validates it.
func ConfigFrom(cfg *config.Config) (Config, error) {
	c := Config{
		Authority:    strings.TrimSpace(cfg.Get(KeyAuthority)),
		Audience:     strings.TrimSpace(cfg.Get(KeyAudience)),
		ClientID:     strings.TrimSpace(cfg.Get(KeyClientID)),
		ClientSecret: cfg.Get(KeyClientSecret),
		CallbackPath: strings.TrimSpace(cfg.Get(KeyCallbackPath)),
		RedirectURL:  strings.TrimSpace(cfg.Get(KeyRedirectURL)),
		Scopes:       parseScopes(cfg.Get(KeyScopes)),
	}
	require, err := strconv.ParseBool(strings.TrimSpace(cfg.GetOr(KeyRequireHTTPSMetadata, "true")))
	if err != nil {
		return Config{}, fmt.Errorf("%s must be true or false", KeyRequireHTTPSMetadata)
	}
	c.RequireHTTPSMetadata = require
	if c.CallbackPath == "" && c.RedirectURL != "" {
		if u, err := url.Parse(c.RedirectURL); err == nil {
			c.CallbackPath = u.Path
		}
	}
	if c.CallbackPath == "" {
		c.CallbackPath = DefaultCallbackPath
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseScopes accepts a space- or comma-separated list, or a YAML list (which the configuration
// flattens to "[a b]").
func parseScopes(value string) []string {
	value = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(value), "["), "]")
	scopes := []string{"openid"}
	for _, s := range strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == ' ' }) {
		if s != "openid" {
			scopes = append(scopes, s)
		}
	}
	return scopes
}

// Validate checks that the configuration is complete and safe. Its errors name the settings,
// never their values.
func (c Config) Validate() error {
	var errs []error
	missing := func(key string) { errs = append(errs, fmt.Errorf("%s is required in modes Oidc and Hybrid", key)) }
	if c.Authority == "" {
		missing(KeyAuthority)
	} else if err := checkAbsoluteURL(c.Authority); err != nil {
		errs = append(errs, fmt.Errorf("%s %v", KeyAuthority, err))
	} else if c.RequireHTTPSMetadata && !strings.HasPrefix(c.Authority, "https://") {
		errs = append(errs, fmt.Errorf("%s is an http:// URL while %s is true: use the provider's https:// issuer, "+
			"or set %s to false (development only)", KeyAuthority, KeyRequireHTTPSMetadata, KeyRequireHTTPSMetadata))
	}
	if c.Audience == "" {
		missing(KeyAudience)
	}
	if c.ClientID == "" {
		missing(KeyClientID)
	}
	if c.RedirectURL != "" {
		if err := checkAbsoluteURL(c.RedirectURL); err != nil {
			errs = append(errs, fmt.Errorf("%s %v", KeyRedirectURL, err))
		} else if u, _ := url.Parse(c.RedirectURL); c.CallbackPath != u.Path {
			errs = append(errs, fmt.Errorf("the path of %s must be %s: set only one of them", KeyRedirectURL, KeyCallbackPath))
		}
	}
	if !strings.HasPrefix(c.CallbackPath, "/") || path.Clean(c.CallbackPath) != c.CallbackPath || strings.ContainsAny(c.CallbackPath, "?#{}% \\") {
		errs = append(errs, fmt.Errorf("%s must be a clean absolute path such as %s", KeyCallbackPath, DefaultCallbackPath))
	}
	return errors.Join(errs...)
}

// checkAbsoluteURL: an absolute http(s) URL with a host and without user information, query or
// fragment.
func checkAbsoluteURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("must be an absolute http(s) URL without user information, query or fragment")
	}
	return nil
}
