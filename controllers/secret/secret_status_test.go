package secret

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
)

func TestSetReadyCondition(t *testing.T) {
	written := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	available := secrets.Availability{Available: true, Reason: platformv1.ResolvedReason}
	tests := map[string]struct {
		inspection  secrets.SecretInspection
		wantReady   bool
		wantReason  string
		wantMessage string
		wantState   platformv1.SecretValueState
	}{
		"a Secret whose Vault holds its value is Configured and Ready": {
			inspection: secrets.SecretInspection{Availability: available, Entry: secrets.EntryState{Present: true, UpdatedAt: written, SealedWithCurrentKey: true}},
			wantReady:  true, wantReason: platformv1.ResolvedReason, wantMessage: `Vault "local" holds the value`, wantState: platformv1.SecretConfigured,
		},
		"a Secret without a value is Missing": {
			inspection: secrets.SecretInspection{Availability: available},
			wantReason: platformv1.SecretValueMissingReason, wantMessage: NoValueMessage, wantState: platformv1.SecretMissing,
		},
		"a Vault reference that does not resolve reports the Resolver's reason": {
			inspection: secrets.SecretInspection{Refusal: &secrets.Refusal{Reason: platformv1.VaultNotFoundReason, Message: `definition.vault.name: Vault "local" not found in /workspaces/ws`}},
			wantReason: platformv1.VaultNotFoundReason, wantMessage: `definition.vault.name: Vault "local" not found in /workspaces/ws`, wantState: platformv1.SecretMissing,
		},
		"an ancestor Vault without a grant is UseNotGranted": {
			inspection: secrets.SecretInspection{Refusal: &secrets.Refusal{Reason: platformv1.UseNotGrantedReason, Message: "definition.vault: no grant"}},
			wantReason: platformv1.UseNotGrantedReason, wantMessage: "definition.vault: no grant", wantState: platformv1.SecretMissing,
		},
		"an unavailable Vault makes a stored value unusable, and says why": {
			inspection: secrets.SecretInspection{
				Availability: secrets.Availability{Reason: platformv1.MasterKeyReplacedReason, Message: "1 value(s) were stored under another master key"},
				Entry:        secrets.EntryState{Present: true, UpdatedAt: written},
			},
			wantReason: platformv1.VaultUnavailableReason, wantMessage: `Vault "local" is unavailable: 1 value(s) were stored under another master key`, wantState: platformv1.SecretConfigured,
		},
		"a Vault without a master key stores nothing": {
			inspection: secrets.SecretInspection{Availability: secrets.Availability{Reason: platformv1.MasterKeyMissingReason, Message: "the Local Vault has no master key"}},
			wantReason: platformv1.VaultUnavailableReason, wantMessage: `Vault "local" is unavailable: the Local Vault has no master key`, wantState: platformv1.SecretMissing,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			secret := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Definition: platformv1.SecretDefinition{Vault: platformv1.VaultReference{Name: "local"}}}
			setReadyCondition(&scope{secret: secret, inspection: tt.inspection})
			c := meta.FindStatusCondition(secret.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status == metav1.ConditionTrue).To(Equal(tt.wantReady))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(2)))
			g.Expect(secret.Status.State).To(Equal(tt.wantState))
			if tt.wantState == platformv1.SecretConfigured {
				g.Expect(secret.Status.ValueUpdatedTime.Time).To(Equal(written))
			} else {
				g.Expect(secret.Status.ValueUpdatedTime).To(BeNil())
			}
		})
	}
}

func TestSetVaultReadyCondition(t *testing.T) {
	tests := map[string]struct {
		provider     platformv1.VaultProvider
		availability secrets.Availability
		wantReady    bool
		wantReason   string
	}{
		"a Local Vault whose key loads is Available": {
			provider: platformv1.LocalVault, availability: secrets.Availability{Available: true, Reason: platformv1.ResolvedReason, Message: "ok"},
			wantReady: true, wantReason: platformv1.ResolvedReason,
		},
		"an omitted provider means Local": {
			availability: secrets.Availability{Available: true, Reason: platformv1.ResolvedReason, Message: "ok"},
			wantReady:    true, wantReason: platformv1.ResolvedReason,
		},
		"a Local Vault without a master key is Unavailable with MasterKeyMissing": {
			availability: secrets.Availability{Reason: platformv1.MasterKeyMissingReason, Message: "no key"}, wantReason: platformv1.MasterKeyMissingReason,
		},
		"a malformed master key is MasterKeyInvalid": {
			availability: secrets.Availability{Reason: platformv1.MasterKeyInvalidReason, Message: "bad key"}, wantReason: platformv1.MasterKeyInvalidReason,
		},
		"a replaced master key is MasterKeyReplaced": {
			availability: secrets.Availability{Reason: platformv1.MasterKeyReplacedReason, Message: "other key"}, wantReason: platformv1.MasterKeyReplacedReason,
		},
		"an unknown provider is InvalidDefinition": {provider: "Remote", wantReason: platformv1.InvalidDefinitionReason},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			vault := &platformv1.Vault{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Definition: platformv1.VaultDefinition{Provider: tt.provider}}
			setVaultReadyCondition(&vaultScope{vault: vault, availability: tt.availability})
			c := meta.FindStatusCondition(vault.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status == metav1.ConditionTrue).To(Equal(tt.wantReady))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			want := platformv1.VaultUnavailableState
			if tt.wantReady {
				want = platformv1.VaultAvailable
			}
			g.Expect(vault.Status.Availability).To(Equal(want))
		})
	}
}
