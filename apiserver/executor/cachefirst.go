package executor

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheFirst reads objects from an informer cache and from the API when the cache does not
// have them (yet): a run resolves its Flow version and agents, and an agent call its model
// profile and provider, without a request to the kube API each. A FlowVersion never changes
// once published; an Agent read from the cache is the revision the watch delivered last, at
// most milliseconds behind the API. Lists go to the API.
type CacheFirst struct {
	Cache client.Reader
	Live  client.Reader
}

var _ client.Reader = CacheFirst{}

// Get reads key from the cache, else from the API.
func (c CacheFirst) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Cache.Get(ctx, key, obj, opts...); err == nil {
		return nil
	}
	return c.Live.Get(ctx, key, obj, opts...)
}

// List reads from the API.
func (c CacheFirst) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Live.List(ctx, list, opts...)
}
