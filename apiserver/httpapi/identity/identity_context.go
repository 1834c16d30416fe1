package identity

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/identity"
)

// ContextPrincipal is who the caller is.
type ContextPrincipal struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName"`
	Kind        string `json:"kind" enum:"Human,Workload"`
}

// ContextTenant is the Tenant of the request's workspace.
type ContextTenant struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ContextWorkspace is the request's workspace.
type ContextWorkspace struct {
	ID          string `json:"id"`
	Name        string `json:"name" doc:"Route name: selects the workspace in requests and names its namespace."`
	DisplayName string `json:"displayName"`
}

// IdentityContext is the resolved context of a request: who calls, in which Tenant and
// Workspace, with which permissions there.
type IdentityContext struct {
	Principal ContextPrincipal `json:"principal"`
	// Tenant is absent only in Development mode without an identity store.
	Tenant      *ContextTenant   `json:"tenant,omitempty"`
	Workspace   ContextWorkspace `json:"workspace"`
	Permissions []string         `json:"permissions" doc:"The caller's effective permissions in the workspace (for a personal access token, intersected with its allow-list)."`
	// PlatformAdministrator says whether the caller holds the instance grant, which is distinct from
	// any role in the workspace.
	PlatformAdministrator bool   `json:"platformAdministrator"`
	Credential            string `json:"credential" enum:"session,pat,bearer,development" doc:"How the caller authenticated."`
}

type identityContextOutput struct {
	Body IdentityContext
}

type selectWorkspaceInput struct {
	Body struct {
		Workspace string `json:"workspace" minLength:"1" maxLength:"63" doc:"Id or route name of a workspace the caller may access."`
	}
}

type selectWorkspaceOutput struct {
	SetCookie http.Cookie `header:"Set-Cookie"`
	Body      IdentityContext
}

// Preferences are the caller's global preferences.
type Preferences struct {
	PrincipalID string     `json:"principalId" readOnly:"true" doc:"Always the caller's Principal, from its session."`
	Theme       string     `json:"theme" enum:"System,Light,Dark" doc:"Colour scheme; System (follow the device) until set."`
	UpdatedAt   *time.Time `json:"updatedAt,omitempty" readOnly:"true" doc:"When they were last saved; absent while the defaults apply."`
}

// replacePreferencesInput has no principal field: the Principal always comes from the session.
type replacePreferencesInput struct {
	Body struct {
		Theme string `json:"theme" enum:"System,Light,Dark" doc:"Colour scheme."`
	}
}

func preferencesFrom(p domain.Preferences) Preferences {
	out := Preferences{PrincipalID: p.PrincipalID, Theme: string(p.Theme)}
	if !p.UpdatedAt.IsZero() {
		out.UpdatedAt = &p.UpdatedAt
	}
	return out
}

// workspaceSelectionCookie remembers the selected workspace by id for the browser session.
func workspaceSelectionCookie(ctx context.Context, value string) http.Cookie {
	return http.Cookie{Name: httpapi.WorkspaceCookie, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: httpapi.OverTLS(ctx)}
}

// describeContext describes rc, the resolved context of the caller.
func (s *routes) describeContext(ctx context.Context, caller httpapi.Caller, rc httpapi.RequestContext) (IdentityContext, error) {
	permissions := make([]string, 0, len(domain.Catalog))
	for _, p := range rc.Permissions.List() {
		permissions = append(permissions, string(p))
	}
	out := IdentityContext{
		Workspace:   ContextWorkspace{ID: rc.WorkspaceID, Name: rc.Namespace, DisplayName: rc.Namespace},
		Permissions: permissions, Credential: caller.Credential,
	}
	if s.Identity() == nil || caller.Credential == httpapi.CredentialDevelopment {
		out.Principal = ContextPrincipal{ID: caller.ID, DisplayName: caller.ID, Kind: domain.KindHuman}
		out.PlatformAdministrator = caller.Credential == httpapi.CredentialDevelopment
		return out, nil
	}
	p, err := s.Identity().Principal(ctx, caller.ID)
	if err != nil {
		return out, httpapi.Problem(err)
	}
	out.Principal = ContextPrincipal{ID: p.ID, DisplayName: p.DisplayName, Kind: p.Kind}
	tenant, err := s.Identity().Tenant(ctx, rc.TenantID)
	if err != nil {
		return out, httpapi.Problem(err)
	}
	out.Tenant = &ContextTenant{ID: tenant.ID, Name: tenant.Name}
	ws, err := s.Identity().Workspace(ctx, rc.WorkspaceID)
	if err != nil {
		return out, httpapi.Problem(err)
	}
	out.Workspace.DisplayName = ws.DisplayName
	// A personal access token never carries Platform administration.
	if caller.Credential != httpapi.CredentialPAT {
		if out.PlatformAdministrator, err = s.Identity().IsPlatformAdministrator(ctx, caller.ID); err != nil {
			return out, httpapi.Problem(err)
		}
	}
	return out, nil
}

