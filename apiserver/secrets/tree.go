package secrets

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/internal/resourcenamespace"
)

// ErrScopeNotFound: a scopeRef names a tenant or workspace that does not exist.
var ErrScopeNotFound = errors.New("no such scope")

// Place is a scope with what the rules need of its position in the tree: the tenant it belongs
// to and the kube namespace that holds its objects.
type Place struct {
	Scope ownerscope.Scope
	// Tenant is the tenant id of a tenant, or of a workspace that belongs to one; empty for the
	// instance and for a workspace the identity store does not know.
	Tenant string
	// Namespace holds the scope's Secrets and Vaults (a workspace's own namespace).
	Namespace string
	// ResourceNamespace is set when the place was found from a workspace's non-default resource
	// namespace (a Pack's): the kube namespace asked about, which is not Namespace.
	ResourceNamespace platformv1.ResourceNamespace
}

// Ref is the canonical scopeRef of the place.
func (p Place) Ref() platformv1.ScopeRef { return p.Scope.Ref() }

// String is the scopeRef, for messages.
func (p Place) String() string { return string(p.Ref()) }

// level orders the kinds from the root: instance 0, tenant 1, workspace 2.
func level(k ownerscope.Kind) int {
	switch k {
	case ownerscope.Instance:
		return 0
	case ownerscope.Tenant:
		return 1
	}
	return 2
}

// Contains reports whether q is p or lies below it.
func (p Place) Contains(q Place) bool {
	switch p.Scope.Kind {
	case ownerscope.Instance:
		return true
	case ownerscope.Tenant:
		return q.Tenant == p.Scope.ID && q.Scope.Kind != ownerscope.Instance
	}
	return q.Scope == p.Scope
}

// IsAncestorOf reports whether p lies strictly above q.
func (p Place) IsAncestorOf(q Place) bool { return p.Scope != q.Scope && p.Contains(q) }

// names reports whether ref names the place: its canonical scopeRef, or, for a workspace, the
// route name that selects it everywhere else.
func (p Place) names(s ownerscope.Scope) bool {
	return s.Kind == p.Scope.Kind && (s.ID == p.Scope.ID || (s.Kind == ownerscope.Workspace && s.ID == p.Namespace))
}

// Tree places scopes: where a namespace's objects belong and what a scopeRef names.
type Tree interface {
	// OfNamespace is the place whose objects namespace ns holds.
	OfNamespace(ctx context.Context, ns string) (Place, error)
	// Of is the place ref names; ErrScopeNotFound when that tenant or workspace does not exist or
	// ref is not a scopeRef.
	Of(ctx context.Context, ref platformv1.ScopeRef) (Place, error)
}

// IdentityTree places scopes with the identity store: a workspace's id and tenant come from its
// record. A namespace that the store does not know as a workspace (kube's `default` in a
// development server, a test's namespace), or every namespace when Identity is nil, is a
// workspace of its own named by the namespace, directly below the instance.
type IdentityTree struct {
	Identity *identity.Service
	// Namespaces reads kube namespaces, so that a workspace's Pack namespace places as that
	// workspace (see package resourcenamespace); nil places every namespace as a workspace's own.
	Namespaces NamespaceGetter
}

// NamespaceGetter reads one kube namespace; nil and no error when it does not exist.
type NamespaceGetter interface {
	Namespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// KubeNamespaces reads namespaces through c.
func KubeNamespaces(c client.Reader) NamespaceGetter { return kubeNamespaces{c} }

type kubeNamespaces struct{ c client.Reader }

func (k kubeNamespaces) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	if err := k.c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return ns, nil
}

var _ Tree = IdentityTree{}

// OfNamespace implements Tree.
func (t IdentityTree) OfNamespace(ctx context.Context, ns string) (Place, error) {
	if s, ok := ownerscope.OfNamespace(ns); ok {
		return t.Of(ctx, s.Ref())
	}
	if t.Namespaces != nil {
		n, err := t.Namespaces.Namespace(ctx, ns)
		if err != nil {
			return Place{}, err
		}
		if n != nil && resourcenamespace.IsResourceNamespace(n) {
			p, err := t.workspace(ctx, resourcenamespace.WorkspaceOf(n))
			p.ResourceNamespace = resourcenamespace.Of(n)
			return p, err
		}
	}
	return t.workspace(ctx, ns)
}

// Of implements Tree.
func (t IdentityTree) Of(ctx context.Context, ref platformv1.ScopeRef) (Place, error) {
	s, err := ownerscope.Parse(ref)
	if err != nil {
		return Place{}, fmt.Errorf("%w: %v", ErrScopeNotFound, err)
	}
	switch s.Kind {
	case ownerscope.Instance:
		return Place{Scope: s, Namespace: ownerscope.InstanceNamespace}, nil
	case ownerscope.Tenant:
		ns, err := ownerscope.TenantNamespace(s.ID)
		if err != nil {
			return Place{}, fmt.Errorf("%w: %s", ErrScopeNotFound, ref)
		}
		if t.Identity != nil {
			if _, err := t.Identity.Tenant(ctx, s.ID); errors.Is(err, identity.ErrTenantNotFound) {
				return Place{}, fmt.Errorf("%w: %s", ErrScopeNotFound, ref)
			} else if err != nil {
				return Place{}, err
			}
		}
		return Place{Scope: s, Tenant: s.ID, Namespace: ns}, nil
	}
	return t.workspace(ctx, s.ID)
}

// workspace places the workspace that selector (its id or route name) names.
func (t IdentityTree) workspace(ctx context.Context, selector string) (Place, error) {
	if t.Identity != nil {
		ws, err := t.Identity.Workspace(ctx, selector)
		if err == nil {
			return Place{Scope: ownerscope.Of(ownerscope.Workspace, ws.ID), Tenant: ws.TenantID, Namespace: ws.RouteName}, nil
		}
		if !errors.Is(err, identity.ErrWorkspaceNotFound) {
			return Place{}, err
		}
	}
	if len(validation.IsDNS1123Label(selector)) > 0 || ownerscope.IsReservedNamespace(selector) {
		return Place{}, fmt.Errorf("%w: /workspaces/%s", ErrScopeNotFound, selector)
	}
	return Place{Scope: ownerscope.Of(ownerscope.Workspace, selector), Namespace: selector}, nil
}
