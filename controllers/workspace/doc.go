// Package workspace reconciles workspaces (the namespaces that are not the cluster's own): it
// gives each one the built-in resources the spec promises, today the `maf-builtin`
// RuntimeProfile.
package workspace
