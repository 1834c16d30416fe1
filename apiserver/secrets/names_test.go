package secrets_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/secrets"
)

func TestDeriveNameFoldsTheDisplayNameToHyphenSeparatedASCII(t *testing.T) {
	tests := map[string]struct{ displayName, want string }{
		"lowercased":            {"OpenAI", "openai"},
		"spaces become hyphens": {"OpenAI API key", "openai-api-key"},
		"accents are folded":    {"Clé d'accès Société Générale", "cle-d-acces-societe-generale"},
		"letters without a decomposition are spelled": {"Straße Æther Øresund Łódź", "strasse-aether-oresund-lodz"},
		"punctuation runs become one hyphen":          {"prod // EU-west (primary)!", "prod-eu-west-primary"},
		"no hyphen at either end":                     {"  --GitHub token--  ", "github-token"},
		"digits are kept":                             {"Key 2026 v2", "key-2026-v2"},
		"compatibility forms fold to ASCII":           {"ﬁle ＡＰＩ", "file-api"},
		"non-Latin letters are dropped":               {"日本 key", "key"},
		"nothing usable derives nothing":              {"日本!", ""},
		"at most 63 characters, no trailing hyphen":   {strings.Repeat("a", 62) + " b", strings.Repeat("a", 62)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(secrets.DeriveName(tt.displayName)).To(Equal(tt.want))
		})
	}
}

func TestNameAndVaultKeyFollowTheDisplayNameUntilEditedByHand(t *testing.T) {
	g := NewWithT(t)
	f := secrets.SecretNameFields{}.WithDisplayName("OpenAI key")
	g.Expect(f.Name).To(Equal("openai-key"))
	g.Expect(f.VaultKey).To(Equal("openai-key"))

	f = f.WithVaultKey("providers/openai")
	f = f.WithDisplayName("OpenAI production key")
	g.Expect(f.Name).To(Equal("openai-production-key"), "the Name still follows")
	g.Expect(f.VaultKey).To(Equal("providers/openai"), "an edited Vault key keeps its customization")

	f = f.WithName("openai")
	f = f.WithDisplayName("OpenAI staging key")
	g.Expect(f.Name).To(Equal("openai"), "an edited Name keeps its customization")
	g.Expect(f.VaultKey).To(Equal("providers/openai"))

	f = f.WithName("")
	g.Expect(f.Name).To(Equal("openai-staging-key"), "clearing the Name hands it back to derivation")
	f = f.WithDisplayName("OpenAI key")
	g.Expect(f.Name).To(Equal("openai-key"))

	f = f.WithVaultKey("openai-key")
	f = f.WithDisplayName("Anthropic key")
	g.Expect(f.VaultKey).To(Equal("anthropic-key"), "typing the derived value is not a customization")
}
