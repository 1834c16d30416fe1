package reconcileutil

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/resourcenamespace"
)

// ResolveNamespace and WorkspaceRequests read the workspace's namespaces.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// ResolveNamespace is the kube namespace that a reference into resource namespace rns, written in
// kube namespace from, resolves to: the referrer's own when omitted (an installed Pack's Entry
// naming its Flow means the Pack's Flow; in the workspace's own namespace that is `default`), the
// workspace's own for `default`, else that resource namespace of the same workspace, never
// another workspace's. When it does not exist, ns is "" and missing says so, for a condition
// message.
func ResolveNamespace(ctx context.Context, c client.Reader, from string, rns platformv1.ResourceNamespace) (ns, missing string, err error) {
	if rns == "" {
		return from, "", nil
	}
	ns, err = resourcenamespace.Resolve(ctx, c, from, rns)
	if errors.Is(err, resourcenamespace.ErrNotFound) {
		return "", fmt.Sprintf("resource namespace %s does not exist in the workspace", rns), nil
	}
	return ns, "", err
}

// SetReady sets the Ready condition of status for generation.
func SetReady(status *platformv1.ResourceStatus, generation int64, ready bool, reason, message string) {
	condition := metav1.Condition{
		Type:               platformv1.ReadyCondition,
		Status:             metav1.ConditionFalse,
		Reason:             reason,
		Message:            oneLine(message),
		ObservedGeneration: generation,
	}
	if ready {
		condition.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, condition)
}

// WorkspaceRequests are the requests for the objects of newList's kind in every kube namespace of
// the workspace that namespace belongs to (filtered by opts): a reference may cross the resource
// namespaces of a workspace, never workspaces, so a change in one namespace may concern objects
// of another.
func WorkspaceRequests(ctx context.Context, c client.Reader, namespace string, newList func() client.ObjectList, opts ...client.ListOption) ([]reconcile.Request, error) {
	workspace, err := resourcenamespace.WorkspaceOfName(ctx, c, namespace)
	switch {
	case errors.Is(err, resourcenamespace.ErrNotFound):
		workspace = namespace
	case err != nil:
		return nil, err
	}
	namespaces, err := resourcenamespace.OfWorkspace(ctx, c, workspace)
	if err != nil {
		return nil, err
	}
	var requests []reconcile.Request
	for _, ns := range namespaces {
		list := newList()
		if err := c.List(ctx, list, append([]client.ListOption{client.InNamespace(ns.Name)}, opts...)...); err != nil {
			return nil, err
		}
		requests = append(requests, Requests(list)...)
	}
	return requests, nil
}
