package secret

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// NoValueMessage is the Ready message of a Secret whose Vault holds no value for it.
const NoValueMessage = "the Vault holds no value for this Secret: write one with PUT /api/secrets/{name}/value (values are write-only)"

// setReadyCondition reports whether the Secret's value can be used. state says whether the Vault
// holds a value (Configured) or not (Missing), whatever else is wrong; Ready is False with the
// Resolver's reason when the Vault does not resolve (VaultNotFound, UseNotGranted,
// InvalidScopeRef), VaultUnavailable when it cannot store or read values, SecretValueMissing when
// it holds none.
func setReadyCondition(s *scope) {
	status := &s.secret.Status
	in := s.inspection
	status.State = platformv1.SecretMissing
	status.ValueUpdatedTime = nil
	if in.Entry.Present {
		status.State = platformv1.SecretConfigured
		updated := metav1.NewTime(in.Entry.UpdatedAt)
		status.ValueUpdatedTime = &updated
	}
	vault := s.secret.Definition.Vault.Name
	switch {
	case in.Refusal != nil:
		reconcileutil.SetReady(&status.ResourceStatus, s.secret.Generation, false, in.Refusal.Reason, in.Refusal.Message)
	case in.NotLocal:
		reconcileutil.SetReady(&status.ResourceStatus, s.secret.Generation, false, platformv1.VaultUnavailableReason,
			fmt.Sprintf("Vault %q is not a Local Vault, the only provider that stores values", vault))
	case !in.Availability.Available:
		reconcileutil.SetReady(&status.ResourceStatus, s.secret.Generation, false, platformv1.VaultUnavailableReason,
			fmt.Sprintf("Vault %q is unavailable: %s", vault, in.Availability.Message))
	case !in.Entry.Present:
		reconcileutil.SetReady(&status.ResourceStatus, s.secret.Generation, false, platformv1.SecretValueMissingReason, NoValueMessage)
	case !in.Entry.SealedWithCurrentKey:
		reconcileutil.SetReady(&status.ResourceStatus, s.secret.Generation, false, platformv1.VaultUnavailableReason,
			fmt.Sprintf("the value in Vault %q was stored under another master key and cannot be read", vault))
	default:
		reconcileutil.SetReady(&status.ResourceStatus, s.secret.Generation, true, platformv1.ResolvedReason,
			fmt.Sprintf("Vault %q holds the value", vault))
	}
}
