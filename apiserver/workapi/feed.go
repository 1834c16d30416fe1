package workapi

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"platform.dev/platform/apiserver/notify"
	"platform.dev/platform/apiserver/workplace"
)

// WatchLimits bound the watches, as the hub bounds its connections.
type WatchLimits struct {
	// MaxWatches bounds the watches open at once; MaxWatchesPerUser those of one user.
	MaxWatches        int
	MaxWatchesPerUser int
	// MaxLifetime ends a watch after this long (the client watches again from its last
	// resourceVersion); the apiserver's own request timeout may end it sooner.
	MaxLifetime time.Duration
	// Queue is how many events a watch holds for a slow client before it is closed (the client
	// watches again from its last resourceVersion).
	Queue int
	// BookmarkEvery is how often a watch that asked for bookmarks gets one.
	BookmarkEvery time.Duration
}

// Defaults of WatchLimits.
var DefaultWatchLimits = WatchLimits{MaxWatches: 10000, MaxWatchesPerUser: 1000, MaxLifetime: 30 * time.Minute,
	Queue: 1024, BookmarkEvery: 30 * time.Second}

// readPage is how many outbox events one read takes.
const readPage = 256

// outboxReader reads the Workplace outbox (the table the hub dispatches) through the counted
// reader.
type outboxReader struct{ r *reader }

