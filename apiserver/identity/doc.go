// Package identity is the local-account core of the identity plane, on the SQL store
// (apiserver/store, SQLite or PostgreSQL): Principals, local accounts with the spec's password
// rule and argon2id hashes, failed-attempt counting and lockout, security stamps, server-side
// sessions whose tokens are stored only as SHA-256 digests, and the append-only security audit
// log written in the same transaction as each change.
//
// It has no HTTP routes: the authentication handlers (login form, session cookie, bootstrap)
// and the administrator-grant layer call it. Authorization decisions, such as who may disable
// an account, are theirs.
package identity
