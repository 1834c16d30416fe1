package httpapi

import (
	"context"
	"errors"

	"github.com/danielgtaylor/huma/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apiserver/identity"
)

// WorkspaceHeader selects the workspace of a request whose route does not name one.
const WorkspaceHeader = "X-Platform-Workspace"

// WorkspaceInput is embedded by the input of every workspace-scoped operation.
type WorkspaceInput struct {
	Workspace string `header:"X-Platform-Workspace" doc:"Workspace of the request; defaults to the caller's current workspace." maxLength:"63"`
}

// workspace resolves the namespace of the request's workspace: the route value, then the
// header, then the caller's default. With local accounts the caller must be allowed to select
// it. A workspace that does not exist is not found, exactly like a resource of another workspace.
func (s *Server) workspace(ctx context.Context, fromRoute, fromHeader string) (string, error) {
	name := fromRoute
	if name == "" {
		name = fromHeader
	}
	if name == "" {
		var err error
		if name, err = s.defaultWorkspace(ctx); err != nil {
			return "", err
		}
	}
	if s.localAccounts() {
		// Only an active workspace the caller is a member of, or any active one for a Platform
		// administrator; any other is not found, exactly like one that does not exist.
		principal, _ := principalFrom(ctx)
		if _, err := s.identity.AccessibleWorkspace(ctx, principal.ID, name); err != nil {
			if errors.Is(err, identity.ErrWorkspaceNotFound) {
				return "", huma.Error404NotFound("workspace " + quote(name) + " not found")
			}
			return "", problem(err)
		}
	}
	ns := &corev1.Namespace{}
	if err := s.kube.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return "", huma.Error404NotFound("workspace " + quote(name) + " not found")
		}
		return "", problem(err)
	}
	if ns.DeletionTimestamp != nil {
		return "", huma.Error404NotFound("workspace " + quote(name) + " not found")
	}
	return name, nil
}

// defaultWorkspace is the caller's default: the one their principal names, else, with local
// accounts, their first active membership (any active workspace for a Platform administrator).
func (s *Server) defaultWorkspace(ctx context.Context) (string, error) {
	principal, ok := principalFrom(ctx)
	if ok && principal.DefaultWorkspace != "" {
		return principal.DefaultWorkspace, nil
	}
	if ok && s.localAccounts() {
		ws, err := s.identity.DefaultWorkspace(ctx, principal.ID)
		if err == nil {
			return ws.RouteName, nil
		}
		if !errors.Is(err, identity.ErrWorkspaceNotFound) {
			return "", problem(err)
		}
	}
	return "", huma.Error400BadRequest("no workspace selected: set the " + WorkspaceHeader + " header")
}

func quote(s string) string { return `"` + s + `"` }

// NamespaceProvisioner returns the provisioner of new workspaces: it creates the workspace's
// namespace, named by its route name. A namespace that exists already is kept and used.
func NamespaceProvisioner(kube client.Client) func(context.Context, identity.Workspace) error {
	return func(ctx context.Context, ws identity.Workspace) error {
		ns := &corev1.Namespace{}
		ns.Name = ws.RouteName
		if err := kube.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}
}
