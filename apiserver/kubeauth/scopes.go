package kubeauth

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// scopeNamespaceOf is the instance's or a tenant's namespace (package scope) that a request
// addresses; false when it addresses none.
func scopeNamespaceOf(a authorizer.Attributes) (string, bool) {
	ns := a.GetNamespace()
	if a.GetAPIGroup() == "" && a.GetResource() == "namespaces" {
		ns = a.GetName()
	}
	return ns, ns != "" && ownerscope.IsReservedNamespace(ns)
}

// authorizeScope decides a Principal's requests in the namespace of the instance or of a tenant:
// Platform administrators only, never through a personal access token (which cannot use Platform
// administration), and only for the namespace itself, its Secrets and Vaults and the Events
// that explain them.
func (z *Authorizer) authorizeScope(ctx context.Context, c caller, a authorizer.Attributes, ns string) (authorizer.Decision, string, error) {
	if c.pat {
		return authorizer.DecisionDeny, fmt.Sprintf("namespace %q holds Secrets and Vaults of the instance or a tenant: personal access tokens cannot reach it", ns), nil
	}
	admin, err := z.Identity.IsPlatformAdministrator(ctx, c.principalID)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	if !admin {
		return authorizer.DecisionDeny, fmt.Sprintf("namespace %q holds Secrets and Vaults of the instance or a tenant: Platform administrators only", ns), nil
	}
	_, known := verbPermissions[a.GetVerb()]
	switch {
	case a.GetAPIGroup() == "" && a.GetResource() == "namespaces":
		if a.GetSubresource() == "" && (a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch") {
			return authorizer.DecisionAllow, "", nil
		}
	case a.GetAPIGroup() == platformv1.GroupVersion.Group && (a.GetResource() == "secrets" || a.GetResource() == "vaults") && known:
		return authorizer.DecisionAllow, "", nil
	case (a.GetAPIGroup() == "" || a.GetAPIGroup() == "events.k8s.io") && a.GetResource() == "events" &&
		(a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch"):
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionDeny, fmt.Sprintf("namespace %q holds only Secrets and Vaults of the instance or a tenant", ns), nil
}

// seesScopeNamespaces says whether the caller's namespace lists include the instance's and
// tenants' namespaces: Platform administrators, not through a personal access token.
func (z *Authorizer) seesScopeNamespaces(ctx context.Context, c caller) (bool, error) {
	if c.pat {
		return false, nil
	}
	return z.Identity.IsPlatformAdministrator(ctx, c.principalID)
}
