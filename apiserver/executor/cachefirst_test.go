package executor_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
)

// laggingCache is an informer cache whose watch delivers nothing until the test says so: the
// copies it holds are those of its last show. Its informers' stores hold the same objects, which
// View reads without a copy.
type laggingCache struct {
	cache.Informers // only GetInformer is used
	mu              sync.Mutex
	objs            map[client.ObjectKey]client.Object
	store           toolscache.Indexer
}

func (c *laggingCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return syncedInformer{store: c.store}, nil
}

// syncedInformer is a synced informer of store (only HasSynced and GetIndexer are used).
type syncedInformer struct {
	toolscache.SharedIndexInformer
	store toolscache.Indexer
}

func (i syncedInformer) HasSynced() bool                { return true }
func (i syncedInformer) GetIndexer() toolscache.Indexer { return i.store }

func (c *laggingCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	held, ok := c.objs[key]
	if !ok {
		return apierrors.NewNotFound(platformv1.GroupVersion.WithResource("objects").GroupResource(), key.Name)
	}
	copyInto(obj, held)
	return nil
}

func (c *laggingCache) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("lists are not cached")
}

// show delivers the API's current state of key to the cache.
func (c *laggingCache) show(t *testing.T, live client.Reader, key client.ObjectKey, obj client.Object) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch err := live.Get(context.Background(), key, obj); {
	case apierrors.IsNotFound(err):
		if held, ok := c.objs[key]; ok {
			_ = c.store.Delete(held)
		}
		delete(c.objs, key)
	case err != nil:
		t.Fatal(err)
	default:
		c.objs[key] = obj.DeepCopyObject().(client.Object)
		_ = c.store.Update(c.objs[key])
	}
}

func newLaggingCache() *laggingCache {
	return &laggingCache{objs: map[client.ObjectKey]client.Object{},
		store: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})}
}

func copyInto(dst, src client.Object) {
	switch d := dst.(type) {
	case *platformv1.Flow:
		*d = *src.(*platformv1.Flow).DeepCopy()
	case *platformv1.FlowVersion:
		*d = *src.(*platformv1.FlowVersion).DeepCopy()
	case *platformv1.Agent:
		*d = *src.(*platformv1.Agent).DeepCopy()
	default:
		panic("laggingCache holds Flows, FlowVersions and Agents")
	}
}

