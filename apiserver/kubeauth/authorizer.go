// Package kubeauth brings the platform's identity to the kube API: an authenticator for personal
// access tokens and OIDC JWT bearer tokens, a workspace authorizer that applies the same roles and
// permissions as the service API (a workspace is a namespace), and the visibility rule that
// narrows `kubectl get namespaces` to the caller's workspaces.
package kubeauth

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	workv1 "platform.dev/platform/apis/work/v1"
	"platform.dev/platform/apiserver/identity"
)

// Extra keys of the users this package authenticates. They carry the Principal and, for a
// personal access token, its workspace and allow-list, so that the authorizer applies exactly
// what the token grants.
const (
	ExtraPrincipalID    = "platform.dev/principal-id"
	ExtraCredential     = "platform.dev/credential"
	ExtraPATWorkspaceID = "platform.dev/pat-workspace-id"
	ExtraPATPermissions = "platform.dev/pat-permissions"

	CredentialPAT    = "pat"
	CredentialBearer = "bearer"

	// UserPrefix starts the kube user name of a Principal: platform:principal:<id>.
	UserPrefix = "platform:principal:"
)

// caller is a Principal as the kube API sees it.
type caller struct {
	principalID string
	pat         bool
	// patWorkspaceID and allow are the token's workspace and allow-list when pat is set.
	patWorkspaceID string
	allow          identity.Permissions
}

// callerOf reads the Principal from u; false for users this package did not authenticate
// (administrators' certificates, the loopback client), which other authorizers decide.
func callerOf(u user.Info) (caller, bool) {
	if u == nil {
		return caller{}, false
	}
	extra := u.GetExtra()
	ids := extra[ExtraPrincipalID]
	if len(ids) != 1 || ids[0] == "" {
		return caller{}, false
	}
	c := caller{principalID: ids[0]}
	if credential := extra[ExtraCredential]; len(credential) == 1 && credential[0] == CredentialPAT {
		c.pat = true
		if ws := extra[ExtraPATWorkspaceID]; len(ws) == 1 {
			c.patWorkspaceID = ws[0]
		}
		for _, name := range extra[ExtraPATPermissions] {
			if p, err := identity.ParsePermission(name); err == nil {
				c.allow |= identity.PermissionsOf(p)
			}
		}
	}
	return c, true
}

// Authorizer decides the requests of Principals: a namespace is the workspace of the same route
// name, or a resource namespace of the workspace its label names (see StartNamespaces), and the
// caller needs the permission the verb maps to in that workspace.
type Authorizer struct {
	Identity *identity.Service

	// namespaces maps resource namespaces to their workspaces once StartNamespaces ran.
	namespaces atomic.Pointer[namespaceWorkspaces]
}

var _ authorizer.Authorizer = (*Authorizer)(nil)

// verbPermissions maps the verbs on Management resources to the permission they need.
var verbPermissions = map[string]identity.Permission{
	"get": identity.PermResourcesRead, "list": identity.PermResourcesRead, "watch": identity.PermResourcesRead,
	"create": identity.PermResourcesWrite, "update": identity.PermResourcesWrite, "patch": identity.PermResourcesWrite,
	"delete": identity.PermResourcesDelete, "deletecollection": identity.PermResourcesDelete,
}

// workPermission is the permission a request on the Work plane (work.platform.dev) needs, the
// service API's: runs/read to read, runs/delete to delete, runs/execute to pause, resume or
// cancel a Task (its subresources). Other writes need runs/execute too, so that they reach the
// API, which answers 405: nothing else of the Work plane is writable.
func workPermission(a authorizer.Attributes) (identity.Permission, bool) {
	switch a.GetVerb() {
	case "get", "list", "watch":
		return identity.PermRunsRead, true
	case "delete", "deletecollection":
		return identity.PermRunsDelete, true
	case "create", "update", "patch":
		return identity.PermRunsExecute, true
	}
	return "", false
}