func (o outboxReader) last(ctx context.Context, workspaceID string) (int64, error) {
	var seq int64
	err := o.r.queryRow(ctx, `SELECT seq FROM workplace_event_seqs WHERE workspace_id = ?`, workspaceID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// oldest is the number of the oldest event the outbox still holds, 0 when it holds none.
func (o outboxReader) oldest(ctx context.Context, workspaceID string) (int64, error) {
	var seq sql.NullInt64
	err := o.r.queryRow(ctx, `SELECT MIN(seq) FROM workplace_events WHERE workspace_id = ?`, workspaceID).Scan(&seq)
	return seq.Int64, err
}

func (o outboxReader) events(ctx context.Context, workspaceID string, after int64, take int) ([]workplace.Event, error) {
	rows, err := o.r.query(ctx, `SELECT seq, name, principal_id, payload FROM workplace_events
		WHERE workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?`, workspaceID, after, take)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []workplace.Event
	for rows.Next() {
		e := workplace.Event{WorkspaceID: workspaceID}
		var payload string
		if err := rows.Scan(&e.Seq, &e.Name, &e.PrincipalID, &payload); err != nil {
			return nil, err
		}
		e.Payload = json.RawMessage(payload)
		out = append(out, e)
	}
	return out, rows.Err()
}

// change is what an outbox page says about one object: the last event about it. principal is
// set for the objects of a personal kind: the Principal the events were addressed to, the only
// one whose watches receive the change.
type change struct {
	res       *resource
	name      string
	principal string
	seq       int64
	created   bool
}

// changesOf reduces a page of events to one change per object, in the order of their last event.
// Events addressed to one Principal are about objects of the personal kinds (Notifications)
// only, and those kinds are told by such events only.
func changesOf(resources []*resource, page []workplace.Event) []change {
	byKey := map[string]int{}
	var out []change
	for _, e := range page {
		var payload map[string]any
		if err := json.Unmarshal(e.Payload, &payload); err != nil {
			continue
		}
		for _, res := range resources {
			if res.about == nil || res.personal != (e.PrincipalID != "") {
				continue
			}
			name, created, ok := res.about(e.Name, payload)
			if !ok || name == "" {
				continue
			}
			key := res.plural + "/" + name
			if i, seen := byKey[key]; seen {
				out[i].seq = e.Seq
				out[i].created = out[i].created || created
				continue
			}
			byKey[key] = len(out)
			out = append(out, change{res: res, name: name, principal: e.PrincipalID, seq: e.Seq, created: created})
		}
	}
	slices.SortFunc(out, func(a, b change) int { return int(a.seq - b.seq) })
	return out
}

// eventOf reads the object a change is about, as a watch event at the change's position: ADDED
// when the page created it, DELETED when it is gone.
func (a *API) eventOf(ctx context.Context, ns, workspaceID string, c change) (watch.Event, error) {
	obj, err := c.res.reads.get(ctx, &a.reader, page{namespace: ns, workspaceID: workspaceID, principal: c.principal}, c.name)
	typ := watch.Modified
	if c.created {
		typ = watch.Added
	}
	if apierrors.IsNotFound(err) {
		obj, err, typ = c.res.newObj(), nil, watch.Deleted
		m, _ := meta.Accessor(obj)
		m.SetName(c.name)
		m.SetNamespace(ns)
		m.SetUID(uidOf(c.res.kind, c.name))
	}
	if err != nil {
		return watch.Event{}, err
	}
	setRV(obj, c.seq)
	return watch.Event{Type: typ, Object: obj}, nil
}

// receives says whether a watch receives a change: one of its kind, and of a personal kind only
// when it is its caller's.
func (w *watcher) receives(c change) bool {
	return w.req.res == c.res && (!c.res.personal || c.principal == w.req.principal)
}

// feeds are the workspaces' feeds: one reader of a workspace's outbox, woken by its topic,
// however many watches listen, so that a watch costs no query of its own once it runs.
type feeds struct {
	api    *API
	ctx    context.Context
	limits WatchLimits

	mu      sync.Mutex
	m       map[string]*feed
	total   int
	perUser map[string]int
}

type feed struct {
	f           *feeds
	workspaceID string
	namespace   string
	refs        int // guarded by feeds.mu
	stop        chan struct{}

	mu       sync.Mutex
	last     int64
	watchers map[*watcher]struct{}
}

type watchRequest struct {
	res             *resource
	namespace       string
	workspaceID     string
	user            string
	principal       string
	pred            storage.SelectionPredicate
	resourceVersion string
	bookmarks       bool
	initialEvents   *bool
}

// watcher is one watch: the feed queues the events of its resource on live; its goroutine
// filters them by the selectors and sends them on out.
type watcher struct {
	req  watchRequest
	feed *feed
	live chan watch.Event
	out  chan watch.Event
	done chan struct{}
	once sync.Once
	// seen are the objects a selective watch has sent and not deleted, so that an object that
	// stops matching is sent as DELETED.
	seen map[string]bool
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.out }
func (w *watcher) Stop()                          { w.once.Do(func() { close(w.done) }) }

func tooMany(msg string) error { return apierrors.NewTooManyRequests(msg, 1) }

// watch opens a watch: from now with the current objects as ADDED (resourceVersion "" or "0"),
// or after a recent resourceVersion (410 Gone when the outbox no longer holds what followed it).
func (fs *feeds) watch(ctx context.Context, req watchRequest) (watch.Interface, error) {
	var from int64 = -1
	if req.resourceVersion != "" && req.resourceVersion != "0" {
		n, _, ok := parseResourceVersion(req.resourceVersion)
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q is not one this server issued", req.resourceVersion))
		}
		from = n
	}
	fs.mu.Lock()
	if fs.total >= fs.limits.MaxWatches {
		fs.mu.Unlock()
		return nil, tooMany(fmt.Sprintf("at most %d watches of the Work plane are open at once; try again later", fs.limits.MaxWatches))
	}
	if fs.perUser[req.user] >= fs.limits.MaxWatchesPerUser {
		fs.mu.Unlock()
		return nil, tooMany(fmt.Sprintf("at most %d watches of the Work plane are open at once per caller; close one first", fs.limits.MaxWatchesPerUser))
	}
	fs.total++
	fs.perUser[req.user]++
	fs.mu.Unlock()
	release := func() {
		fs.mu.Lock()
		fs.total--
		if fs.perUser[req.user]--; fs.perUser[req.user] <= 0 {
			delete(fs.perUser, req.user)
		}
		fs.mu.Unlock()
	}

	f, err := fs.acquire(ctx, req.workspaceID, req.namespace)
	if err != nil {
		release()
		return nil, apierrors.NewInternalError(err)
	}
	w := &watcher{req: req, feed: f, live: make(chan watch.Event, fs.limits.Queue), out: make(chan watch.Event),
		done: make(chan struct{})}
	if !req.pred.Empty() {
		w.seen = map[string]bool{}
	}
	f.mu.Lock()
	joinedAt := f.last
	f.watchers[w] = struct{}{}
	f.mu.Unlock()
	leave := func() {
		f.mu.Lock()
		delete(f.watchers, w)
		f.mu.Unlock()
		fs.release(f)
		release()
	}
	if from > joinedAt {
		leave()
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("resourceVersion %d is newer than the workspace's outbox (%d): list again", from, joinedAt))
	}
	if from >= 0 && from < joinedAt {
		oldest, err := fs.api.outbox.oldest(ctx, req.workspaceID)
		if err != nil {
			leave()
			return nil, apierrors.NewInternalError(err)
		}
		if oldest == 0 || oldest > from+1 {
			leave()
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (the outbox holds events from %d): list again", from, oldest))
		}
	}
	go w.run(leave, from, joinedAt)
	return w, nil
}

