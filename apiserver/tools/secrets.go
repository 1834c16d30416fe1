package tools

import (
	"context"
	"fmt"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/config"
)

// SecretLookup resolves a Secret reference of a consumer in namespace to the Secret's value.
// field is the reference's field path, for messages. The value must never reach a log, an event,
// an error or a tool argument.
type SecretLookup func(ctx context.Context, namespace, field string, ref platformv1.SecretReference) (string, error)

// ConfigSecrets is the interim SecretLookup until Secrets are read from their Vaults: the value
// of a Secret <name> of workspace namespace <ns> is the setting Platform:Secrets:<ns>:<name>
// (environment variable Platform__Secrets__<ns>__<name>), and the Secret object must exist.
// Only Secrets of the consumer's own workspace resolve.
func ConfigSecrets(cfg *config.Config) SecretLookup {
	return func(_ context.Context, namespace, field string, ref platformv1.SecretReference) (string, error) {
		if ref.ScopeRef != "" && ref.ScopeRef != platformv1.ScopeRef("/workspaces/"+namespace) {
			return "", fmt.Errorf("%s: Secrets of scope %s cannot be resolved yet; use a Secret of the provider's workspace", field, ref.ScopeRef)
		}
		if ref.Namespace != "" && ref.Namespace != "default" {
			return "", fmt.Errorf("%s: Secrets of resource namespace %q cannot be resolved yet", field, ref.Namespace)
		}
		value := cfg.Get("Platform:Secrets:" + namespace + ":" + string(ref.Name))
		if value == "" {
			return "", fmt.Errorf("%s: Secret %q has no value (set Platform__Secrets__%s__%s until Secrets are read from Vaults)",
				field, ref.Name, namespace, ref.Name)
		}
		return value, nil
	}
}
