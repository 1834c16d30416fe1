// Package identity is the identity plane on the SQL store (apiserver/store, SQLite or
// PostgreSQL): Principals, local accounts with the spec's password rule and argon2id hashes,
// failed-attempt counting and lockout, security stamps, server-side sessions whose tokens are
// stored only as SHA-256 digests, tenancy (Tenants, Workspaces, memberships and roles, the
// Platform administrator grant, the declared default context), preferences, and the append-only
// security audit log written in the same transaction as each change.
//
// It has no HTTP routes: apiserver/httpapi calls it after checking the operation's policy. The
// rules that hold over several rows (the last active Platform administrator, the final effective
// Owner of a workspace, no self-revocation or self-disable) are checked here, in the transaction
// of the change.
package identity
