package executor

import (
	"context"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// CacheFirst reads objects from an informer cache and from the API when the cache does not
// have them (yet): a submission resolves its Flow and version, a run its agents, and an agent
// call its model profile and provider, without a request to the kube API each. A FlowVersion
// never changes once published; any other object read from the cache is the revision the watch
// delivered last, at most milliseconds behind the API, except one this process has just written
// (Writes): that is read from the API until the cache has caught up with the write, so that a
// caller who changes a Flow or an Agent and submits at once runs what it wrote. Lists go to the
// API.
type CacheFirst struct {
	Cache client.Reader
	Live  client.Reader
	// Writes are the writes of this process's clients (Writes.Track). Optional: without it the
	// cache answers whatever it holds.
	Writes *Writes
}

var _ client.Reader = CacheFirst{}

// Get reads key from the cache, else from the API; an object whose last write by this process
// the cache has not shown yet is read from the API.
func (c CacheFirst) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c.Writes != nil {
		if read, err := c.Writes.get(ctx, c, key, obj, opts...); read {
			return err
		}
	}
	if err := c.Cache.Get(ctx, key, obj, opts...); err == nil {
		return nil
	}
	return c.Live.Get(ctx, key, obj, opts...)
}

// List reads from the API.
func (c CacheFirst) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Live.List(ctx, list, opts...)
}

// Bounds of Writes: past maxWritten tracked objects a write sweeps out the ones the cache has
// shown; one whose write the cache has not shown after writtenHorizon is dropped too (the watch
// delivers in milliseconds; one that far behind is broken and its informer lists again).
const (
	maxWritten     = 1024
	writtenHorizon = time.Minute
)

// Writes remembers the objects this process's clients wrote until the informer cache has shown
// each write, so that CacheFirst reads those from the API meanwhile (read-your-writes). An entry
// costs a write; a read of an object without one costs a map look-up, none while nothing waits.
type Writes struct {
	scheme  *runtime.Scheme
	pending atomic.Int64 // len(written) + len(allOf): the readers' fast path skips the lock at 0
	mu      sync.Mutex
	written map[writtenKey]*written
	// allOf: kinds a DeleteAllOf or an Apply changed in ways no single key records; their reads
	// go to the API until the time given.
	allOf map[schema.GroupKind]time.Time
}

type writtenKey struct {
	kind            schema.GroupKind
	namespace, name string
}

type written struct {
	// inflight writes have not answered yet: the API is the only truth meanwhile.
	inflight int
	// seq changes at every write; a reader drops the entry only when it saw the same seq.
	seq uint64
	// version is the resourceVersion the last write answered with; 0 when unknown (the write
	// failed, or the version is not a number): the entry goes once the cache equals the API.
	version uint64
	// deleted: the last write deleted the object; the entry goes once the cache lacks it.
	deleted bool
	at      time.Time
}

// NewWrites tracks writes of objects of scheme's types.
func NewWrites(scheme *runtime.Scheme) *Writes {
	return &Writes{scheme: scheme, written: map[writtenKey]*written{}, allOf: map[schema.GroupKind]time.Time{}}
}

// Track returns c with its writes recorded in w.
func (w *Writes) Track(c client.Client) client.Client { return trackedClient{Client: c, w: w} }

func (w *Writes) keyOf(obj client.Object) (writtenKey, bool) {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil || obj.GetName() == "" {
		return writtenKey{}, false
	}
	return writtenKey{kind: gvk.GroupKind(), namespace: obj.GetNamespace(), name: obj.GetName()}, true
}

