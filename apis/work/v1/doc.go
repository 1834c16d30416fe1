// Package v1 holds the kinds of the API group work.platform.dev, version v1: read views of the
// Work plane (Tasks, Interactions, FlowRuns) that the embedded kube API serves from the SQL store,
// so that kubectl and controller-runtime clients list, get and watch them like any kind. They are
// not CRDs and never live in etcd.
//
// +k8s:openapi-gen=true
// +kubebuilder:object:generate=true
// +kubebuilder:skip
package v1
