package identity

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/identity"
)

// Tenant is an organization that owns workspaces.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Status    string    `json:"status" enum:"Active,Disabled"`
	CreatedAt time.Time `json:"createdAt"`
}

// Workspace is a workspace of a Tenant: the isolation boundary of work.
type Workspace struct {
	ID          string    `json:"id"`
	TenantID    string    `json:"tenantId"`
	Name        string    `json:"name" doc:"Route name: a DNS label that selects the workspace in requests and names its namespace."`
	DisplayName string    `json:"displayName"`
	Status      string    `json:"status" enum:"Active,Disabled"`
	CreatedAt   time.Time `json:"createdAt"`
}

func workspaceFrom(w domain.Workspace) Workspace {
	return Workspace{ID: w.ID, TenantID: w.TenantID, Name: w.RouteName, DisplayName: w.DisplayName, Status: w.Status, CreatedAt: w.CreatedAt}
}

func workspacesFrom(ws []domain.Workspace) []Workspace {
	out := make([]Workspace, 0, len(ws))
	for _, w := range ws {
		out = append(out, workspaceFrom(w))
	}
	return out
}

// Organization is the administration view of the request's Tenant.
type Organization struct {
	Tenant     Tenant             `json:"tenant"`
	Workspaces []Workspace        `json:"workspaces" doc:"The Tenant's workspaces that the caller may read."`
	Counts     OrganizationCounts `json:"counts"`
}

// OrganizationCounts summarize the Tenant as the caller sees it.
type OrganizationCounts struct {
	Workspaces int `json:"workspaces" doc:"Workspaces of the Tenant that the caller may read."`
	Members    int `json:"members" doc:"Members of the Tenant."`
}

// WorkspaceMembership is a role that applies in a workspace.
type WorkspaceMembership struct {
	PrincipalID string    `json:"principalId"`
	DisplayName string    `json:"displayName"`
	Kind        string    `json:"kind" enum:"Human,Workload"`
	Status      string    `json:"status" enum:"Active,Disabled"`
	Role        string    `json:"role" enum:"Owner,Admin,Member,Viewer"`
	Scope       string    `json:"scope" enum:"workspace,tenant" doc:"workspace: the workspace's own membership, which these routes change; tenant: inherited from a tenant-scoped role."`
	CreatedAt   time.Time `json:"createdAt"`
}

func membershipFrom(m domain.Membership) WorkspaceMembership {
	return WorkspaceMembership{
		PrincipalID: m.Principal.ID, DisplayName: m.Principal.DisplayName, Kind: m.Principal.Kind, Status: m.Principal.Status,
		Role: string(m.Role), Scope: m.ScopeKind, CreatedAt: m.CreatedAt,
	}
}

// OrganizationMember is a member of the Tenant with its roles.
type OrganizationMember struct {
	PrincipalID string       `json:"principalId"`
	DisplayName string       `json:"displayName"`
	Kind        string       `json:"kind" enum:"Human,Workload"`
	Status      string       `json:"status" enum:"Active,Disabled"`
	Roles       []MemberRole `json:"roles" doc:"The member's tenant-scoped role and its roles in the workspaces the caller may read."`
}

// MemberRole is one role of a member.
type MemberRole struct {
	Scope         string `json:"scope" enum:"workspace,tenant"`
	WorkspaceID   string `json:"workspaceId,omitempty" doc:"The workspace of a workspace-scoped role."`
	WorkspaceName string `json:"workspaceName,omitempty"`
	Role          string `json:"role" enum:"Owner,Admin,Member,Viewer"`
}

type workspacePathInput struct {
	WorkspaceID string `path:"workspaceId" maxLength:"63" doc:"Id or route name of the workspace; it is also the workspace of the request."`
}

type membershipPathInput struct {
	WorkspaceID string `path:"workspaceId" maxLength:"63" doc:"Id or route name of the workspace; it is also the workspace of the request."`
	PrincipalID string `path:"principalId" maxLength:"64" doc:"Id of the Principal."`
}

