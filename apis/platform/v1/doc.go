// Package v1 holds the Management kinds of the API group platform.dev, version v1: the objects
// people author, apply and keep in Git, served as CRDs generated from these types into crds/.
package v1
