// Package httpapi is the service API on :5100: huma operations over net/http with one OpenAPI 3.1
// document, Problem Details for every error, ETag concurrency, and Management routes that read
// and write the kube objects of the embedded control plane.
package httpapi
