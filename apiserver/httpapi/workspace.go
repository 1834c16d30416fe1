package httpapi

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WorkspaceHeader selects the workspace of a request whose route does not name one.
const WorkspaceHeader = "X-Platform-Workspace"

// WorkspaceInput is embedded by the input of every workspace-scoped operation.
type WorkspaceInput struct {
	Workspace string `header:"X-Platform-Workspace" doc:"Workspace of the request; defaults to the caller's current workspace." maxLength:"63"`
}

// workspace resolves the namespace of the request's workspace: the route value, then the
// header, then the caller's default. A workspace that does not exist is not found, exactly like
// a resource of another workspace.
func (s *Server) workspace(ctx context.Context, fromRoute, fromHeader string) (string, error) {
	name := fromRoute
	if name == "" {
		name = fromHeader
	}
	if name == "" {
		principal, ok := principalFrom(ctx)
		if !ok || principal.DefaultWorkspace == "" {
			return "", huma.Error400BadRequest("no workspace selected: set the " + WorkspaceHeader + " header")
		}
		name = principal.DefaultWorkspace
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

func quote(s string) string { return `"` + s + `"` }
