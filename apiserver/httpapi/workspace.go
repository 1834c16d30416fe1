package httpapi

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/internal/resourcenamespace"
)

// WorkspaceHeader selects the workspace of a request whose route does not name one.
const WorkspaceHeader = "X-Platform-Workspace"

// WorkspaceInput is embedded by the input of every workspace-scoped operation; the authorize
// middleware reads the header (see resolveWorkspace), the field documents it.
type WorkspaceInput struct {
	Workspace string `header:"X-Platform-Workspace" doc:"Workspace of the request (route name or id); defaults to the selected workspace (cookie), else the caller's first." maxLength:"63"`
}

func Quote(s string) string { return `"` + s + `"` }

// NamespaceProvisioner returns the provisioner of new workspaces: it creates the workspace's
// namespace, named by its route name and annotated with the workspace's id (which published
// Entries carry as their owner). A namespace that exists already is kept, used and annotated.
func NamespaceProvisioner(kube client.Client) func(context.Context, identity.Workspace) error {
	return func(ctx context.Context, ws identity.Workspace) error {
		ns := &corev1.Namespace{}
		ns.Name = ws.RouteName
		ns.Annotations = map[string]string{resourcenamespace.WorkspaceIDAnnotation: ws.ID}
		err := kube.Create(ctx, ns)
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		patch := []byte(`{"metadata":{"annotations":{"` + resourcenamespace.WorkspaceIDAnnotation + `":"` + ws.ID + `"}}}`)
		return kube.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch))
	}
}