// setMembershipInput repeats the path fields: huma reads no parameters from an embedded
// unexported struct.
type setMembershipInput struct {
	WorkspaceID string `path:"workspaceId" maxLength:"63" doc:"Id or route name of the workspace; it is also the workspace of the request."`
	PrincipalID string `path:"principalId" maxLength:"64" doc:"Id of the Principal."`
	Body        struct {
		Role string `json:"role" enum:"Owner,Admin,Member,Viewer" doc:"The Principal's role in the workspace."`
	}
}

type createWorkspaceInput struct {
	httpapi.WorkspaceInput
	Body struct {
		Name        string `json:"name" minLength:"1" maxLength:"63" doc:"Route name: a DNS label (lowercase letters, digits and -) not starting with kube- or platform-tenant- and other than platform-instance, unique for the instance; it names the workspace's namespace."`
		DisplayName string `json:"displayName,omitempty" maxLength:"128" doc:"Display name; the route name when empty."`
	}
}

// requestScope is the resolved context of a workspace-scoped identity route and its caller.
func (s *routes) requestScope(ctx context.Context) (httpapi.Caller, httpapi.RequestContext, error) {
	caller, err := s.principalCaller(ctx)
	if err != nil {
		return caller, httpapi.RequestContext{}, err
	}
	if caller.Credential == httpapi.CredentialDevelopment {
		// The development caller is no Principal of the identity store.
		return caller, httpapi.RequestContext{}, httpapi.ErrNoPrincipal
	}
	rc, ok := httpapi.RequestContextFrom(ctx)
	if !ok {
		return caller, rc, huma.Error500InternalServerError("internal error: the operation declares no workspace policy")
	}
	return caller, rc, nil
}

// routeWorkspace loads the workspace the route names and checks it against the request's resolved
// context: resource-based authorization, so that a handler never acts on a workspace other than
// the one the caller was authorized in.
func (s *routes) routeWorkspace(ctx context.Context, selector string) (domain.Workspace, httpapi.RequestContext, httpapi.Caller, error) {
	caller, rc, err := s.requestScope(ctx)
	if err != nil {
		return domain.Workspace{}, rc, caller, err
	}
	notFound := huma.Error404NotFound("workspace " + httpapi.Quote(selector) + " not found")
	ws, err := s.Identity().Workspace(ctx, selector)
	if err != nil {
		return ws, rc, caller, notFound
	}
	if ws.ID != rc.WorkspaceID || ws.TenantID != rc.TenantID || rc.PrincipalID != caller.ID || ws.Status != domain.StatusActive {
		return ws, rc, caller, notFound
	}
	return ws, rc, caller, nil
}

// readableIn are the workspaces of the Tenant that the caller may read, by id.
func (s *routes) readableIn(ctx context.Context, principalID, tenantID string) ([]domain.Workspace, map[string]domain.Workspace, error) {
	ws, err := s.Identity().ReadableWorkspaces(ctx, principalID, tenantID)
	if err != nil {
		return nil, nil, httpapi.Problem(err)
	}
	byID := make(map[string]domain.Workspace, len(ws))
	for _, w := range ws {
		byID[w.ID] = w
	}
	return ws, byID, nil
}