// begin records a write of obj under way; the returned function records its answer.
func (w *Writes) begin(obj client.Object, deletes bool) func(error) {
	key, known := w.keyOf(obj)
	if known {
		w.mu.Lock()
		e := w.written[key]
		if e == nil {
			e = &written{}
			w.written[key] = e
			w.pending.Add(1)
		}
		e.inflight++
		e.seq++
		w.mu.Unlock()
	}
	return func(err error) {
		if !known {
			// A created object named by the API (generateName) was nobody's to read before.
			if key, known = w.keyOf(obj); !known {
				return
			}
		}
		version, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
		w.mu.Lock()
		defer w.mu.Unlock()
		e := w.written[key]
		if e == nil {
			e = &written{}
			w.written[key] = e
			w.pending.Add(1)
		} else {
			e.inflight--
		}
		e.seq++
		e.at = time.Now()
		e.deleted = deletes && (err == nil || apierrors.IsNotFound(err))
		e.version = 0
		if err == nil && !deletes {
			e.version = version
		}
		if len(w.written) > maxWritten {
			w.sweepLocked()
		}
	}
}

// allOfKind sends the reads of obj's kind to the API for a while: a DeleteAllOf or an Apply wrote
// objects this process cannot name.
func (w *Writes) allOfKind(obj runtime.Object) {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.allOf[gvk.GroupKind()]; !ok {
		w.pending.Add(1)
	}
	w.allOf[gvk.GroupKind()] = time.Now().Add(writtenHorizon)
}

// sweepLocked drops the entries of writes long answered (see writtenHorizon).
func (w *Writes) sweepLocked() {
	old := time.Now().Add(-writtenHorizon)
	for key, e := range w.written {
		if e.inflight == 0 && e.at.Before(old) {
			delete(w.written, key)
			w.pending.Add(-1)
		}
	}
}

// get answers a read of an object this process wrote and the cache may not show yet (read true);
// read false leaves the read to the cache.
func (w *Writes) get(ctx context.Context, c CacheFirst, key client.ObjectKey, obj client.Object, opts ...client.GetOption) (read bool, err error) {
	if w.pending.Load() == 0 {
		return false, nil
	}
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return false, nil
	}
	k := writtenKey{kind: gvk.GroupKind(), namespace: key.Namespace, name: key.Name}
	w.mu.Lock()
	if until, ok := w.allOf[k.kind]; ok {
		if time.Now().Before(until) {
			w.mu.Unlock()
			return true, c.Live.Get(ctx, key, obj, opts...)
		}
		delete(w.allOf, k.kind)
		w.pending.Add(-1)
	}
	e, ok := w.written[k]
	if !ok {
		w.mu.Unlock()
		return false, nil
	}
	seen := *e
	w.mu.Unlock()
	if seen.inflight > 0 {
		return true, c.Live.Get(ctx, key, obj, opts...)
	}
	cached := obj.DeepCopyObject().(client.Object)
	cacheErr := c.Cache.Get(ctx, key, cached, opts...)
	if !seen.deleted && seen.version != 0 && cacheErr == nil && versionOf(cached) >= seen.version {
		w.caughtUp(k, seen.seq)
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(cached).Elem())
		return true, nil
	}
	err = c.Live.Get(ctx, key, obj, opts...)
	// The API answered after the write did: a cache that agrees with it has shown the write.
	if (err == nil && cacheErr == nil && cached.GetResourceVersion() == obj.GetResourceVersion()) ||
		(apierrors.IsNotFound(err) && apierrors.IsNotFound(cacheErr)) {
		w.caughtUp(k, seen.seq)
	}
	return true, err
}

// caughtUp drops the entry of k when no write came since the reader saw it at seq.
func (w *Writes) caughtUp(k writtenKey, seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.written[k]; ok && e.seq == seq && e.inflight == 0 {
		delete(w.written, k)
		w.pending.Add(-1)
	}
}

func versionOf(obj client.Object) uint64 {
	v, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	return v
}

// trackedClient records its writes in w.
type trackedClient struct {
	client.Client
	w *Writes
}

func (t trackedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	done := t.w.begin(obj, false)
	err := t.Client.Create(ctx, obj, opts...)
	done(err)
	return err
}

