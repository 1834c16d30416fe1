package secrets

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// maxDerivedNameLength keeps a derived name a DNS label, which every kube name accepts.
const maxDerivedNameLength = 63

// foldedLetters are the Latin letters that do not decompose into a base letter and accents.
var foldedLetters = map[rune]string{
	'ß': "ss", 'æ': "ae", 'œ': "oe", 'ø': "o", 'đ': "d", 'ð': "d", 'ł': "l", 'þ': "th", 'ı': "i", 'ħ': "h",
}

// DeriveName is the Console's Name (and Vault key) for a display name: lowercased, accents
// removed, every other run of characters that is not an ASCII letter or digit folded to one
// hyphen, no hyphen at either end, at most 63 characters. "Clé API OpenAI (prod)" becomes
// "cle-api-openai-prod". A display name with no letter or digit derives "".
func DeriveName(displayName string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range norm.NFKD.String(strings.ToLower(displayName)) {
		if unicode.Is(unicode.Mn, r) {
			continue // an accent of the previous letter
		}
		text := string(r)
		if folded, ok := foldedLetters[r]; ok {
			text = folded
		} else if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			hyphen = b.Len() > 0
			continue
		}
		if hyphen {
			b.WriteByte('-')
			hyphen = false
		}
		b.WriteString(text)
	}
	name := b.String()
	if len(name) > maxDerivedNameLength {
		name = strings.TrimRight(name[:maxDerivedNameLength], "-")
	}
	return name
}

// SecretNameFields are the Console's display name, Name and Vault key fields of a Secret form.
// Name and Vault key follow the display name until a person edits them; an edited field keeps
// its value.
type SecretNameFields struct {
	DisplayName string
	Name        string
	VaultKey    string
	// NameEdited and VaultKeyEdited say a person typed in that field.
	NameEdited     bool
	VaultKeyEdited bool
}

// WithDisplayName is the form after the display name changed to displayName: Name and Vault key
// follow it unless edited.
func (f SecretNameFields) WithDisplayName(displayName string) SecretNameFields {
	f.DisplayName = displayName
	derived := DeriveName(displayName)
	if !f.NameEdited {
		f.Name = derived
	}
	if !f.VaultKeyEdited {
		f.VaultKey = derived
	}
	return f
}

// WithName is the form after a person typed name in the Name field: it keeps that value from now
// on. Typing the derived value itself, or clearing the field, hands it back to derivation.
func (f SecretNameFields) WithName(name string) SecretNameFields {
	f.Name, f.NameEdited = edited(name, f.DisplayName)
	return f
}

// WithVaultKey is WithName for the Vault key field.
func (f SecretNameFields) WithVaultKey(key string) SecretNameFields {
	f.VaultKey, f.VaultKeyEdited = edited(key, f.DisplayName)
	return f
}

func edited(value, displayName string) (string, bool) {
	derived := DeriveName(displayName)
	if value == "" || value == derived {
		return derived, false
	}
	return value, true
}
