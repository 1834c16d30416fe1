package kubeauth

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"platform.dev/platform/internal/resourcenamespace"
)

// namespaceWorkspaces tells the workspace a kube namespace belongs to (see
// resourcenamespace.WorkspaceOf): from an informer's cache once it has synced, from the API
// before.
type namespaceWorkspaces struct {
	lister corev1listers.NamespaceLister
	synced cache.InformerSynced
	client kubernetes.Interface
}

// StartNamespaces makes the authorizer map every resource namespace to its workspace, so that
// roles, personal access tokens and the narrowing of namespace lists cover it. It starts a
// namespace informer on loopback (the control plane's own client) that runs until ctx ends; it is
// called once the kube API serves. Before that, a namespace is only its own workspace, so a
// resource namespace is out of every caller's reach.
func (z *Authorizer) StartNamespaces(ctx context.Context, loopback *rest.Config) error {
	client, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	informer := factory.Core().V1().Namespaces()
	n := &namespaceWorkspaces{lister: informer.Lister(), synced: informer.Informer().HasSynced, client: client}
	factory.Start(ctx.Done())
	z.namespaces.Store(n)
	return nil
}

// workspaceOf is the route name of the workspace namespace belongs to; the namespace itself
// when it is not a resource namespace, when it does not exist, or before StartNamespaces.
func (z *Authorizer) workspaceOf(ctx context.Context, namespace string) (string, error) {
	n := z.namespaces.Load()
	if n == nil {
		return namespace, nil
	}
	if n.synced() {
		ns, err := n.lister.Get(namespace)
		if apierrors.IsNotFound(err) {
			return namespace, nil
		}
		if err != nil {
			return "", err
		}
		return resourcenamespace.WorkspaceOf(ns), nil
	}
	ns, err := n.client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return namespace, nil
	}
	if err != nil {
		return "", fmt.Errorf("namespace %s: %w", namespace, err)
	}
	return resourcenamespace.WorkspaceOf(ns), nil
}

// workspaceNamespace is the namespace of the workspace namespace belongs to (itself, or the
// workspace of a resource namespace), from the informer's cache; nil before the cache synced or
// when there is none.
func (z *Authorizer) workspaceNamespace(ctx context.Context, namespace string) (*corev1.Namespace, error) {
	n := z.namespaces.Load()
	if n == nil || !n.synced() {
		return nil, nil
	}
	workspace, err := z.workspaceOf(ctx, namespace)
	if err != nil {
		return nil, err
	}
	ns, err := n.lister.Get(workspace)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return ns, err
}
