package secret

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// setVaultReadyCondition reports whether the Vault can store and read values: Local is the only
// provider (InvalidDefinition otherwise); a Local Vault is Available when its master key loads
// and opens its values, else Unavailable with the Local Vault's reason (MasterKeyMissing,
// MasterKeyInvalid, MasterKeyReplaced).
func setVaultReadyCondition(s *vaultScope) {
	status := &s.vault.Status
	status.Availability = platformv1.VaultUnavailableState
	if p := s.vault.Definition.Provider; p != "" && p != platformv1.LocalVault {
		err := field.NotSupported(field.NewPath("definition", "provider"), p, []string{string(platformv1.LocalVault)})
		reconcileutil.SetReady(&status.ResourceStatus, s.vault.Generation, false, platformv1.InvalidDefinitionReason,
			reconcileutil.FindingsMessage(field.ErrorList{err}))
		return
	}
	a := s.availability
	if a.Available {
		status.Availability = platformv1.VaultAvailable
	}
	reconcileutil.SetReady(&status.ResourceStatus, s.vault.Generation, a.Available, a.Reason, a.Message)
}
