// Package ownerscope names the owner scopes of Secrets and Vaults (the instance, a tenant, a
// workspace), parses their scopeRefs, and says which kube namespace holds the objects of each.
//
// A workspace's objects live in the workspace's own namespace (its route name). The instance and
// each tenant get a namespace of their own with a reserved, deterministic name, so that the kube
// authorizer can recognize them from the name alone and give them to Platform administrators only:
// `platform-instance`, and `platform-tenant-<tenant id>`. Both carry the label ScopeLabel (and
// tenants TenantLabel) for people and selectors; the name is what the platform trusts.
package ownerscope

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Kind is the level of a scope in the tree instance > tenant > workspace.
type Kind string

const (
	Instance  Kind = "instance"
	Tenant    Kind = "tenant"
	Workspace Kind = "workspace"
)

// Namespaces and labels of the instance and tenant scopes.
const (
	// InstanceNamespace holds the Secrets and Vaults of the instance.
	InstanceNamespace = "platform-instance"
	// TenantNamespacePrefix starts the namespace of a tenant's Secrets and Vaults; the tenant id
	// follows.
	TenantNamespacePrefix = "platform-tenant-"
	// ScopeLabel says which kind of scope a scope namespace holds: instance or tenant.
	ScopeLabel = "platform/scope"
	// TenantLabel is the tenant id of a tenant's scope namespace.
	TenantLabel = "platform/tenant-id"
)

// Scope is one owner scope. ID is the tenant or workspace id; empty for the instance.
type Scope struct {
	Kind Kind
	ID   string
}

// Of returns the instance scope, or the tenant or workspace scope with id.
func Of(kind Kind, id string) Scope {
	if kind == Instance {
		return Scope{Kind: Instance}
	}
	return Scope{Kind: kind, ID: id}
}

// Ref is the scopeRef of s: /instance, /tenants/<id> or /workspaces/<id>.
func (s Scope) Ref() platformv1.ScopeRef {
	switch s.Kind {
	case Instance:
		return platformv1.InstanceScope
	case Tenant:
		return platformv1.ScopeRef("/tenants/" + s.ID)
	case Workspace:
		return platformv1.ScopeRef("/workspaces/" + s.ID)
	}
	return ""
}

// String is the scopeRef, for messages.
func (s Scope) String() string { return string(s.Ref()) }

// Parse reads a scopeRef. It accepts exactly the three forms the spec names, with an id as the
// CRD's ScopeRef pattern allows it.
func Parse(ref platformv1.ScopeRef) (Scope, error) {
	r := string(ref)
	if r == string(platformv1.InstanceScope) {
		return Scope{Kind: Instance}, nil
	}
	for prefix, kind := range map[string]Kind{"/tenants/": Tenant, "/workspaces/": Workspace} {
		if id, ok := strings.CutPrefix(r, prefix); ok && validID(id) {
			return Scope{Kind: kind, ID: id}, nil
		}
	}
	return Scope{}, fmt.Errorf("scopeRef %q is not /instance, /tenants/<tenant id> or /workspaces/<workspace id>", r)
}

// validID is the id part of the ScopeRef pattern: a letter or digit, then up to 127 letters,
// digits, '.', '_' or '-'.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// TenantNamespace is the namespace of the tenant's Secrets and Vaults. Tenant ids the platform
// makes (32 hex digits) always fit; an id that does not make a DNS label is refused.
func TenantNamespace(tenantID string) (string, error) {
	name := TenantNamespacePrefix + tenantID
	if tenantID == "" || len(validation.IsDNS1123Label(name)) > 0 {
		return "", fmt.Errorf("tenant id %q cannot name a namespace (a DNS label of at most 63 characters)", tenantID)
	}
	return name, nil
}

// OfNamespace returns the instance or tenant scope whose objects namespace ns holds; false for
// any other namespace (a workspace's, the cluster's own).
func OfNamespace(ns string) (Scope, bool) {
	if ns == InstanceNamespace {
		return Scope{Kind: Instance}, true
	}
	if id, ok := strings.CutPrefix(ns, TenantNamespacePrefix); ok && id != "" {
		return Scope{Kind: Tenant, ID: id}, true
	}
	return Scope{}, false
}

// IsReservedNamespace says whether ns is, or could become, the namespace of the instance or of a
// tenant: no workspace may take such a name.
func IsReservedNamespace(ns string) bool {
	return ns == InstanceNamespace || strings.HasPrefix(ns, TenantNamespacePrefix)
}

// Labels are the labels of the scope namespace of s (instance or tenant).
func Labels(s Scope) map[string]string {
	labels := map[string]string{ScopeLabel: string(s.Kind)}
	if s.Kind == Tenant {
		labels[TenantLabel] = s.ID
	}
	return labels
}
