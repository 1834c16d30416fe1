package identity_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func TestPasswordRuleNeedsTwelveCharactersUpperLowerDigitAndSymbol(t *testing.T) {
	cases := []struct {
		password string
		unmet    []string
	}{
		{"Correct-Horse-9", nil},
		{"Ünïcödé-Pass-٣", nil}, // Unicode upper, lower, Arabic-Indic digit
		{"ÉCOLE-école-42", nil},
		{"Short-1a", []string{"at least 12 characters"}},
		{"lowercase-only-1", []string{"an uppercase letter"}},
		{"UPPERCASE-ONLY-1", []string{"a lowercase letter"}},
		{"No-Digits-Here", []string{"a digit"}},
		{"NoSymbols12345", []string{"a non-alphanumeric character"}},
		{"Ab1-Ab1-Ab1", []string{"at least 12 characters"}}, // 11 characters
		{"ÀÉÎÕÜàéîõü1!", nil},                               // 12 characters, 18 bytes... and 12 runes
		{"", []string{"at least 12 characters", "an uppercase letter", "a lowercase letter", "a digit", "a non-alphanumeric character"}},
		{"abc", []string{"at least 12 characters", "an uppercase letter", "a digit", "a non-alphanumeric character"}},
	}
	for _, c := range cases {
		t.Run(c.password, func(t *testing.T) {
			g := NewWithT(t)
			err := identity.ValidatePassword(c.password)
			if c.unmet == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var perr *identity.PasswordError
			g.Expect(err).To(BeAssignableToTypeOf(perr))
			g.Expect(err.(*identity.PasswordError).Unmet).To(Equal(c.unmet))
			for _, u := range c.unmet {
				g.Expect(err.Error()).To(ContainSubstring(u))
			}
		})
	}
	// Length counts characters, not bytes: 11 two-byte characters are too short.
	g := NewWithT(t)
	g.Expect(identity.ValidatePassword("Éé1-ééééééé")).To(HaveOccurred())
}

func TestPasswordHashRoundTripsAndRejectsAWrongPassword(t *testing.T) {
	g := NewWithT(t)
	hash, err := identity.HashPassword("Correct-Horse-9")
	g.Expect(err).NotTo(HaveOccurred())
	ok, err := identity.VerifyPassword(hash, "Correct-Horse-9")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	ok, err = identity.VerifyPassword(hash, "Correct-Horse-8")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())
	_, err = identity.VerifyPassword("$argon2id$v=19$m=0,t=2,p=1$AAAA$AAAA", "x")
	g.Expect(err).To(HaveOccurred(), "a malformed hash is an error, not a mismatch")
}

func TestPasswordHashStoresItsParametersInThePHCString(t *testing.T) {
	g := NewWithT(t)
	hash, err := identity.HashPassword("Correct-Horse-9")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hash).To(HavePrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
	parts := strings.Split(hash, "$")
	g.Expect(parts).To(HaveLen(6))
	g.Expect(parts[4]).To(HaveLen(22), "16-byte salt, unpadded Base64")
	g.Expect(parts[5]).To(HaveLen(43), "32-byte key, unpadded Base64")
	g.Expect(identity.NeedsRehash(hash)).To(BeFalse())

	// A hash made with weaker, older parameters still verifies (they are read from the string)
	// and is reported for rehashing.
	weak := identity.HashWithParamsForTest("Correct-Horse-9", identity.HashParams{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32})
	g.Expect(weak).To(HavePrefix("$argon2id$v=19$m=64,t=1,p=1$"))
	ok, err := identity.VerifyPassword(weak, "Correct-Horse-9")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(identity.NeedsRehash(weak)).To(BeTrue())
}
