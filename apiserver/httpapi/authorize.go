package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/resourcenamespace"
)

// The named authorization policies. Every protected operation declares exactly one (see
// Secured); the authorize middleware enforces it before the handler runs.
const (
	PolicyAuthenticated       = "platform:authenticated"
	PolicyInteractiveUser     = "platform:interactive-user"
	PolicyPlatformAdmin       = "platform:platform-admin"
	PolicyWorkspaceReader     = "platform:workspace-reader"
	PolicyWorkspaceAdmin      = "platform:workspace-admin"
	PolicyAuthorizationReader = "platform:authorization-reader"
	PolicyAuthorizationAdmin  = "platform:authorization-admin"
	PolicyResourcesRead       = "platform:resources:read"
	PolicyResourcesWrite      = "platform:resources:write"
	PolicyResourcesDelete     = "platform:resources:delete"
	PolicyRunsRead            = "platform:runs:read"
	PolicyRunsExecute         = "platform:runs:execute"
	PolicyRunsDelete          = "platform:runs:delete"
)

// workspacePolicies are the policies that need a permission in the request's workspace.
var workspacePolicies = map[string]identity.Permission{
	PolicyWorkspaceReader:     identity.PermWorkspacesRead,
	PolicyWorkspaceAdmin:      identity.PermWorkspacesWrite,
	PolicyAuthorizationReader: identity.PermAuthorizationRead,
	PolicyAuthorizationAdmin:  identity.PermAuthorizationWrite,
	PolicyResourcesRead:       identity.PermResourcesRead,
	PolicyResourcesWrite:      identity.PermResourcesWrite,
	PolicyResourcesDelete:     identity.PermResourcesDelete,
	PolicyRunsRead:            identity.PermRunsRead,
	PolicyRunsExecute:         identity.PermRunsExecute,
	PolicyRunsDelete:          identity.PermRunsDelete,
}

// policyKey is the operation metadata key of the policy; policyExtension shows it in the OpenAPI
// document.
const (
	policyKey       = "platform.policy"
	policyExtension = "x-platform-policy"
)

// WorkspaceCookie remembers the workspace a browser selected (POST /api/identity/context/workspace).
const WorkspaceCookie = "platform-workspace"

// WorkspaceRouteParam is the route value that selects the workspace of an operation, before any
// header or cookie.
const WorkspaceRouteParam = "workspaceId"

// WorkplaceRouteParam selects the workspace of the Workplace routes
// (/api/workspaces/{workspace}/...), as WorkspaceRouteParam does elsewhere.
const WorkplaceRouteParam = "workspace"

// Secured makes op require a caller satisfying policy: 401 without a caller, 403 when the policy
// is not met.
func Secured(op huma.Operation, policy string) huma.Operation {
	op.Security = protected
	if op.Metadata == nil {
		op.Metadata = map[string]any{}
	}
	op.Metadata[policyKey] = policy
	if op.Extensions == nil {
		op.Extensions = map[string]any{}
	}
	op.Extensions[policyExtension] = policy
	op.Errors = appendMissing(op.Errors, http.StatusUnauthorized, http.StatusForbidden)
	if _, ok := workspacePolicies[policy]; ok {
		op.Errors = appendMissing(op.Errors, http.StatusNotFound)
	}
	return op
}

func appendMissing(codes []int, add ...int) []int {
	for _, c := range add {
		found := false
		for _, have := range codes {
			found = found || have == c
		}
		if !found {
			codes = append(codes, c)
		}
	}
	return codes
}

// RequestContext is the resolved context of a workspace-scoped request.
type RequestContext struct {
	PrincipalID string
	TenantID    string
	WorkspaceID string
	// Namespace is the workspace's route name, which names its kube namespace.
	Namespace string
	// Permissions are the caller's effective permissions in the workspace (for a PAT, its
	// allow-list intersected with the live ones).
	Permissions identity.Permissions
	// annotations are those of the workspace's namespace, which may set its limits.
	annotations map[string]string
}

type requestContextKey struct{}

// RequestContextFrom is the context the authorize middleware resolved.
func RequestContextFrom(ctx context.Context) (RequestContext, bool) {
	rc, ok := ctx.Value(requestContextKey{}).(RequestContext)
	return rc, ok
}

// workspace is the namespace of the request's workspace, as the authorize middleware resolved it
// for the operation's policy.
func (s *Server) Workspace(ctx context.Context) (string, error) {
	rc, ok := RequestContextFrom(ctx)
	if !ok {
		return "", huma.Error500InternalServerError("internal error: the operation declares no workspace policy")
	}
	return rc.Namespace, nil
}

var (
	ErrAuthenticationRequired = huma.Error401Unauthorized("authentication required")
	ErrNoPrincipal            = huma.Error403Forbidden("the caller is authenticated but linked to no Principal; an administrator must link the identity")
)

