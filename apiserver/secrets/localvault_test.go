package secrets_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// localVault is a Local Vault on s whose key file is in a fresh directory, without a key yet.
func localVault(t *testing.T, s *store.Store) *secrets.LocalVault {
	return &secrets.LocalVault{Store: s, MasterKey: secrets.MasterKeySource{File: filepath.Join(t.TempDir(), secrets.KeyFileName)}}
}

var entry = secrets.Entry{VaultScope: "/workspaces/w1", Vault: "local", SecretScope: "/workspaces/w1", Key: "openai-api-key"}

// row is what the store holds of an entry.
type row struct {
	format, keyID          string
	nonce, ciphertext, tag []byte
}

func readRow(t *testing.T, s *store.Store, e secrets.Entry) row {
	t.Helper()
	var r row
	err := s.DB().QueryRow(s.Rebind(`SELECT format, key_id, nonce, ciphertext, tag FROM local_vault_entries
		WHERE vault_scope = ? AND vault_name = ? AND secret_scope = ? AND entry_key = ?`),
		string(e.VaultScope), e.Vault, string(e.SecretScope), e.Key).Scan(&r.format, &r.keyID, &r.nonce, &r.ciphertext, &r.tag)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func countRows(t *testing.T, s *store.Store) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM local_vault_entries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLocalVaultIsUnavailableUntilItsKeyIsInitialized(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		v := localVault(t, s)
		a, err := v.Availability(ctx, entry.VaultScope, entry.Vault)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.Available).To(BeFalse())
		g.Expect(a.Reason).To(Equal(platformv1.MasterKeyMissingReason))
		g.Expect(a.Message).To(ContainSubstring(secrets.MasterKeyVariable))

		err = v.Put(ctx, entry, []byte("sk-never-stored"))
		var unavailable *secrets.UnavailableError
		g.Expect(err).To(BeAssignableToTypeOf(unavailable), "a value cannot be stored without a key")
		g.Expect(countRows(t, s)).To(BeZero(), "nothing was stored")

		_, err = v.Initialize()
		g.Expect(err).NotTo(HaveOccurred())
		a, err = v.Availability(ctx, entry.VaultScope, entry.Vault)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.Available).To(BeTrue(), a.Message)
	})
}

func TestLocalVaultSealsEachWriteWithAFreshNonceApartFromThePlainValue(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		v := localVault(t, s)
		_, err := v.Initialize()
		g.Expect(err).NotTo(HaveOccurred())
		value := []byte("sk-plain-value-0123456789")

		g.Expect(v.Put(ctx, entry, value)).To(Succeed())
		first := readRow(t, s, entry)
		g.Expect(v.Put(ctx, entry, value)).To(Succeed())
		second := readRow(t, s, entry)

		g.Expect(first.format).To(Equal("aes-256-gcm/v1"))
		g.Expect(first.nonce).To(HaveLen(12))
		g.Expect(first.tag).To(HaveLen(16))
		g.Expect(second.nonce).NotTo(Equal(first.nonce), "a fresh nonce per write")
		g.Expect(second.ciphertext).NotTo(Equal(first.ciphertext), "so the same value seals differently")
		for _, stored := range [][]byte{first.ciphertext, first.nonce, first.tag, []byte(first.keyID)} {
			g.Expect(bytes.Contains(stored, value)).To(BeFalse())
		}
		got, err := v.Get(ctx, entry)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(value))

		state, err := v.State(ctx, entry)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(state.Present).To(BeTrue())
		g.Expect(state.SealedWithCurrentKey).To(BeTrue())
		g.Expect(state.UpdatedAt).NotTo(BeZero())

		existed, err := v.Delete(ctx, entry)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(existed).To(BeTrue())
		_, err = v.Get(ctx, entry)
		g.Expect(err).To(MatchError(secrets.ErrValueMissing))
		existed, err = v.Delete(ctx, entry)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(existed).To(BeFalse())
	})
}

func TestAPayloadMovedToAnotherEntryFailsToOpen(t *testing.T) {
	moves := map[string]secrets.Entry{
		"to another Secret scope": {VaultScope: entry.VaultScope, Vault: entry.Vault, SecretScope: "/tenants/t1", Key: entry.Key},
		"to another vault key":    {VaultScope: entry.VaultScope, Vault: entry.Vault, SecretScope: entry.SecretScope, Key: "other"},
		"to another Vault":        {VaultScope: entry.VaultScope, Vault: "other", SecretScope: entry.SecretScope, Key: entry.Key},
		"to another Vault scope":  {VaultScope: "/instance", Vault: entry.Vault, SecretScope: entry.SecretScope, Key: entry.Key},
	}
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		v := localVault(t, s)
		if _, err := v.Initialize(); err != nil {
			t.Fatal(err)
		}
		for name, to := range moves {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(v.Put(ctx, entry, []byte("sk-moved"))).To(Succeed())
				_, err := s.DB().Exec(s.Rebind(`UPDATE local_vault_entries SET vault_scope = ?, vault_name = ?, secret_scope = ?, entry_key = ?
					WHERE vault_scope = ? AND vault_name = ? AND secret_scope = ? AND entry_key = ?`),
					string(to.VaultScope), to.Vault, string(to.SecretScope), to.Key,
					string(entry.VaultScope), entry.Vault, string(entry.SecretScope), entry.Key)
				g.Expect(err).NotTo(HaveOccurred())
				_, err = v.Get(ctx, to)
				g.Expect(err).To(MatchError(secrets.ErrValueUnreadable))
				g.Expect(err.Error()).NotTo(ContainSubstring("sk-moved"))
				_, err = v.Delete(ctx, to)
				g.Expect(err).NotTo(HaveOccurred())
			})
		}
	})
}

