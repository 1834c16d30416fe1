package identity_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"platform.dev/platform/apiserver/identity"
)

// Issuers and subjects come from administrators and from tokens: the validators never panic, and
// whatever they accept satisfies the spec's rules.
func FuzzValidateIssuer(f *testing.F) {
	for _, seed := range []string{
		"https://login.example.test", "http://127.0.0.1:8080/realms/a", "https://user@host", "https://host/?q",
		"https://host/#f", " https://host", "https:host", "HTTPS://host", "https://[::1]:99/", "https://host/%zz",
		"https://h@st:1@x/", "http://\u00e9.test", "", "https://",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, issuer string) {
		if identity.ValidateIssuer(issuer) != nil {
			return
		}
		if len(issuer) == 0 || len(issuer) > identity.MaxIssuerLength || strings.TrimSpace(issuer) != issuer {
			t.Fatalf("accepted %q: empty, too long or padded", issuer)
		}
		for _, r := range issuer {
			if unicode.IsControl(r) || unicode.IsSpace(r) || r > unicode.MaxASCII {
				t.Fatalf("accepted %q: control, space or non-ASCII character", issuer)
			}
		}
		u, err := url.Parse(issuer)
		if err != nil {
			t.Fatalf("accepted %q: does not parse: %v", issuer, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
			t.Fatalf("accepted %q: not an absolute http(s) URL with a host", issuer)
		}
		authority, _, _ := strings.Cut(strings.SplitN(issuer, "://", 2)[1], "/")
		if u.User != nil || strings.Contains(authority, "@") {
			t.Fatalf("accepted %q: user information", issuer)
		}
		if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(issuer, "?#") {
			t.Fatalf("accepted %q: query or fragment", issuer)
		}
	})
}

func FuzzValidateSubject(f *testing.F) {
	for _, seed := range []string{"248289761001", "Alice", " a", "a\n", "a\x00", "\xff", "ünï", "a\u2028b", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		if identity.ValidateSubject(subject) != nil {
			return
		}
		if len(subject) == 0 || len(subject) > identity.MaxSubjectLength || !utf8.ValidString(subject) {
			t.Fatalf("accepted %q: empty, too long or not UTF-8", subject)
		}
		if strings.TrimSpace(subject) != subject {
			t.Fatalf("accepted %q: surrounding whitespace", subject)
		}
		for _, r := range subject {
			if unicode.IsControl(r) {
				t.Fatalf("accepted %q: control character", subject)
			}
		}
	})
}
