// Package controlplane runs the embedded Kubernetes-compatible API: etcd (embedded or external),
// the apiextensions server for CRDs and the native groups, behind one discovery and OpenAPI
// document, with TLS and pluggable authentication and authorization.
package controlplane
