package secret

import (
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// NoValueMessage is the Ready message of a Secret whose Vault exists: no Vault stores values yet.
const NoValueMessage = "no value is stored yet; Vaults arrive with the secrets issue"

// setReadyCondition reports whether the Secret's value can be used: its Vault exists
// (VaultNotFound) and holds a value (SecretValueMissing). No Vault stores values yet, so a Secret
// whose Vault exists is honestly Missing; state says the same in one word.
func setReadyCondition(s *scope) {
	status := &s.secret.Status
	status.State = platformv1.SecretMissing
	status.ValueUpdatedTime = nil
	if s.vaultProblem != "" {
		reconcileutil.SetReady(&status.ResourceStatus, s.secret.Generation, false, platformv1.VaultNotFoundReason, s.vaultProblem)
		return
	}
	reconcileutil.SetReady(&status.ResourceStatus, s.secret.Generation, false, platformv1.SecretValueMissingReason, NoValueMessage)
}
