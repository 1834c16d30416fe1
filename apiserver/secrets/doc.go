// Package secrets is the domain of Secrets and Vaults: the scope tree they belong to, the one
// Resolver of Secret and Vault references and use grants that every consumer calls, the Local
// Vault (AES-256-GCM payloads in the SQL store under a master key that never enters it), the
// admission rules of scopes, and the Console's name derivation. No function here returns a value
// except Service.Value, which consumers call for one request at a time.
package secrets
