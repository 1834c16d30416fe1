// Package oidc is the platform's side of an OpenID Provider: it verifies JWT bearer tokens issued
// for the platform's audience, and runs the authorization code flow with PKCE of the interactive
// sign-in up to the verified (iss, sub) pair of the ID token. Mapping that pair to a Principal is
// the identity service's concern.
package oidc