func (t trackedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	done := t.w.begin(obj, false)
	err := t.Client.Update(ctx, obj, opts...)
	done(err)
	return err
}

func (t trackedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	done := t.w.begin(obj, false)
	err := t.Client.Patch(ctx, obj, patch, opts...)
	done(err)
	return err
}

func (t trackedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	done := t.w.begin(obj, true)
	err := t.Client.Delete(ctx, obj, opts...)
	done(err)
	return err
}

func (t trackedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	t.w.allOfKind(obj)
	return t.Client.DeleteAllOf(ctx, obj, opts...)
}

func (t trackedClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	// An apply configuration names its kind but is no typed object; every kind is read from the
	// API for a while instead (nothing in the platform applies yet).
	for gvk := range t.w.scheme.AllKnownTypes() {
		if o, err := t.w.scheme.New(gvk); err == nil {
			t.w.allOfKind(o)
		}
	}
	return t.Client.Apply(ctx, obj, opts...)
}

func (t trackedClient) Status() client.SubResourceWriter { return t.SubResource("status") }

func (t trackedClient) SubResource(subResource string) client.SubResourceClient {
	return trackedSubResource{SubResourceClient: t.Client.SubResource(subResource), w: t.w}
}

// trackedSubResource records the writes of a subresource (a status) as writes of the object.
type trackedSubResource struct {
	client.SubResourceClient
	w *Writes
}

func (t trackedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	done := t.w.begin(obj, false)
	err := t.SubResourceClient.Update(ctx, obj, opts...)
	done(err)
	return err
}

func (t trackedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	done := t.w.begin(obj, false)
	err := t.SubResourceClient.Patch(ctx, obj, patch, opts...)
	done(err)
	return err
}

// View reads key: the informer's own object when the cache holds it and no write of this
// process waits to show in it, else obj as Get reads it. The informer's object is not
// deep-copied (Get copies every object it answers, a Flow's whole snapshot each submission): the
// caller must neither change it nor keep it or anything it holds.
func View[T client.Object](ctx context.Context, r client.Reader, key client.ObjectKey, obj T) (T, error) {
	if c, ok := r.(CacheFirst); ok {
		if cached, ok := c.peek(ctx, key, obj); ok {
			return cached.(T), nil
		}
	}
	return obj, r.Get(ctx, key, obj)
}

// dontWaitForSync: a cache still syncing leaves the read to Get.
var dontWaitForSync = cache.BlockUntilSynced(false)

// peek is the informer's object of key, when the cache has synced obj's kind, holds key, and
// this process has no write of it that the cache may not show yet.
func (c CacheFirst) peek(ctx context.Context, key client.ObjectKey, obj client.Object) (client.Object, bool) {
	informers, ok := c.Cache.(cache.Informers)
	if !ok || (c.Writes != nil && c.Writes.mayBeAhead(obj, key)) {
		return nil, false
	}
	informer, err := informers.GetInformer(ctx, obj, dontWaitForSync)
	if err != nil {
		return nil, false
	}
	shared, ok := informer.(toolscache.SharedIndexInformer)
	if !ok || !shared.HasSynced() {
		return nil, false
	}
	item, exists, err := shared.GetIndexer().GetByKey(key.String())
	if err != nil || !exists || reflect.TypeOf(item) != reflect.TypeOf(obj) {
		return nil, false
	}
	return item.(client.Object), true
}

// mayBeAhead is whether this process wrote key (or its kind wholesale) and the cache may not
// show it yet; then reads go through get.
func (w *Writes) mayBeAhead(obj client.Object, key client.ObjectKey) bool {
	if w.pending.Load() == 0 {
		return false
	}
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.allOf[gvk.GroupKind()]; ok {
		return true
	}
	_, ok := w.written[writtenKey{kind: gvk.GroupKind(), namespace: key.Namespace, name: key.Name}]
	return ok
}