// acquire returns the workspace's feed, opening it for the first watch: subscribed to the
// outbox's topic before it reads the last position, so that nothing committed after is missed.
func (fs *feeds) acquire(ctx context.Context, workspaceID, namespace string) (*feed, error) {
	fs.mu.Lock()
	if f := fs.m[workspaceID]; f != nil {
		f.refs++
		fs.mu.Unlock()
		return f, nil
	}
	fs.mu.Unlock()
	sub, err := fs.api.Changes.Subscribe(workplace.Topic(workspaceID))
	if err != nil {
		return nil, err
	}
	last, err := fs.api.outbox.last(ctx, workspaceID)
	if err != nil {
		sub.Close()
		return nil, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.m[workspaceID]; f != nil { // another watch opened it meanwhile
		sub.Close()
		f.refs++
		return f, nil
	}
	f := &feed{f: fs, workspaceID: workspaceID, namespace: namespace, refs: 1, stop: make(chan struct{}), last: last,
		watchers: map[*watcher]struct{}{}}
	fs.m[workspaceID] = f
	go f.run(sub)
	return f, nil
}

func (fs *feeds) release(f *feed) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f.refs--; f.refs == 0 {
		if fs.m[f.workspaceID] == f {
			delete(fs.m, f.workspaceID)
		}
		close(f.stop)
	}
}

// run reads the outbox after each wake-up of its topic and queues the changes to the watches;
// a failed read is tried again, a dropped subscription opened again: events are read by number,
// so none is lost.
func (f *feed) run(sub *notify.Subscription) {
	fs := f.f
	workplace.FollowOutbox(fs.ctx, f.stop, fs.api.Changes, f.workspaceID, sub, f.drain, fs.api.Log.WithValues("for", "kube API watches"))
}

// drain queues every committed change after the feed's position: each object read once for all
// the watches of its resource.
func (f *feed) drain() error {
	ctx := f.f.ctx
	for {
		f.mu.Lock()
		last := f.last
		watched := map[*resource]bool{}
		for w := range f.watchers {
			watched[w.req.res] = true
		}
		f.mu.Unlock()
		page, err := f.f.api.outbox.events(ctx, f.workspaceID, last, readPage)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		var events []watch.Event
		var changes []change
		for _, c := range changesOf(f.f.api.resources, page) {
			if !watched[c.res] {
				continue
			}
			ev, err := f.f.api.eventOf(ctx, f.namespace, f.workspaceID, c)
			if err != nil {
				return err
			}
			events, changes = append(events, ev), append(changes, c)
		}
		f.mu.Lock()
		for i, ev := range events {
			for w := range f.watchers {
				if w.receives(changes[i]) {
					w.offer(ev)
				}
			}
		}
		f.last = page[len(page)-1].Seq
		f.mu.Unlock()
		if len(page) < readPage {
			return nil
		}
	}
}

// offer queues ev without waiting; a watch whose queue is full is closed (its client watches
// again from the last resourceVersion it received). The feed's lock is held.
func (w *watcher) offer(ev watch.Event) {
	select {
	case w.live <- ev:
	default:
		delete(w.feed.watchers, w)
		close(w.live)
	}
}

// position is the feed's position when everything up to it has reached this watch's queue and
// the queue is empty: what a bookmark may say.
func (w *watcher) position() (int64, bool) {
	w.feed.mu.Lock()
	defer w.feed.mu.Unlock()
	if _, member := w.feed.watchers[w]; !member || len(w.live) > 0 {
		return 0, false
	}
	return w.feed.last, true
}

