// Package secret reconciles Secrets and Vaults. No Vault stores values yet (the Local Vault's
// master key arrives with the secrets work), so every Vault is honestly Unavailable and every
// Secret Missing, each with Ready False and a reason that says so.
package secret