// authorize enforces the operation's policy, in the spec's order: authentication (done by
// authenticate), Principal resolution, request context, authorization.
func (s *Server) authorize(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		policy, _ := ctx.Operation().Metadata[policyKey].(string)
		if policy == "" {
			next(ctx)
			return
		}
		caller, ok := CallerFrom(ctx.Context())
		if !ok {
			_ = huma.WriteErr(api, ctx, http.StatusUnauthorized, ErrAuthenticationRequired.Error())
			return
		}
		err := s.checkPolicy(ctx, caller, policy)
		if err == nil {
			if permission, ok := workspacePolicies[policy]; ok {
				var rc RequestContext
				if rc, err = s.resolveWorkspace(ctx, caller); err == nil {
					if !rc.Permissions.Has(permission) {
						err = huma.Error403Forbidden("not permitted: " + string(permission) + " is required in workspace " + Quote(rc.Namespace))
					} else {
						ctx = huma.WithValue(ctx, requestContextKey{}, rc)
					}
				}
			}
		}
		if err != nil {
			WriteError(api, ctx, err)
			return
		}
		next(ctx)
	}
}

// checkPolicy checks the parts of policy that do not depend on a workspace.
func (s *Server) checkPolicy(ctx huma.Context, caller Caller, policy string) error {
	switch policy {
	case PolicyAuthenticated:
		return nil
	case PolicyInteractiveUser:
		if caller.Credential == CredentialPAT {
			return huma.Error403Forbidden("not permitted with a personal access token")
		}
		return nil
	case PolicyPlatformAdmin:
		if caller.Credential == CredentialPAT {
			return huma.Error403Forbidden("platform administration is not permitted with a personal access token")
		}
		if caller.ID == "" {
			return ErrNoPrincipal
		}
		if caller.Credential == CredentialDevelopment {
			return nil
		}
		if s.identity == nil {
			return huma.Error403Forbidden("not permitted: platform administrator required")
		}
		admin, err := s.identity.IsPlatformAdministrator(ctx.Context(), caller.ID)
		if err != nil {
			return Problem(err)
		}
		if !admin {
			return huma.Error403Forbidden("not permitted: platform administrator required")
		}
		return nil
	}
	if _, ok := workspacePolicies[policy]; !ok {
		return huma.Error500InternalServerError("internal error: unknown policy " + policy)
	}
	if caller.ID == "" {
		return ErrNoPrincipal
	}
	return nil
}

// resolveWorkspace chooses the request's workspace in the spec's order (route value, header,
// selection cookie, the caller's default) and resolves the caller's permissions there. A
// workspace that does not exist, is inactive or is not the caller's is not found. A stale
// selection cookie is ignored.
func (s *Server) resolveWorkspace(ctx huma.Context, caller Caller) (RequestContext, error) {
	explicit := ctx.Param(WorkspaceRouteParam)
	if explicit == "" {
		explicit = ctx.Param(WorkplaceRouteParam)
	}
	if explicit == "" {
		explicit = ctx.Header(WorkspaceHeader)
	}
	// A selector that no workspace can have is not found, whoever asks; a cookie that holds one
	// is stale and ignored.
	if explicit != "" && !IsWorkspaceSelector(explicit) {
		return RequestContext{}, huma.Error404NotFound("workspace not found: workspaces are named by a DNS label")
	}
	// The selection cookie counts only when the request selects none itself.
	var cookie string
	if explicit == "" && ctx.Header("Cookie") != "" {
		if c, err := huma.ReadCookie(ctx, WorkspaceCookie); err == nil && IsWorkspaceSelector(c.Value) {
			cookie = c.Value
		}
	}
	var (
		rc  RequestContext
		err error
	)
	switch {
	case s.identity == nil || caller.Credential == CredentialDevelopment:
		rc, err = s.developmentContext(caller, explicit, cookie)
	default:
		rc, err = s.IdentityContext(ctx.Context(), caller, explicit, cookie)
	}
	if err != nil {
		return rc, err
	}
	rc.annotations, err = s.workspaceNamespace(ctx.Context(), rc.Namespace)
	return rc, err
}

// developmentContext: the development caller may do everything in any workspace.
func (s *Server) developmentContext(caller Caller, explicit, cookie string) (RequestContext, error) {
	name := explicit
	if name == "" {
		name = cookie
	}
	if name == "" {
		name = caller.DefaultWorkspace
	}
	if name == "" {
		return RequestContext{}, huma.Error400BadRequest("no workspace selected: set the " + WorkspaceHeader + " header")
	}
	return RequestContext{PrincipalID: caller.ID, WorkspaceID: name, Namespace: name, Permissions: identity.AllPermissions}, nil
}

