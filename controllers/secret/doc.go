// Package secret reconciles Secrets and Vaults: a Vault reports whether it can store and read
// values (its master key loads and opens its values), a Secret whether its Vault resolves under
// the rules of scopes and grants and holds its value (Configured or Missing), and a deleted
// Secret takes its value with it. Neither ever reads a value.
package secret
