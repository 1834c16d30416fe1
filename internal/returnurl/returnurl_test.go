package returnurl_test

import (
	"net/url"
	"strings"
	"testing"

	"platform.dev/platform/internal/returnurl"
)

func TestNormalize(t *testing.T) {
	cases := map[string]struct {
		raw, want string // want "" means refused
	}{
		"empty is the root":             {"", "/"},
		"a path":                        {"/workspaces/default", "/workspaces/default"},
		"query and fragment kept":       {"/a?b=c&d=e#f", "/a?b=c&d=e#f"},
		"trailing slash kept":           {"/a/", "/a/"},
		"dot segments resolved":         {"/a/./b/../c", "/a/c"},
		"repeated slashes collapsed":    {"/a//b", "/a/b"},
		"no escape above the root":      {"/../../etc", "/etc"},
		"encoded slashes resolved":      {"/%2F%2Fevil.example", "/evil.example"},
		"encoded dots resolved":         {"/a/%2e%2e/b", "/b"},
		"escapes kept":                  {"/a%20b", "/a%20b"},
		"protocol-relative":             {"//evil.example/x", ""},
		"absolute":                      {"https://evil.example/", ""},
		"scheme only":                   {"javascript:alert(1)", ""},
		"relative":                      {"workspaces", ""},
		"backslash":                     {"/\\evil.example", ""},
		"encoded backslash":             {"/%5Cevil.example", ""},
		"control character":             {"/a\tb", ""},
		"encoded control character":     {"/a%0d%0aSet-Cookie:x", ""},
		"space":                         {"/a b", ""},
		"non-ASCII":                     {"/é", ""},
		"too long":                      {"/" + strings.Repeat("a", returnurl.MaxLength), ""},
		"bad escape":                    {"/%zz", ""},
		"encoded slash after a segment": {"/a/%2F/b", "/a/b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := returnurl.Normalize(tc.raw)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("Normalize(%q) = %q, want refused", tc.raw, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
			}
		})
	}
}

// A return URL comes from whoever made the sign-in link: whatever Normalize accepts is a local
// path that stays what it is when normalized again.
func FuzzNormalize(f *testing.F) {
	for _, seed := range []string{"", "/", "/a/../b", "//x", "/%2F%2Fx", "/\\x", "https://x", "/a?b#c", "/%5C", "/a%00", "/.."} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := returnurl.Normalize(raw)
		if err != nil {
			return
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\\t\r\n ") || len(got) > returnurl.MaxLength {
			t.Fatalf("Normalize(%q) = %q: not a local path", raw, got)
		}
		u, err := url.Parse(got)
		if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
			t.Fatalf("Normalize(%q) = %q: parses as %+v, %v", raw, got, u, err)
		}
		if again, err := returnurl.Normalize(got); err != nil || again != got {
			t.Fatalf("Normalize(%q) = %q, but Normalize(%q) = %q, %v", raw, got, got, again, err)
		}
	})
}
