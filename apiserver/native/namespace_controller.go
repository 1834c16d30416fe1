package native

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// NamespaceController finishes the deletion of Terminating namespaces: it deletes every
// namespaced object in them, then removes the "kubernetes" finalizer and the namespace, the
// job of kube-controller-manager's namespace controller in a cluster.
type NamespaceController struct {
	client    kubernetes.Interface
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	informer  cache.SharedIndexInformer
	queue     workqueue.TypedRateLimitingInterface[string]
}

// NewNamespaceController builds the controller over a loopback client configuration.
func NewNamespaceController(config *rest.Config, factory informers.SharedInformerFactory) (*NamespaceController, error) {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	c := &NamespaceController{
		client:    client,
		metadata:  meta,
		discovery: client.Discovery(),
		informer:  factory.Core().V1().Namespaces().Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace"}),
	}
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			c.queue.Add(ns.Name)
		}
	}
	_, err = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	return c, err
}

// Run processes namespaces until ctx ends.
func (c *NamespaceController) Run(ctx context.Context) {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return
	}
	go func() {
		for c.next(ctx) {
		}
	}()
	<-ctx.Done()
}

func (c *NamespaceController) next(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	remaining, err := c.finalize(ctx, name)
	switch {
	case err != nil:
		klog.FromContext(ctx).V(2).Info("namespace deletion retried", "namespace", name, "err", err)
		c.queue.AddRateLimited(name)
	case remaining:
		c.queue.AddAfter(name, time.Second)
	default:
		c.queue.Forget(name)
	}
	return true
}

// finalize reports whether content remains in the namespace.
func (c *NamespaceController) finalize(ctx context.Context, name string) (bool, error) {
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if ns.DeletionTimestamp == nil {
		return false, nil
	}
	if slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		remaining, err := c.deleteContent(ctx, name)
		if err != nil || remaining {
			return remaining, err
		}
		ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool {
			return f == corev1.FinalizerKubernetes
		})
		if ns, err = c.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
			return false, err
		}
	}
	if len(ns.Spec.Finalizers) == 0 {
		err := c.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, err
		}
	}
	return false, nil
}

// deleteContent deletes every namespaced resource it can list and delete, and reports whether
// objects are still there (for example while their own finalizers run).
func (c *NamespaceController) deleteContent(ctx context.Context, namespace string) (bool, error) {
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return false, err
	}
	remaining := false
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			verbs := sets.New(r.Verbs...)
			if !verbs.HasAll("list", "delete") {
				continue
			}
			client := c.metadata.Resource(gv.WithResource(r.Name)).Namespace(namespace)
			if verbs.Has("deletecollection") {
				if err := client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("delete %s in %s: %w", r.Name, namespace, err)
				}
			}
			items, err := client.List(ctx, metav1.ListOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return false, err
			}
			for _, item := range items.Items {
				remaining = true
				if item.DeletionTimestamp == nil {
					if err := client.Delete(ctx, item.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
						return false, err
					}
				}
			}
		}
	}
	return remaining, nil
}
