// Package openapi holds the generated OpenAPI definitions of the upstream Kubernetes types that the
// embedded apiserver serves natively (core Namespaces and Events, coordination Leases, events.k8s.io
// Events). Regenerate with `make generate`; do not add hand-written code here.
package openapi
