// Package returnurl checks and normalizes the return URLs of sign-in: where the browser goes once
// signed in. Only local URLs are accepted (a path on this server), so that a sign-in link cannot
// send a freshly signed-in user to another site.
package returnurl

import (
	"errors"
	"net/url"
	"path"
	"strings"
)

// MaxLength bounds a return URL.
const MaxLength = 2048

// ErrNotLocal is returned for a return URL that is not a local path.
var ErrNotLocal = errors.New("the return URL must be a local path such as /workspaces/default")

// Normalize returns the local form of raw: "/" when raw is empty; otherwise raw must be an
// absolute path of printable ASCII (optionally with a query and a fragment) without a scheme, a
// host, a backslash or a leading "//" (both of which browsers read as another host). Dot segments
// and repeated slashes are resolved, also when percent-encoded, so the result never starts with
// "//".
func Normalize(raw string) (string, error) {
	if raw == "" {
		return "/", nil
	}
	if len(raw) > MaxLength || !strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "//") {
		return "", ErrNotLocal
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] >= 0x7f || raw[i] == '\\' {
			return "", ErrNotLocal
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "", ErrNotLocal
	}
	// u.Path is decoded: "/%2F%2Fevil.example" is "//evil.example" here, and Clean makes it
	// "/evil.example".
	cleaned := path.Clean("/" + u.Path)
	if strings.HasSuffix(u.Path, "/") && cleaned != "/" {
		cleaned += "/"
	}
	for i := 0; i < len(cleaned); i++ {
		if cleaned[i] < ' ' || cleaned[i] == 0x7f || cleaned[i] == '\\' {
			return "", ErrNotLocal
		}
	}
	out := (&url.URL{Path: cleaned, RawQuery: u.RawQuery, Fragment: u.Fragment}).String()
	if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") || len(out) > MaxLength {
		return "", ErrNotLocal
	}
	return out, nil
}