func TestAReadAfterThisProcessWroteAnObjectSeesTheWriteWhileTheCacheLags(t *testing.T) {
	flowKey := client.ObjectKey{Namespace: "ws", Name: "report"}
	agentKey := client.ObjectKey{Namespace: "ws", Name: "planner"}
	for name, tc := range map[string]struct {
		// write changes the objects through the tracked client.
		write func(ctx context.Context, g Gomega, kube client.Client)
		// read is what a submission reads right after, as the API answers it now.
		read func(ctx context.Context, g Gomega, reads client.Reader)
		// gone: the write deleted the object, which a cache that lacks it asks the API about.
		gone bool
	}{
		"a Flow version activated a moment ago is the active version": {
			write: func(ctx context.Context, g Gomega, kube client.Client) {
				flow := &platformv1.Flow{}
				g.Expect(kube.Get(ctx, flowKey, flow)).To(Succeed())
				flow.Status.ActiveVersion = "2.0.0"
				g.Expect(kube.Status().Update(ctx, flow)).To(Succeed())
			},
			read: func(ctx context.Context, g Gomega, reads client.Reader) {
				g.Expect(executor.KubeResolver{Client: reads}.ResolveReference(ctx, "ws", "report", "")).To(Equal("2.0.0"))
			},
		},
		"a Flow disabled a moment ago refuses new runs": {
			write: func(ctx context.Context, g Gomega, kube client.Client) {
				flow := &platformv1.Flow{}
				g.Expect(kube.Get(ctx, flowKey, flow)).To(Succeed())
				flow.Definition.Enabled = ptr(false)
				g.Expect(kube.Update(ctx, flow)).To(Succeed())
			},
			read: func(ctx context.Context, g Gomega, reads client.Reader) {
				_, err := executor.KubeResolver{Client: reads}.ResolveReference(ctx, "ws", "report", "")
				g.Expect(err).To(MatchError(executor.ErrFlowDisabled))
			},
		},
		"a Flow deleted a moment ago is not found": {
			write: func(ctx context.Context, g Gomega, kube client.Client) {
				g.Expect(kube.Delete(ctx, &platformv1.Flow{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "report"}})).To(Succeed())
			},
			read: func(ctx context.Context, g Gomega, reads client.Reader) {
				_, err := executor.KubeResolver{Client: reads}.ResolveReference(ctx, "ws", "report", "")
				g.Expect(err).To(MatchError(executor.ErrFlowNotFound))
			},
			gone: true,
		},
		"an Agent's new instructions are the revision a run pins": {
			write: func(ctx context.Context, g Gomega, kube client.Client) {
				agent := &platformv1.Agent{}
				g.Expect(kube.Get(ctx, agentKey, agent)).To(Succeed())
				agent.Definition.Instructions = "new"
				g.Expect(kube.Patch(ctx, agent, client.Merge)).To(Succeed())
			},
			read: func(ctx context.Context, g Gomega, reads client.Reader) {
				agent, err := executor.KubeResolver{Client: reads}.Agent(ctx, "ws", "planner")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(agent.Instructions).To(Equal("new"))
			},
		},
		"an Agent whose update failed midway is read from the API": {
			write: func(ctx context.Context, g Gomega, kube client.Client) {
				agent := &platformv1.Agent{}
				g.Expect(kube.Get(ctx, agentKey, agent)).To(Succeed())
				agent.Definition.Instructions = "new"
				// The update reached the API, but its answer was lost.
				g.Expect(kube.Update(ctx, agent, client.DryRunAll)).To(MatchError(ContainSubstring("answer lost")))
			},
			read: func(ctx context.Context, g Gomega, reads client.Reader) {
				agent, err := executor.KubeResolver{Client: reads}.Agent(ctx, "ws", "planner")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(agent.Instructions).To(Equal("new"))
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			live := fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithStatusSubresource(&platformv1.Flow{}).
				WithObjects(
					&platformv1.Flow{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "report"}, Status: platformv1.FlowStatus{ActiveVersion: "1.0.0"}},
					&platformv1.FlowVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "report-1.0.0"},
						Definition: platformv1.FlowVersionDefinition{FlowName: "report", Version: "1.0.0"}},
					&platformv1.FlowVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "report-2.0.0"},
						Definition: platformv1.FlowVersionDefinition{FlowName: "report", Version: "2.0.0"}},
					&platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "planner"},
						Definition: platformv1.AgentDefinition{Instructions: "old"}},
				).WithInterceptorFuncs(interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if len(opts) > 0 { // the test's mark of an answer lost on the way back
						if err := c.Update(ctx, obj); err != nil {
							return err
						}
						return errors.New("answer lost")
					}
					return c.Update(ctx, obj, opts...)
				},
			}).Build()
			cache := newLaggingCache()
			for _, v := range []string{"report-1.0.0", "report-2.0.0"} {
				cache.show(t, live, client.ObjectKey{Namespace: "ws", Name: v}, &platformv1.FlowVersion{})
			}
			cache.show(t, live, flowKey, &platformv1.Flow{})
			cache.show(t, live, agentKey, &platformv1.Agent{})
			writes := executor.NewWrites(platformscheme.Scheme)
			reads := executor.CacheFirst{Cache: cache, Live: live, Writes: writes}

			tc.write(ctx, g, writes.Track(live))
			tc.read(ctx, g, reads)

			// Once the watch has delivered the write, the cache answers again: the API does not
			// see the reads that follow.
			cache.show(t, live, flowKey, &platformv1.Flow{})
			cache.show(t, live, agentKey, &platformv1.Agent{})
			tc.read(ctx, g, reads)
			if !tc.gone {
				tc.read(ctx, g, executor.CacheFirst{Cache: cache, Live: unreachable{}, Writes: writes})
			}
		})
	}
}

// unreachable is a kube API that answers nothing.
type unreachable struct{}

func (unreachable) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("the kube API was asked")
}

func (unreachable) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the kube API was asked")
}

// A read the informer cache answers is its own object, not a copy (a FlowVersion's snapshot was
// deep-copied at every submission and every run); what this process wrote and the cache does not
// show yet is read from the API instead.
func TestAViewOfACachedObjectIsTheCachesObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ws", Name: "planner"}
	live := fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(
		&platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "planner"}, Definition: platformv1.AgentDefinition{Instructions: "old"}},
	).Build()
	cache := newLaggingCache()
	cache.show(t, live, key, &platformv1.Agent{})
	writes := executor.NewWrites(platformscheme.Scheme)
	reads := executor.CacheFirst{Cache: cache, Live: unreachable{}, Writes: writes}
	view := func(reads client.Reader) (*platformv1.Agent, error) {
		return executor.View(ctx, reads, key, &platformv1.Agent{})
	}

	seen, err := view(reads)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(seen).To(BeIdenticalTo(cache.objs[key]), "the cache's object, not a copy")

	agent := &platformv1.Agent{}
	g.Expect(live.Get(ctx, key, agent)).To(Succeed())
	agent.Definition.Instructions = "new"
	g.Expect(writes.Track(live).Update(ctx, agent)).To(Succeed())
	seen, err = view(executor.CacheFirst{Cache: cache, Live: live, Writes: writes})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(seen.Definition.Instructions).To(Equal("new"), "this process's write, which the cache does not show yet")

	// A reader that is not a CacheFirst is read with Get.
	seen, err = view(live)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(seen.Definition.Instructions).To(Equal("new"))
}