// run sends the watch's events: the current objects (from "now") or the changes after its
// resourceVersion read from the store, then those the feed queues, until the client stops, the
// server stops, the lifetime ends or the queue overflowed.
func (w *watcher) run(leave func(), from, joinedAt int64) {
	defer close(w.out)
	defer leave()
	api := w.feed.f.api
	ctx, cancel := context.WithCancel(w.feed.f.ctx)
	defer cancel()
	go func() {
		select {
		case <-w.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	lifetime := time.NewTimer(w.feed.f.limits.MaxLifetime)
	defer lifetime.Stop()
	sent := joinedAt
	if from < 0 {
		// Without a resourceVersion a watch starts with the current objects, unless the client
		// said it wants none (sendInitialEvents=false).
		wantsInitial := w.req.initialEvents == nil || *w.req.initialEvents
		if wantsInitial && !w.initial(ctx, joinedAt) {
			return
		}
	} else {
		sent = from
		for sent < joinedAt {
			page, err := api.outbox.events(ctx, w.req.workspaceID, sent, readPage)
			if err != nil || len(page) == 0 {
				return
			}
			for _, c := range changesOf([]*resource{w.req.res}, page) {
				if c.seq > joinedAt {
					break
				}
				if !w.receives(c) {
					continue
				}
				ev, err := api.eventOf(ctx, w.req.namespace, w.req.workspaceID, c)
				if err != nil || !w.send(ctx, ev) {
					return
				}
			}
			sent = min(page[len(page)-1].Seq, joinedAt)
		}
	}
	var bookmarks <-chan time.Time
	if w.req.bookmarks {
		t := time.NewTicker(w.feed.f.limits.BookmarkEvery)
		defer t.Stop()
		bookmarks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-lifetime.C:
			return
		case ev, ok := <-w.live:
			if !ok {
				return
			}
			if !w.send(ctx, ev) {
				return
			}
			sent = max(sent, rvOf(ev.Object))
		case <-bookmarks:
			if pos, ok := w.position(); ok {
				sent = max(sent, pos)
			}
			if !w.bookmark(ctx, sent, false) {
				return
			}
		}
	}
}

// initial sends the current objects as ADDED (and, when the client asked for initial events,
// the bookmark that ends them).
func (w *watcher) initial(ctx context.Context, at int64) bool {
	api := w.feed.f.api
	after := ""
	for {
		items, err := w.req.res.reads.list(ctx, &api.reader, page{workspaceID: w.req.workspaceID, namespace: w.req.namespace,
			principal: w.req.principal, after: after, limit: maxPage, equal: pushdown(w.req.pred.Field)})
		if err != nil {
			return false
		}
		for _, obj := range items {
			after = metaName(obj)
			setRV(obj, at)
			if !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
				return false
			}
		}
		if len(items) < maxPage {
			break
		}
	}
	// The bookmark that ends the initial events is what a watch-list client (sendInitialEvents
	// with bookmarks) waits for; the apiserver expects it of those requests only.
	if w.req.initialEvents != nil && *w.req.initialEvents && w.req.bookmarks {
		return w.bookmark(ctx, at, true)
	}
	return true
}

func (w *watcher) bookmark(ctx context.Context, rv int64, initialEnd bool) bool {
	obj := w.req.res.newObj()
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return w.deliver(ctx, watch.Event{Type: watch.Bookmark, Object: obj})
}

func rvOf(obj runtime.Object) int64 {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	n, _, _ := parseResourceVersion(m.GetResourceVersion())
	return n
}

// send applies the watch's selectors: an object that matches is sent, one that stopped matching
// is sent as DELETED, others are skipped.
func (w *watcher) send(ctx context.Context, ev watch.Event) bool {
	if w.seen != nil {
		name := metaName(ev.Object)
		if ev.Type == watch.Deleted {
			if !w.seen[name] {
				return true
			}
			delete(w.seen, name)
		} else if ok, err := w.req.pred.Matches(ev.Object); err == nil && ok {
			w.seen[name] = true
		} else if w.seen[name] {
			delete(w.seen, name)
			ev.Type = watch.Deleted
		} else {
			return true
		}
	}
	return w.deliver(ctx, ev)
}

func (w *watcher) deliver(ctx context.Context, ev watch.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