func (s *routes) registerOrganization() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-organization", Method: http.MethodGet, Path: "/api/identity/organization", Tags: []string{tagOrganization},
		Summary:     "Read the Tenant of the request's workspace: its workspaces the caller may read and counts",
		Description: "Needs authorization/read in the request's workspace.",
	}, httpapi.PolicyAuthorizationReader), func(ctx context.Context, _ *httpapi.WorkspaceInput) (*struct{ Body Organization }, error) {
		caller, rc, err := s.requestScope(ctx)
		if err != nil {
			return nil, err
		}
		tenant, err := s.Identity().Tenant(ctx, rc.TenantID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		visible, _, err := s.readableIn(ctx, caller.ID, tenant.ID)
		if err != nil {
			return nil, err
		}
		members, err := s.Identity().OrganizationMembers(ctx, tenant.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body Organization }{Body: Organization{
			Tenant:     Tenant{ID: tenant.ID, Name: tenant.Name, Status: tenant.Status, CreatedAt: tenant.CreatedAt},
			Workspaces: workspacesFrom(visible),
			Counts:     OrganizationCounts{Workspaces: len(visible), Members: len(members)},
		}}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-workspaces", Method: http.MethodGet, Path: "/api/identity/workspaces", Tags: []string{tagOrganization},
		Summary: "List the workspaces the caller may read",
		Description: "Needs authorization/read in the request's workspace. A Platform administrator sees every workspace of " +
			"every Tenant; others the active workspaces where they hold a role, directly or through their Tenant.",
	}, httpapi.PolicyAuthorizationReader), func(ctx context.Context, _ *httpapi.WorkspaceInput) (*httpapi.ListOutput[Workspace], error) {
		caller, _, err := s.requestScope(ctx)
		if err != nil {
			return nil, err
		}
		ws, err := s.Identity().ReadableWorkspaces(ctx, caller.ID, "")
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return httpapi.ItemsOutput(workspacesFrom(ws)), nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-workspace", Method: http.MethodGet, Path: "/api/identity/workspaces/{workspaceId}", Tags: []string{tagOrganization},
		Summary: "Read a workspace",
		Description: "Needs workspaces/read in that workspace; the workspace read must be the one the request was " +
			"authorized in. 404 when it does not exist or is not the caller's.",
	}, httpapi.PolicyWorkspaceReader), func(ctx context.Context, in *workspacePathInput) (*struct{ Body Workspace }, error) {
		ws, _, _, err := s.routeWorkspace(ctx, in.WorkspaceID)
		if err != nil {
			return nil, err
		}
		return &struct{ Body Workspace }{Body: workspaceFrom(ws)}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "create-workspace", Method: http.MethodPost, Path: "/api/identity/workspaces", Tags: []string{tagOrganization},
		Summary: "Create a workspace in the Tenant of the request's workspace",
		Description: "Needs workspaces/write in the request's workspace; the new workspace belongs to that workspace's Tenant. " +
			"Its namespace is created with it; when that fails nothing is kept (503). The creator becomes its Owner " +
			"(audited as workspace-membership.set), unless a Platform administrator, whose grant already covers it. " +
			"409 when a workspace or another namespace has the name.",
		DefaultStatus: http.StatusCreated,
		Errors:        []int{http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, httpapi.PolicyWorkspaceAdmin), func(ctx context.Context, in *createWorkspaceInput) (*struct{ Body Workspace }, error) {
		caller, rc, err := s.requestScope(ctx)
		if err != nil {
			return nil, err
		}
		if err := domain.ValidateWorkspaceName(in.Body.Name); err != nil {
			return nil, httpapi.Problem(err)
		}
		// A namespace that is no workspace's (a system one, say) must not become a workspace's.
		if err := s.Kube().Get(ctx, client.ObjectKey{Name: in.Body.Name}, &corev1.Namespace{}); err == nil {
			return nil, huma.Error409Conflict("a namespace of that name exists")
		} else if !apierrors.IsNotFound(err) {
			return nil, httpapi.Problem(err)
		}
		ws, err := s.Identity().CreateWorkspaceFor(ctx, caller.ID, domain.NewWorkspace{
			TenantID: rc.TenantID, RouteName: in.Body.Name, DisplayName: in.Body.DisplayName,
		}, s.Provision)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body Workspace }{Body: workspaceFrom(ws)}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-workspace-memberships", Method: http.MethodGet, Path: "/api/identity/workspaces/{workspaceId}/memberships",
		Tags: []string{tagOrganization}, Summary: "List the roles that apply in a workspace",
		Description: "Needs authorization/read in that workspace. The workspace's own memberships and the tenant-scoped roles " +
			"it inherits (scope tenant).",
	}, httpapi.PolicyAuthorizationReader), func(ctx context.Context, in *workspacePathInput) (*httpapi.ListOutput[WorkspaceMembership], error) {
		ws, _, _, err := s.routeWorkspace(ctx, in.WorkspaceID)
		if err != nil {
			return nil, err
		}
		ms, err := s.Identity().WorkspaceMemberships(ctx, ws.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := make([]WorkspaceMembership, 0, len(ms))
		for _, m := range ms {
			out = append(out, membershipFrom(m))
		}
		return httpapi.ItemsOutput(out), nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "set-workspace-membership", Method: http.MethodPut, Path: "/api/identity/workspaces/{workspaceId}/memberships/{principalId}",
		Tags: []string{tagOrganization}, Summary: "Set a Principal's membership and role in a workspace",
		Description: "Needs authorization/write in that workspace, and every permission of the role given and of the role " +
			"replaced (403 otherwise: no one grants more than they hold). A Principal that is not yet a member of the " +
			"workspace's Tenant becomes one; a Tenant membership grants no role by itself. Demoting the final effective " +
			"Owner of the workspace (tenant-scoped Owners count) is refused with 409. 404 for an unknown Principal. " +
			"Audited as workspace-membership.set when something changed.",
		Errors: []int{http.StatusConflict},
	}, httpapi.PolicyAuthorizationAdmin), func(ctx context.Context, in *setMembershipInput) (*struct{ Body WorkspaceMembership }, error) {
		ws, _, caller, err := s.routeWorkspace(ctx, in.WorkspaceID)
		if err != nil {
			return nil, err
		}
		m, err := s.Identity().SetWorkspaceMembership(ctx, caller.ID, ws.ID, in.PrincipalID, domain.Role(in.Body.Role))
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body WorkspaceMembership }{Body: membershipFrom(m)}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "remove-workspace-membership", Method: http.MethodDelete, Path: "/api/identity/workspaces/{workspaceId}/memberships/{principalId}",
		Tags: []string{tagOrganization}, Summary: "Remove a Principal's membership of a workspace",
		Description: "Needs authorization/write in that workspace and every permission of the role removed (403 otherwise). " +
			"The Tenant membership stays. Removing the final effective Owner is refused with 409; 404 when the Principal " +
			"has no membership of the workspace. Audited as workspace-membership.removed.",
		DefaultStatus: http.StatusNoContent,
		Errors:        []int{http.StatusConflict},
	}, httpapi.PolicyAuthorizationAdmin), func(ctx context.Context, in *membershipPathInput) (*struct{}, error) {
		ws, _, caller, err := s.routeWorkspace(ctx, in.WorkspaceID)
		if err != nil {
			return nil, err
		}
		return nil, httpapi.Problem(s.Identity().RemoveWorkspaceMembership(ctx, caller.ID, ws.ID, in.PrincipalID))
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-members", Method: http.MethodGet, Path: "/api/identity/members", Tags: []string{tagOrganization},
		Summary: "List the members of the Tenant of the request's workspace with their roles",
		Description: "Needs authorization/read in the request's workspace. Members are the Principals with a Tenant " +
			"membership or a role in the Tenant or one of its workspaces; workspace roles are shown for the workspaces the " +
			"caller may read.",
	}, httpapi.PolicyAuthorizationReader), func(ctx context.Context, _ *httpapi.WorkspaceInput) (*httpapi.ListOutput[OrganizationMember], error) {
		caller, rc, err := s.requestScope(ctx)
		if err != nil {
			return nil, err
		}
		_, visible, err := s.readableIn(ctx, caller.ID, rc.TenantID)
		if err != nil {
			return nil, err
		}
		members, err := s.Identity().OrganizationMembers(ctx, rc.TenantID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := make([]OrganizationMember, 0, len(members))
		for _, m := range members {
			member := OrganizationMember{PrincipalID: m.Principal.ID, DisplayName: m.Principal.DisplayName, Kind: m.Principal.Kind,
				Status: m.Principal.Status, Roles: []MemberRole{}}
			for _, r := range m.Roles {
				role := MemberRole{Scope: r.ScopeKind, Role: string(r.Role)}
				if r.ScopeKind == domain.ScopeWorkspace {
					w, ok := visible[r.ScopeID]
					if !ok {
						continue
					}
					role.WorkspaceID, role.WorkspaceName = w.ID, w.RouteName
				}
				member.Roles = append(member.Roles, role)
			}
			out = append(out, member)
		}
		return httpapi.ItemsOutput(out), nil
	})
}