func (s *Server) IdentityContext(ctx context.Context, caller Caller, explicit, cookie string) (RequestContext, error) {
	notFound := func(name string) error { return huma.Error404NotFound("workspace " + Quote(name) + " not found") }
	access := func(selector string) (identity.Access, error) {
		a, err := s.identity.Access(ctx, caller.ID, selector)
		if err == nil && caller.PAT != nil && a.Workspace.ID != caller.PAT.WorkspaceID {
			// A personal access token reaches its own workspace only.
			err = identity.ErrWorkspaceNotFound
		}
		return a, err
	}
	var (
		a   identity.Access
		err error
	)
	switch {
	case explicit != "":
		if a, err = access(explicit); errors.Is(err, identity.ErrWorkspaceNotFound) {
			return RequestContext{}, notFound(explicit)
		}
	default:
		err = identity.ErrWorkspaceNotFound
		if cookie != "" && caller.PAT == nil {
			a, err = access(cookie)
		}
		if errors.Is(err, identity.ErrWorkspaceNotFound) {
			selector := ""
			if caller.PAT != nil {
				selector = caller.PAT.WorkspaceID
			} else if ws, derr := s.identity.DefaultWorkspace(ctx, caller.ID); derr == nil {
				selector = ws.ID
			} else if !errors.Is(derr, identity.ErrWorkspaceNotFound) {
				return RequestContext{}, Problem(derr)
			}
			if selector == "" {
				return RequestContext{}, huma.Error404NotFound("no workspace: the caller is a member of no active workspace")
			}
			if a, err = access(selector); errors.Is(err, identity.ErrWorkspaceNotFound) {
				return RequestContext{}, huma.Error404NotFound("no workspace: the caller is a member of no active workspace")
			}
		}
	}
	if err != nil {
		return RequestContext{}, Problem(err)
	}
	permissions := a.Permissions
	if caller.PAT != nil {
		permissions &= caller.PAT.Allow
	}
	return RequestContext{
		PrincipalID: caller.ID, TenantID: a.Workspace.TenantID, WorkspaceID: a.Workspace.ID,
		Namespace: a.Workspace.RouteName, Permissions: permissions,
	}, nil
}

// checkNamespace: a workspace whose namespace is gone or going is not found.
func (s *Server) CheckNamespace(ctx context.Context, name string) error {
	_, err := s.workspaceNamespace(ctx, name)
	return err
}

// workspaceNamespace is the annotations of the namespace of workspace name, unless it is gone or
// going. They are read, at every request, from the informer's object without a copy: nobody
// changes them.
func (s *Server) workspaceNamespace(ctx context.Context, name string) (map[string]string, error) {
	ns, err := executor.View(ctx, s.reads, client.ObjectKey{Name: name}, &corev1.Namespace{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, huma.Error404NotFound("workspace " + Quote(name) + " not found")
		}
		return nil, Problem(err)
	}
	if ns.DeletionTimestamp != nil {
		return nil, huma.Error404NotFound("workspace " + Quote(name) + " not found")
	}
	return ns.Annotations, nil
}

// WriteError writes err (a huma status error, else 500) as Problem Details from a middleware.
func WriteError(api huma.API, ctx huma.Context, err error) {
	var statusErr huma.StatusError
	if !errors.As(Problem(err), &statusErr) {
		noteFailure(ctx.Context(), err)
		_ = huma.WriteErr(api, ctx, http.StatusInternalServerError, "internal error")
		return
	}
	if statusErr.GetStatus() >= http.StatusInternalServerError {
		noteFailure(ctx.Context(), err)
	}
	var headers huma.HeadersError
	if errors.As(statusErr, &headers) {
		for k, values := range headers.GetHeaders() {
			for _, v := range values {
				ctx.AppendHeader(k, v)
			}
		}
	}
	_ = huma.WriteErr(api, ctx, statusErr.GetStatus(), statusErr.Error())
}

// RunAuthorizer revalidates, for the executor, that a run's Principal still holds runs/execute
// in the run's workspace. In Development mode the development Principal holds every permission.
func RunAuthorizer(cfg *config.Config, ids *identity.Service) (func(context.Context, work.Context) error, error) {
	mode, err := authenticationMode(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, c work.Context) error {
		if mode == ModeDevelopment && c.PrincipalID == DevelopmentPrincipal {
			return nil
		}
		if ids == nil {
			return executor.ErrNotPermitted
		}
		access, err := ids.Access(ctx, c.PrincipalID, c.WorkspaceID)
		if errors.Is(err, identity.ErrWorkspaceNotFound) {
			return fmt.Errorf("workspace %s: %w", c.WorkspaceID, executor.ErrNotPermitted)
		}
		if err != nil {
			return err
		}
		if !access.Permissions.Has(identity.PermRunsExecute) {
			return executor.ErrNotPermitted
		}
		return nil
	}, nil
}

