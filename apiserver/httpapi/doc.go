// Package httpapi is the shared core of the service API on :5100: the server, authentication and
// the policy middleware, Problem Details, ETag and If-Match helpers, the generic Management kind
// routes and the one OpenAPI 3.1 document. Each functional area registers its routes from its own
// package beside this one (identity, management, work, ...); package service assembles them.
package httpapi
