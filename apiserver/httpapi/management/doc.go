// Package management is the management area of the service API: the Management resources
// (agents, flows and their published versions, model providers, models, model profiles) read
// and written as kube objects of the embedded control plane.
package management
