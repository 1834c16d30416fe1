package secret

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// NoMasterKeyMessage is the Ready message of a Local Vault: its master key does not exist yet.
const NoMasterKeyMessage = "the Local Vault has no master key yet, so it can neither store nor read values; Vaults arrive with the secrets issue"

// setVaultReadyCondition reports whether the Vault can store and read values. Local is the only
// provider (InvalidDefinition otherwise) and needs a master key that the platform does not create
// yet: every Vault is Unavailable with VaultUnavailable.
func setVaultReadyCondition(s *vaultScope) {
	status := &s.vault.Status
	status.Availability = platformv1.VaultUnavailableState
	if p := s.vault.Definition.Provider; p != "" && p != platformv1.LocalVault {
		err := field.NotSupported(field.NewPath("definition", "provider"), p, []string{string(platformv1.LocalVault)})
		reconcileutil.SetReady(&status.ResourceStatus, s.vault.Generation, false, platformv1.InvalidDefinitionReason,
			reconcileutil.FindingsMessage(field.ErrorList{err}))
		return
	}
	reconcileutil.SetReady(&status.ResourceStatus, s.vault.Generation, false, platformv1.VaultUnavailableReason, NoMasterKeyMessage)
}
