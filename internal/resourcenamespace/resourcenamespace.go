// Package resourcenamespace maps the resource namespaces of a workspace to kube namespaces. A
// workspace's `default` resource namespace is its own kube namespace, named by its route name;
// every other one (a Pack's `publisher.name`) is a kube namespace of its own, with a name derived
// deterministically from both, labelled with its workspace and annotated with its resource
// namespace. It is the one place that knows the mapping: reconcilers, the service API and the
// kube authorizer all go through it.
package resourcenamespace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

const (
	// WorkspaceLabel is set on the kube namespace of a non-default resource namespace: the
	// route name of its workspace (which is the name of the workspace's own kube namespace).
	WorkspaceLabel = "platform/workspace"
	// ResourceNamespaceAnnotation holds the resource namespace (`publisher.name`) that the kube
	// namespace is; an annotation, since a resource namespace may be longer than a label value.
	ResourceNamespaceAnnotation = "platform/resource-namespace"
	// WorkspaceIDAnnotation is set on a workspace's own kube namespace: the workspace's id in the
	// identity store, which published Entries carry as their owner.
	WorkspaceIDAnnotation = "platform/workspace-id"
	// FieldOwner is the field manager of the namespaces Ensure creates.
	FieldOwner = "platform-resource-namespaces"
)

// ErrNotFound: the resource namespace does not exist in the workspace.
var ErrNotFound = errors.New("resource namespace not found")

// maxNameLength is the longest kube namespace name (a DNS label).
const maxNameLength = 63

// KubeName is the name of the kube namespace of resource namespace rns of the workspace whose
// route name is workspace: the workspace itself for `default` (or ""), otherwise a readable
// prefix and a short hash of both, so that distinct pairs never share a name.
func KubeName(workspace string, rns platformv1.ResourceNamespace) string {
	if isDefault(rns) {
		return workspace
	}
	sum := sha256.Sum256([]byte(workspace + "/" + string(rns)))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	prefix := workspace + "-" + strings.ReplaceAll(string(rns), ".", "-")
	if len(prefix) > maxNameLength-len(suffix) {
		prefix = strings.TrimRight(prefix[:maxNameLength-len(suffix)], "-")
	}
	return prefix + suffix
}

func isDefault(rns platformv1.ResourceNamespace) bool {
	return rns == "" || rns == platformv1.DefaultResourceNamespace
}

// WorkspaceOf is the route name of the workspace a kube namespace belongs to: its label for a
// non-default resource namespace, its own name otherwise.
func WorkspaceOf(ns *corev1.Namespace) string {
	if ws := ns.Labels[WorkspaceLabel]; ws != "" {
		return ws
	}
	return ns.Name
}

// WorkspaceIDOf is the id of the workspace whose own kube namespace is ns: its annotation, else
// its name (a namespace made without the identity store, as in Development mode, where the two
// are the same).
func WorkspaceIDOf(ns *corev1.Namespace) string {
	if id := ns.Annotations[WorkspaceIDAnnotation]; id != "" {
		return id
	}
	return ns.Name
}

// Of is the resource namespace a kube namespace is: its annotation, else `default`.
func Of(ns *corev1.Namespace) platformv1.ResourceNamespace {
	if rns := ns.Annotations[ResourceNamespaceAnnotation]; rns != "" && ns.Labels[WorkspaceLabel] != "" {
		return platformv1.ResourceNamespace(rns)
	}
	return platformv1.DefaultResourceNamespace
}

// IsResourceNamespace reports whether a kube namespace is a non-default resource namespace of a
// workspace (and so not a workspace itself).
func IsResourceNamespace(ns *corev1.Namespace) bool {
	return ns.Labels[WorkspaceLabel] != ""
}

// Ensure creates, or finds, the kube namespace of resource namespace rns of workspace and returns
// its name. A namespace of that name that belongs to something else is an error, never adopted.
func Ensure(ctx context.Context, c client.Client, workspace string, rns platformv1.ResourceNamespace) (string, error) {
	name := KubeName(workspace, rns)
	if isDefault(rns) {
		return name, nil
	}
	ns := &corev1.Namespace{}
	ns.Name = name
	ns.Labels = map[string]string{WorkspaceLabel: workspace}
	ns.Annotations = map[string]string{ResourceNamespaceAnnotation: string(rns)}
	err := c.Create(ctx, ns, client.FieldOwner(FieldOwner))
	if err == nil {
		return name, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("resource namespace %s of workspace %s: %w", rns, workspace, err)
	}
	if _, err := lookup(ctx, c, workspace, rns); err != nil {
		return "", err
	}
	return name, nil
}

// Resolve is the kube namespace that a reference into resource namespace rns means when it is
// written in kube namespace from: `default` is from's workspace, any other resource namespace is
// looked up in that same workspace (never another). ErrNotFound when it does not exist.
func Resolve(ctx context.Context, c client.Reader, from string, rns platformv1.ResourceNamespace) (string, error) {
	workspace, err := WorkspaceOfName(ctx, c, from)
	if err != nil {
		return "", err
	}
	if isDefault(rns) {
		return workspace, nil
	}
	return lookup(ctx, c, workspace, rns)
}

// WorkspaceOfName is the route name of the workspace the kube namespace name belongs to.
func WorkspaceOfName(ctx context.Context, c client.Reader, name string) (string, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("namespace %s: %w", name, ErrNotFound)
		}
		return "", err
	}
	return WorkspaceOf(ns), nil
}

// lookup finds the kube namespace of a non-default resource namespace and checks that it is
// that resource namespace of that workspace.
func lookup(ctx context.Context, c client.Reader, workspace string, rns platformv1.ResourceNamespace) (string, error) {
	name := KubeName(workspace, rns)
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("resource namespace %s of workspace %s: %w", rns, workspace, ErrNotFound)
		}
		return "", err
	}
	if ns.Labels[WorkspaceLabel] != workspace || ns.Annotations[ResourceNamespaceAnnotation] != string(rns) || !ns.DeletionTimestamp.IsZero() {
		return "", fmt.Errorf("resource namespace %s of workspace %s: %w", rns, workspace, ErrNotFound)
	}
	return name, nil
}

// OfWorkspace lists the kube namespaces of every resource namespace of a workspace: its own
// (`default`) first, then those labelled with it. Namespaces being deleted are left out.
func OfWorkspace(ctx context.Context, c client.Reader, workspace string) ([]*corev1.Namespace, error) {
	own := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: workspace}, own); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	out := []*corev1.Namespace{own}
	labelled := &corev1.NamespaceList{}
	if err := c.List(ctx, labelled, client.MatchingLabels{WorkspaceLabel: workspace}); err != nil {
		return nil, err
	}
	for i := range labelled.Items {
		if ns := &labelled.Items[i]; ns.DeletionTimestamp.IsZero() && ns.Name != workspace {
			out = append(out, ns)
		}
	}
	return out, nil
}
