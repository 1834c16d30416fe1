package identity_test

import (
	"errors"
	"strings"
	"testing"

	"platform.dev/platform/apiserver/identity"
)

// FuzzParsePAT: ParsePAT never panics, refuses with ErrMalformedPAT only, and a token it accepts
// encodes back to exactly the input, with a prefix and a digest that are functions of it.
func FuzzParsePAT(f *testing.F) {
	for _, seed := range []string{
		"",
		identity.PATPrefix,
		identity.PATPrefix + strings.Repeat("A", 43),
		identity.PATPrefix + strings.Repeat("-_", 21) + "w",
		identity.PATPrefix + strings.Repeat("A", 42) + "B",
		identity.PATPrefix + strings.Repeat("A", 43) + "=",
		identity.PATPrefix + strings.Repeat("+/", 21) + "A",
		"PLATFORM_PAT_" + strings.Repeat("A", 43),
		"platform_pat_\x00\xff",
		"Bearer " + identity.PATPrefix + strings.Repeat("A", 43),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		secret, err := identity.ParsePAT(raw)
		if err != nil {
			if !errors.Is(err, identity.ErrMalformedPAT) {
				t.Fatalf("ParsePAT(%q): unexpected error %v", raw, err)
			}
			return
		}
		if got := secret.Encode(); got != raw {
			t.Fatalf("ParsePAT(%q).Encode() = %q: not a round trip", raw, got)
		}
		again, err := identity.ParsePAT(secret.Encode())
		if err != nil || again != secret {
			t.Fatalf("re-parsing %q: %v", raw, err)
		}
		if !strings.HasPrefix(raw, secret.Prefix()) || len(secret.Prefix()) >= len(raw) {
			t.Fatalf("prefix %q is not a proper prefix of %q", secret.Prefix(), raw)
		}
		if secret.Digest() != again.Digest() || len(secret.Digest()) != 64 {
			t.Fatalf("digest of %q is not stable", raw)
		}
	})
}
