package secret

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestSetReadyCondition(t *testing.T) {
	tests := map[string]struct {
		vaultProblem string
		wantReason   string
		wantMessage  string
	}{
		"a Secret of an existing Vault is honestly Missing its value": {
			wantReason: platformv1.SecretValueMissingReason, wantMessage: NoValueMessage,
		},
		"a Secret without its Vault is VaultNotFound with the field path": {
			vaultProblem: `definition.vault.name: Vault "local" not found`,
			wantReason:   platformv1.VaultNotFoundReason, wantMessage: `definition.vault.name: Vault "local" not found`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			secret := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			setReadyCondition(&scope{secret: secret, vaultProblem: tt.vaultProblem})
			c := meta.FindStatusCondition(secret.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(2)))
			g.Expect(secret.Status.State).To(Equal(platformv1.SecretMissing))
		})
	}
}

func TestSetVaultReadyCondition(t *testing.T) {
	tests := map[string]struct {
		provider   platformv1.VaultProvider
		wantReason string
	}{
		"a Local Vault is Unavailable without a master key": {provider: platformv1.LocalVault, wantReason: platformv1.VaultUnavailableReason},
		"an omitted provider means Local":                   {wantReason: platformv1.VaultUnavailableReason},
		"an unknown provider is InvalidDefinition":          {provider: "Remote", wantReason: platformv1.InvalidDefinitionReason},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			vault := &platformv1.Vault{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Definition: platformv1.VaultDefinition{Provider: tt.provider}}
			setVaultReadyCondition(&vaultScope{vault: vault})
			c := meta.FindStatusCondition(vault.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(vault.Status.Availability).To(Equal(platformv1.VaultUnavailableState))
		})
	}
}