func TestAReplacedMasterKeyMakesTheVaultUnavailableAndItsValuesUnreadable(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		v := localVault(t, s)
		original := newKey()
		g.Expect(os.WriteFile(v.MasterKey.File, []byte(original), 0o600)).To(Succeed())
		g.Expect(v.Put(ctx, entry, []byte("sk-under-the-first-key"))).To(Succeed())

		g.Expect(os.WriteFile(v.MasterKey.File, []byte(newKey()), 0o600)).To(Succeed())
		a, err := v.Availability(ctx, entry.VaultScope, entry.Vault)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.Available).To(BeFalse())
		g.Expect(a.Reason).To(Equal(platformv1.MasterKeyReplacedReason))
		g.Expect(a.Message).To(ContainSubstring("another master key"))
		_, err = v.Get(ctx, entry)
		g.Expect(err).To(MatchError(secrets.ErrValueUnreadable))
		state, err := v.State(ctx, entry)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(state.Present).To(BeTrue())
		g.Expect(state.SealedWithCurrentKey).To(BeFalse())
		var unavailable *secrets.UnavailableError
		g.Expect(v.Put(ctx, entry, []byte("sk-refused"))).To(BeAssignableToTypeOf(unavailable), "no value is stored under a mix of keys")

		other := secrets.Entry{VaultScope: entry.VaultScope, Vault: "another-vault", SecretScope: entry.SecretScope, Key: entry.Key}
		a, err = v.Availability(ctx, other.VaultScope, other.Vault)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.Available).To(BeTrue(), "a Vault with no value under the old key works with the new one")

		g.Expect(os.WriteFile(v.MasterKey.File, []byte(original+"\n"), 0o600)).To(Succeed())
		got, err := v.Get(ctx, entry)
		g.Expect(err).NotTo(HaveOccurred(), "restoring the key restores the values")
		g.Expect(string(got)).To(Equal("sk-under-the-first-key"))

		g.Expect(os.WriteFile(v.MasterKey.File, []byte(newKey()), 0o600)).To(Succeed())
		_, err = v.Delete(ctx, entry)
		g.Expect(err).NotTo(HaveOccurred(), "values under a lost key can be removed")
		a, err = v.Availability(ctx, entry.VaultScope, entry.Vault)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.Available).To(BeTrue(), "and then the Vault works with the new key")
	})
}

func TestAMalformedMasterKeyMakesTheVaultUnavailableWithTheReason(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		v := localVault(t, s)
		g.Expect(os.WriteFile(v.MasterKey.File, []byte("c2hvcnQ="), 0o600)).To(Succeed())
		a, err := v.Availability(ctx, entry.VaultScope, entry.Vault)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.Available).To(BeFalse())
		g.Expect(a.Reason).To(Equal(platformv1.MasterKeyInvalidReason))
		g.Expect(a.Message).To(ContainSubstring(v.MasterKey.File))
		g.Expect(a.Message).To(ContainSubstring("decodes to 5 bytes; it must be exactly 32 bytes"))
		var unavailable *secrets.UnavailableError
		_, err = v.Get(ctx, entry)
		g.Expect(err).To(BeAssignableToTypeOf(unavailable))
	})
}

func TestValuesOverTheLimitOrEmptyAreRefusedAndNothingIsStored(t *testing.T) {
	tests := map[string]struct {
		value []byte
		want  error
	}{
		"an empty value":                    {value: nil, want: secrets.ErrValueEmpty},
		"a value one byte over the limit":   {value: bytes.Repeat([]byte("x"), secrets.MaxValueBytes+1), want: secrets.ErrValueTooLarge},
		"a value of exactly the limit fits": {value: bytes.Repeat([]byte("x"), secrets.MaxValueBytes)},
	}
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		v := localVault(t, s)
		if _, err := v.Initialize(); err != nil {
			t.Fatal(err)
		}
		for name, tt := range tests {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				e := entry
				e.Key = strings.ReplaceAll(name, " ", "-")
				err := v.Put(ctx, e, tt.value)
				if tt.want != nil {
					g.Expect(err).To(MatchError(tt.want))
					state, err := v.State(ctx, e)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(state.Present).To(BeFalse(), "nothing stored")
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				got, err := v.Get(ctx, e)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(tt.value))
			})
		}
	})
}

func TestWatchersHearEveryWriteAndTheKeyInitialization(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v := localVault(t, openStore(t))
	changes := make(chan secrets.Change, 8)
	v.Watch(ctx, func(c secrets.Change) { changes <- c })
	_, err := v.Initialize()
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(changes).Should(Receive(Equal(secrets.Change{All: true})))
	g.Expect(v.Put(ctx, entry, []byte("x"))).To(Succeed())
	g.Eventually(changes).Should(Receive(Equal(secrets.Change{Entry: entry})))
	_, err = v.Delete(ctx, entry)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(changes).Should(Receive(Equal(secrets.Change{Entry: entry})))
}
