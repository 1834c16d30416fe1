package workspace

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/internal/resourcenamespace"
)

// reconcileResourceNamespaces deletes the resource namespaces of a workspace that is being
// deleted, and a resource namespace whose workspace is gone or going: the embedded control plane
// has no garbage collector, and a namespace cannot own another anyway. ns is not an active
// workspace.
func (r *Reconciler) reconcileResourceNamespaces(ctx context.Context, ns *corev1.Namespace) (ctrl.Result, error) {
	switch {
	case systemNamespaces[ns.Name]:
		return ctrl.Result{}, nil
	case resourcenamespace.IsResourceNamespace(ns):
		if !ns.DeletionTimestamp.IsZero() {
			return ctrl.Result{}, nil
		}
		workspace := &corev1.Namespace{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: resourcenamespace.WorkspaceOf(ns)}, workspace)
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		if err == nil && workspace.DeletionTimestamp.IsZero() {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.deleteNamespace(ctx, ns)
	}
	// A workspace being deleted: its resource namespaces go with it.
	namespaces, err := resourcenamespace.OfWorkspace(ctx, r.Client, ns.Name)
	if err != nil || len(namespaces) == 0 {
		return ctrl.Result{}, err
	}
	for _, other := range namespaces[1:] {
		if err := r.deleteNamespace(ctx, other); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) deleteNamespace(ctx context.Context, ns *corev1.Namespace) error {
	if err := r.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