// Authorize implements authorizer.Authorizer.
func (z *Authorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	c, ok := callerOf(a.GetUser())
	if !ok || !a.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if ns, ok := scopeNamespaceOf(a); ok {
		return z.authorizeScope(ctx, c, a, ns)
	}
	switch {
	case a.GetAPIGroup() == "" && a.GetResource() == "namespaces":
		return z.authorizeNamespace(ctx, c, a)
	case a.GetAPIGroup() == workv1.GroupName && a.GetNamespace() == "" && (a.GetVerb() == "list" || a.GetVerb() == "watch"):
		// `kubectl get tasks -A`: allowed, and narrowed by the group's storage to the workspaces
		// where the caller may read runs (WorkspacesWith).
		return authorizer.DecisionAllow, "", nil
	case a.GetNamespace() == "":
		return authorizer.DecisionNoOpinion, "", nil
	case a.GetAPIGroup() == workv1.GroupName:
		permission, ok := workPermission(a)
		if !ok {
			return authorizer.DecisionDeny, "verb " + a.GetVerb() + " is not granted on the Work plane by any workspace role", nil
		}
		return z.authorizeIn(ctx, c, a.GetNamespace(), permission)
	case a.GetAPIGroup() == platformv1.GroupVersion.Group:
		permission, ok := verbPermissions[a.GetVerb()]
		if !ok {
			return authorizer.DecisionDeny, "verb " + a.GetVerb() + " is not granted by any workspace role", nil
		}
		return z.authorizeIn(ctx, c, a.GetNamespace(), permission)
	case (a.GetAPIGroup() == "" || a.GetAPIGroup() == "events.k8s.io") && a.GetResource() == "events":
		// The Events of a workspace explain its resources; reading them is reading the resources.
		if permission, ok := verbPermissions[a.GetVerb()]; ok && permission == identity.PermResourcesRead {
			return z.authorizeIn(ctx, c, a.GetNamespace(), permission)
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// authorizeNamespace: a caller reads the namespaces of the workspaces it may read; lists and
// watches are allowed and narrowed by Visibility. Workspaces are created and deleted through the
// service API, never as namespaces.
func (z *Authorizer) authorizeNamespace(ctx context.Context, c caller, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.GetVerb() {
	case "list", "watch":
		if a.GetName() == "" {
			return authorizer.DecisionAllow, "", nil
		}
		fallthrough
	case "get":
		if a.GetSubresource() != "" {
			return authorizer.DecisionNoOpinion, "", nil
		}
		return z.authorizeIn(ctx, c, a.GetName(), identity.PermWorkspacesRead)
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// authorizeIn allows when the caller holds permission in the workspace namespace belongs to.
func (z *Authorizer) authorizeIn(ctx context.Context, c caller, namespace string, permission identity.Permission) (authorizer.Decision, string, error) {
	workspace, err := z.workspaceOf(ctx, namespace)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	permissions, err := z.permissions(ctx, c, workspace)
	if errors.Is(err, identity.ErrWorkspaceNotFound) {
		return authorizer.DecisionDeny, fmt.Sprintf("namespace %q is not a workspace the caller may access", namespace), nil
	}
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	if !permissions.Has(permission) {
		return authorizer.DecisionDeny, fmt.Sprintf("%s is required in workspace %q", permission, workspace), nil
	}
	return authorizer.DecisionAllow, "", nil
}

// permissions are the caller's effective permissions in the workspace: its live roles, and for a
// personal access token only in the token's workspace and within its allow-list.
func (z *Authorizer) permissions(ctx context.Context, c caller, workspace string) (identity.Permissions, error) {
	access, err := z.Identity.Access(ctx, c.principalID, workspace)
	if err != nil {
		return 0, err
	}
	if access.Workspace.RouteName != workspace {
		// Namespaces are named by route names; an id that happens to match is not the namespace.
		return 0, identity.ErrWorkspaceNotFound
	}
	if c.pat {
		if access.Workspace.ID != c.patWorkspaceID {
			return 0, identity.ErrWorkspaceNotFound
		}
		return access.Permissions & c.allow, nil
	}
	return access.Permissions, nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer; decisions here are unconditional.
func (z *Authorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(z.Authorize(ctx, a))
}

// EvaluateConditions implements authorizer.Authorizer; there are no conditions to evaluate.
func (z *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// Visibility narrows namespace lists and watches to the workspaces the caller may read (see
// native.NamespaceVisibility). Users this package did not authenticate see every namespace they
// are authorized to list.
func (z *Authorizer) Visibility(ctx context.Context, u user.Info) (func(string) bool, error) {
	c, ok := callerOf(u)
	if !ok {
		return nil, nil
	}
	// Access below keeps the active ones that the Principal, while active, may read.
	workspaces, err := z.Identity.ReadableWorkspaces(ctx, c.principalID, "")
	if err != nil {
		return nil, err
	}
	scopes, err := z.seesScopeNamespaces(ctx, c)
	if err != nil {
		return nil, err
	}
	visible := map[string]bool{}
	for _, ws := range workspaces {
		if c.pat && ws.ID != c.patWorkspaceID {
			continue
		}
		permissions, err := z.permissions(ctx, c, ws.RouteName)
		if err != nil && !errors.Is(err, identity.ErrWorkspaceNotFound) {
			return nil, err
		}
		if permissions.Has(identity.PermWorkspacesRead) {
			visible[ws.RouteName] = true
		}
	}
	// A resource namespace is visible with its workspace; the scope namespaces of Secrets and
	// Vaults to those who see their scopes.
	return func(name string) bool {
		if scopes && ownerscope.IsReservedNamespace(name) {
			return true
		}
		workspace, err := z.workspaceOf(ctx, name)
		return err == nil && visible[workspace]
	}, nil
}

// WorkspacesWith are the workspaces where the user holds permission, for the reads across
// namespaces that the authorizer allows and the storage narrows: its live roles, and for a
// personal access token its own workspace within its allow-list. all is set for users this
// package did not authenticate (administrators' certificates, the loopback client), whom other
// authorizers let read everything.
func (z *Authorizer) WorkspacesWith(ctx context.Context, u user.Info, permission identity.Permission) (workspaces []identity.Workspace, all bool, err error) {
	c, ok := callerOf(u)
	if !ok {
		return nil, true, nil
	}
	readable, err := z.Identity.ReadableWorkspaces(ctx, c.principalID, "")
	if err != nil {
		return nil, false, err
	}
	for _, ws := range readable {
		if c.pat && ws.ID != c.patWorkspaceID {
			continue
		}
		permissions, err := z.permissions(ctx, c, ws.RouteName)
		if errors.Is(err, identity.ErrWorkspaceNotFound) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if permissions.Has(permission) {
			workspaces = append(workspaces, ws)
		}
	}
	return workspaces, false, nil
}
