package tools

import (
	"context"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// SecretLookup resolves a Secret reference of a consumer in namespace to the Secret's value.
// field is the reference's field path, for messages. The value must never reach a log, an event,
// an error or a tool argument.
type SecretLookup func(ctx context.Context, namespace, field string, ref platformv1.SecretReference) (string, error)

// SecretValues opens Secret values: the secrets package's Service, whose Value goes through the
// one Resolver of Secret references (scopes, grants) and the Vault.
type SecretValues interface {
	Value(ctx context.Context, consumerNamespace, field string, ref platformv1.SecretReference) ([]byte, error)
}

// VaultSecrets is the SecretLookup of a running platform: values come from their Vaults,
// resolved as every consumer resolves them.
func VaultSecrets(values SecretValues) SecretLookup {
	return func(ctx context.Context, namespace, field string, ref platformv1.SecretReference) (string, error) {
		value, err := values.Value(ctx, namespace, field, ref)
		if err != nil {
			return "", err
		}
		return string(value), nil
	}
}
