// Package identity is the identity area of the service API: bootstrap, local and OIDC sign-in,
// accounts, Platform administrators, the request context, preferences, the organization and its
// memberships, personal access tokens, external identity links, the security audit and the
// account web pages. It calls the identity service (apiserver/identity).
package identity