// TriggerAccess is how the firing of a Trigger evaluates the authorization of the Principal it
// fires as, at every firing: runs/execute in the workspace from the Principal's live roles, as
// RunAuthorizer checks it again at execution. Refusals wrap triggers.ErrNotAuthorized.
func TriggerAccess(cfg *config.Config, ids *identity.Service, kube client.Reader) (triggers.Access, error) {
	mode, err := authenticationMode(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, principalID, workspace string) (work.Context, error) {
		if mode == ModeDevelopment && principalID == DevelopmentPrincipal {
			ns := &corev1.Namespace{}
			if err := kube.Get(ctx, client.ObjectKey{Name: workspace}, ns); err != nil {
				return work.Context{}, err
			}
			return work.Context{WorkspaceID: resourcenamespace.WorkspaceIDOf(ns), PrincipalID: principalID}, nil
		}
		if ids == nil {
			return work.Context{}, fmt.Errorf("the server has no identity store: %w", triggers.ErrNotAuthorized)
		}
		access, err := ids.Access(ctx, principalID, workspace)
		if errors.Is(err, identity.ErrWorkspaceNotFound) {
			return work.Context{}, fmt.Errorf("it is no longer a member of the workspace, or it, the workspace or its tenant is disabled: %w", triggers.ErrNotAuthorized)
		}
		if err != nil {
			return work.Context{}, err
		}
		if !access.Permissions.Has(identity.PermRunsExecute) {
			return work.Context{}, fmt.Errorf("its roles in the workspace do not grant runs/execute: %w", triggers.ErrNotAuthorized)
		}
		return work.Context{TenantID: access.Workspace.TenantID, WorkspaceID: access.Workspace.ID, PrincipalID: principalID}, nil
	}, nil
}

// WorkspaceAccess is a workspace a caller reaches and what it may do there.
type WorkspaceAccess struct {
	ID       string
	TenantID string
	// Namespace is the workspace's route name, which names its kube namespace.
	Namespace   string
	Permissions identity.Permissions
}

// ReachableWorkspaces lists the active workspaces the caller may read, with its effective
// permissions in each: its live roles, and for a personal access token only the token's
// workspace within its allow-list. Routes that search across workspaces (Entry discovery) start
// here, so that they never show what another workspace's role would not.
func (s *Server) ReachableWorkspaces(ctx context.Context) ([]WorkspaceAccess, error) {
	caller, ok := CallerFrom(ctx)
	if !ok {
		return nil, ErrAuthenticationRequired
	}
	if caller.ID == "" {
		return nil, ErrNoPrincipal
	}
	if s.identity == nil || caller.Credential == CredentialDevelopment {
		return s.developmentWorkspaces(ctx, caller)
	}
	readable, err := s.identity.ReadableWorkspaces(ctx, caller.ID, "")
	if err != nil {
		return nil, Problem(err)
	}
	out := make([]WorkspaceAccess, 0, len(readable))
	for _, ws := range readable {
		if caller.PAT != nil && ws.ID != caller.PAT.WorkspaceID {
			continue
		}
		access, err := s.identity.Access(ctx, caller.ID, ws.ID)
		if errors.Is(err, identity.ErrWorkspaceNotFound) {
			continue // inactive, or no longer the caller's
		}
		if err != nil {
			return nil, Problem(err)
		}
		permissions := access.Permissions
		if caller.PAT != nil {
			permissions &= caller.PAT.Allow
		}
		if permissions.Has(identity.PermWorkspacesRead) {
			out = append(out, WorkspaceAccess{ID: ws.ID, TenantID: ws.TenantID, Namespace: ws.RouteName, Permissions: permissions})
		}
	}
	return out, nil
}

// developmentWorkspaces: without the identity store every workspace namespace is reachable with
// every permission, as the development caller is Owner everywhere.
func (s *Server) developmentWorkspaces(ctx context.Context, caller Caller) ([]WorkspaceAccess, error) {
	namespaces := &corev1.NamespaceList{}
	if err := s.kube.List(ctx, namespaces); err != nil {
		return nil, Problem(err)
	}
	var out []WorkspaceAccess
	for i := range namespaces.Items {
		ns := &namespaces.Items[i]
		if strings.HasPrefix(ns.Name, "kube-") || resourcenamespace.IsResourceNamespace(ns) || !ns.DeletionTimestamp.IsZero() {
			continue
		}
		out = append(out, WorkspaceAccess{ID: resourcenamespace.WorkspaceIDOf(ns), Namespace: ns.Name, Permissions: identity.AllPermissions})
	}
	return out, nil
}
