package registry

import (
	"net"
	"net/url"
	"strings"
)

// ValidateIndexURL parses a registration's index URL: absolute https (http only when allowHTTP),
// with a host, and without credentials, a query, a fragment, percent-encoding, a backslash or
// control characters. Admission and the refresh service both call it.
func ValidateIndexURL(raw string, allowHTTP bool) (*url.URL, error) {
	refuse := func(why string) (*url.URL, error) {
		return nil, &Error{Code: CodeURLRefused, Document: "index", Detail: "the index URL " + why}
	}
	if raw == "" || len(raw) > MaxLocationLength {
		return refuse("must be 1 to 2048 characters")
	}
	if strings.ContainsAny(raw, "@") {
		return refuse("must not carry credentials")
	}
	if strings.ContainsAny(raw, "?") {
		return refuse("must not have a query")
	}
	if strings.ContainsAny(raw, "#") {
		return refuse("must not have a fragment")
	}
	if strings.ContainsAny(raw, "%") {
		return refuse("must not be percent-encoded")
	}
	if strings.ContainsAny(raw, "\\ ") || hasControl(raw) {
		return refuse("must not contain spaces, backslashes or control characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return refuse("must be an absolute URL with a host")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowHTTP {
			return refuse("must be https (http needs endpointPolicy.allowHttp)")
		}
	default:
		return refuse("must be https")
	}
	if p := u.Port(); p != "" && !validPort(p) {
		return refuse("has an invalid port")
	}
	return u, nil
}

func validPort(p string) bool {
	if len(p) > 5 {
		return false
	}
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n >= 1 && n <= 65535
}

func hasControl(s string) bool {
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// CheckLocation checks the shape of a location in a document: a relative reference (or an
// absolute URL, which Resolve then holds to the origin) of at most 2048 characters, without
// credentials, query, fragment, percent-encoding, backslashes or control characters.
func CheckLocation(loc string) *Error {
	refuse := func(why string) *Error {
		return &Error{Code: CodeLocationRefused, Detail: "a location " + why}
	}
	switch {
	case loc == "" || len(loc) > MaxLocationLength:
		return refuse("must be 1 to 2048 characters")
	case strings.ContainsAny(loc, "@?#%\\ ") || hasControl(loc):
		return refuse("must not have credentials, a query, a fragment, percent-encoding, spaces or backslashes")
	}
	u, err := url.Parse(loc)
	if err != nil || u.Opaque != "" {
		return refuse("must be a URL reference")
	}
	if u.Scheme != "" && u.Scheme != "https" && u.Scheme != "http" {
		return refuse("must be http(s) or relative")
	}
	return nil
}

// Resolve resolves loc, named by the document at base, and refuses a result off origin (the
// index URL's scheme, host and port): a registry can point only into itself.
func Resolve(origin, base *url.URL, loc string) (*url.URL, error) {
	if err := CheckLocation(loc); err != nil {
		return nil, err
	}
	ref, _ := url.Parse(loc)
	u := base.ResolveReference(ref)
	if !SameOrigin(origin, u) {
		return nil, &Error{Code: CodeLocationRefused, Detail: "a location leaves the index's origin " + Origin(origin)}
	}
	return u, nil
}

// SameOrigin reports whether a and b have one scheme, host and port (default ports spelled
// or not).
func SameOrigin(a, b *url.URL) bool { return Origin(a) == Origin(b) }

// Origin is scheme://host:port of u, lowercased, with the scheme's default port made explicit.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), port)
}