func (s *routes) registerRequestContext() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-identity-context", Method: http.MethodGet, Path: "/api/identity/context", Tags: []string{tagRequestContext},
		Summary: "Read the caller's Principal, Tenant, Workspace and permissions",
		Description: "The workspace is resolved as for every workspace-scoped request: the " + httpapi.WorkspaceHeader + " header, " +
			"the selection cookie, then the caller's default.",
	}, httpapi.PolicyWorkspaceReader), func(ctx context.Context, _ *httpapi.WorkspaceInput) (*identityContextOutput, error) {
		caller, _ := httpapi.CallerFrom(ctx)
		rc, ok := httpapi.RequestContextFrom(ctx)
		if !ok {
			return nil, huma.Error500InternalServerError("internal error: no request context")
		}
		view, err := s.describeContext(ctx, caller, rc)
		if err != nil {
			return nil, err
		}
		return &identityContextOutput{Body: view}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "select-workspace", Method: http.MethodPost, Path: "/api/identity/context/workspace", Tags: []string{tagRequestContext},
		Summary: "Select the workspace the browser acts in",
		Description: "Sets the HttpOnly, SameSite=Lax selection cookie " + httpapi.WorkspaceCookie + " (Secure over TLS) to the " +
			"workspace's id, which later requests without a route value or " + httpapi.WorkspaceHeader + " header use. The " +
			"workspace must be active and accessible to the caller (a member, directly or through its Tenant, or a " +
			"Platform administrator): 404 otherwise, whether it does not exist or is someone else's.",
		Errors: []int{http.StatusNotFound},
	}, httpapi.PolicyInteractiveUser), func(ctx context.Context, in *selectWorkspaceInput) (*selectWorkspaceOutput, error) {
		caller, _ := httpapi.CallerFrom(ctx)
		notFound := huma.Error404NotFound("workspace " + httpapi.Quote(in.Body.Workspace) + " not found")
		var rc httpapi.RequestContext
		switch {
		case s.Identity() == nil || caller.Credential == httpapi.CredentialDevelopment:
			rc = httpapi.RequestContext{PrincipalID: caller.ID, WorkspaceID: in.Body.Workspace, Namespace: in.Body.Workspace, Permissions: domain.AllPermissions}
		case caller.ID == "":
			return nil, httpapi.ErrNoPrincipal
		default:
			a, err := s.Identity().Access(ctx, caller.ID, in.Body.Workspace)
			if errors.Is(err, domain.ErrWorkspaceNotFound) {
				return nil, notFound
			}
			if err != nil {
				return nil, httpapi.Problem(err)
			}
			rc = httpapi.RequestContext{PrincipalID: caller.ID, TenantID: a.Workspace.TenantID, WorkspaceID: a.Workspace.ID,
				Namespace: a.Workspace.RouteName, Permissions: a.Permissions}
		}
		if err := s.CheckNamespace(ctx, rc.Namespace); err != nil {
			return nil, err
		}
		view, err := s.describeContext(ctx, caller, rc)
		if err != nil {
			return nil, err
		}
		return &selectWorkspaceOutput{SetCookie: workspaceSelectionCookie(ctx, rc.WorkspaceID), Body: view}, nil
	})
}

func (s *routes) registerPreferences() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-preferences", Method: http.MethodGet, Path: "/api/identity/preferences", Tags: []string{tagPreferences},
		Summary:     "Read the caller's preferences",
		Description: "Global per Principal; theme System until the caller saves preferences.",
	}, httpapi.PolicyInteractiveUser), func(ctx context.Context, _ *struct{}) (*struct{ Body Preferences }, error) {
		caller, err := s.principalCaller(ctx)
		if err != nil {
			return nil, err
		}
		p, err := s.Identity().Preferences(ctx, caller.ID)
		if errors.Is(err, domain.ErrPrincipalNotFound) {
			return nil, httpapi.ErrNoPrincipal
		}
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body Preferences }{Body: preferencesFrom(p)}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "replace-preferences", Method: http.MethodPut, Path: "/api/identity/preferences", Tags: []string{tagPreferences},
		Summary: "Replace the caller's preferences",
		Description: "The Principal is always the caller's, from its session; the body cannot name another (an unknown " +
			"field is refused with 422).",
		Errors: []int{http.StatusUnprocessableEntity},
	}, httpapi.PolicyInteractiveUser), func(ctx context.Context, in *replacePreferencesInput) (*struct{ Body Preferences }, error) {
		caller, err := s.principalCaller(ctx)
		if err != nil {
			return nil, err
		}
		p, err := s.Identity().SetPreferences(ctx, caller.ID, domain.Theme(in.Body.Theme))
		if errors.Is(err, domain.ErrPrincipalNotFound) {
			return nil, httpapi.ErrNoPrincipal
		}
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body Preferences }{Body: preferencesFrom(p)}, nil
	})
}
