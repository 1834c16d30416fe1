package workapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"platform.dev/platform/apiserver/identity"
)

// maxAllNamespaces bounds the workspaces one watch across namespaces follows (each is a watch of
// its workspace's feed).
const maxAllNamespaces = 100

// Reads across namespaces (`kubectl get tasks -A`) cover the workspaces where the caller may read
// runs, in the order of their namespaces. Each workspace has its own outbox, so no one position
// orders them: such a list's resourceVersion is the vector of the workspaces' positions
// ("all:" and its encoding), which a watch across namespaces starts from; its objects carry their
// own workspace's positions, and a watch across namespaces from one of those answers 410 Gone (the
// client lists again).
const vectorPrefix = "all:"

func encodeVector(v map[string]int64) string {
	b, _ := json.Marshal(v)
	return vectorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func decodeVector(rv string) (map[string]int64, bool) {
	s, ok := strings.CutPrefix(rv, vectorPrefix)
	if !ok {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	v := map[string]int64{}
	if err != nil || json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	return v, true
}

// readable are the workspaces whose Work the caller may read, sorted by namespace: those of its
// roles (and token), or, for the administrators' certificates and the loopback client, every
// workspace that has Work (an outbox), named by its route name when it has one.
func (a *API) readable(ctx context.Context) ([]identity.Workspace, error) {
	u, _ := genericapirequest.UserFrom(ctx)
	var (
		out []identity.Workspace
		all = true
		err error
	)
	if a.Readable != nil && u != nil {
		if out, all, err = a.Readable(ctx, u); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	if all {
		// Every workspace of the identity store, and those with Work but no identity record
		// (Development mode's, whose id is its name).
		if out, err = a.Identity.Workspaces(ctx, maxWorkspaces); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		known := map[string]bool{}
		for _, ws := range out {
			known[ws.ID] = true
		}
		rows, err := a.reader.query(ctx, `SELECT workspace_id FROM workplace_event_seqs ORDER BY workspace_id LIMIT ?`, maxWorkspaces)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			if !known[id] {
				out = append(out, identity.Workspace{ID: id, RouteName: id})
			}
		}
		if err := rows.Err(); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	slices.SortFunc(out, func(x, y identity.Workspace) int { return strings.Compare(x.RouteName, y.RouteName) })
	return out, nil
}

// maxWorkspaces bounds the workspaces a read across namespaces names.
const maxWorkspaces = 10000

// listAll lists the objects of every readable workspace, a page at a time: the continue token
// names the namespace and the object after which the next page starts.
func (r *readREST) listAll(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	workspaces, err := r.api.readable(ctx)
	if err != nil {
		return nil, err
	}
	pred := r.predicate(opts)
	limit := int(opts.Limit)
	if limit <= 0 || limit > maxPage {
		limit = maxPage
	}
	tok := continueToken{}
	if opts.Continue != "" {
		if tok, err = decodeContinue(opts.Continue); err != nil || tok.Namespace == "" {
			return nil, apierrors.NewBadRequest("the continue token is not one this server issued")
		}
	}
	// Every workspace's position, read before its rows, as one page's resourceVersion: a pager
	// keeps the first page's, from which a watch then misses nothing of any workspace.
	positions, err := r.api.positions(ctx, workspaces)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var kept []runtime.Object
	next := ""
	for _, ws := range workspaces {
		if ws.RouteName < tok.Namespace {
			continue
		}
		after := ""
		if ws.RouteName == tok.Namespace {
			after = tok.After
		}
		pos := positions[ws.RouteName]
		items, err := r.reads.list(ctx, &r.api.reader, page{workspaceID: ws.ID, namespace: ws.RouteName, principal: principalOf(ctx),
			after: after, limit: limit, equal: pushdown(pred.Field)})
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var last string
		for _, obj := range items {
			last = metaName(obj)
			setRV(obj, pos)
			if ok, err := pred.Matches(obj); err == nil && ok {
				kept = append(kept, obj)
			}
		}
		if limit -= len(items); limit == 0 {
			next = encodeContinue(continueToken{Namespace: ws.RouteName, After: last})
			break
		}
	}
	list := r.newList()
	if err := meta.SetList(list, kept); err != nil {
		return nil, err
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(encodeVector(positions))
	lm.SetContinue(next)
	return list, nil
}

// watchAll watches every readable workspace: one watch of each workspace's feed, merged. It
// starts from now, or from the positions of a list across namespaces; bookmarks carry the
// positions of all the workspaces, so that a client resumes from them.
func (r *watchableREST) watchAll(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	workspaces, err := r.api.readable(ctx)
	if err != nil {
		return nil, err
	}
	if len(workspaces) > maxAllNamespaces {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("a watch across namespaces follows at most %d workspaces; the caller reads %d: watch a namespace (-n)",
			maxAllNamespaces, len(workspaces)))
	}
	var from map[string]int64
	switch rv := opts.ResourceVersion; {
	case rv == "" || rv == "0":
	default:
		v, ok := decodeVector(rv)
		if !ok {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("resourceVersion %q is one workspace's position: a watch across namespaces resumes from a list's or a bookmark's: list again", rv))
		}
		from = v
	}
	user := ""
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		user = u.GetName()
	}
	m := &mergedWatch{out: make(chan watch.Event), done: make(chan struct{}), positions: map[string]int64{}}
	initialEvents := opts.SendInitialEvents
	for _, ws := range workspaces {
		req := watchRequest{res: r.resource, namespace: ws.RouteName, workspaceID: ws.ID, user: user, principal: principalOf(ctx),
			pred: r.predicate(opts), bookmarks: opts.AllowWatchBookmarks, initialEvents: initialEvents}
		// A workspace missing from the positions (the caller reads it since the list) starts from
		// now, with its current objects as ADDED.
		if pos, ok := from[ws.RouteName]; ok {
			req.resourceVersion = strconv.FormatInt(pos, 10)
			m.positions[ws.RouteName] = pos
		}
		w, err := r.api.feeds.watch(ctx, req)
		if err != nil {
			for _, s := range m.subs {
				s.Stop()
			}
			return nil, err
		}
		m.subs = append(m.subs, w)
		m.names = append(m.names, ws.RouteName)
	}
	// As for one namespace, the initial events (and the bookmark that ends them) are those of a
	// watch from now.
	m.waitEnd = initialEvents != nil && *initialEvents && opts.AllowWatchBookmarks && from == nil
	go m.run(r.resource, r.api.Limits.MaxLifetime)
	return m, nil
}

// mergedWatch merges the watches of several workspaces into one.
type mergedWatch struct {
	subs  []watch.Interface
	names []string
	out   chan watch.Event
	done  chan struct{}
	once  sync.Once
	// waitEnd: the client asked for initial events and their end bookmark, sent once every
	// workspace's initial events ended.
	waitEnd bool

	positions map[string]int64 // guarded by run's goroutine
}

func (m *mergedWatch) ResultChan() <-chan watch.Event { return m.out }
func (m *mergedWatch) Stop()                          { m.once.Do(func() { close(m.done) }) }

type namedEvent struct {
	i  int
	ev watch.Event
	ok bool
}

func (m *mergedWatch) run(res *resource, lifetime time.Duration) {
	// On return: the workspaces' watches stop, their forwarders end, then the merged watch ends.
	var wg sync.WaitGroup
	defer close(m.out)
	defer wg.Wait()
	defer func() {
		for _, s := range m.subs {
			s.Stop()
		}
	}()
	end := time.NewTimer(lifetime)
	defer end.Stop()
	in := make(chan namedEvent)
	for i, s := range m.subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range s.ResultChan() {
				select {
				case in <- namedEvent{i: i, ev: ev, ok: true}:
				case <-m.done:
					return
				}
			}
			select {
			case in <- namedEvent{i: i}:
			case <-m.done:
			}
		}()
	}
	if m.waitEnd && len(m.subs) == 0 {
		// No workspace to read: the initial events are none, and end at once.
		obj := res.newObj()
		metaOf(obj).SetResourceVersion(encodeVector(m.positions))
		metaOf(obj).SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		select {
		case m.out <- watch.Event{Type: watch.Bookmark, Object: obj}:
		case <-m.done:
			return
		}
	}
	ended := 0
	for {
		var e namedEvent
		select {
		case <-m.done:
			return
		case <-end.C:
			return
		case e = <-in:
		}
		if !e.ok {
			// One workspace's watch ended (its lifetime, or its client fell behind): the whole
			// watch ends, and the client watches again from its last bookmark.
			m.Stop()
			return
		}
		name := m.names[e.i]
		if pos := rvOf(e.ev.Object); pos > 0 {
			m.positions[name] = max(m.positions[name], pos)
		}
		if e.ev.Type == watch.Bookmark {
			end := false
			if a := metaOf(e.ev.Object).GetAnnotations(); a[metav1.InitialEventsAnnotationKey] == "true" {
				if ended++; !m.waitEnd || ended < len(m.subs) {
					continue
				}
				end = true
			}
			obj := res.newObj()
			om := metaOf(obj)
			om.SetResourceVersion(encodeVector(m.positions))
			if end {
				om.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
			}
			e.ev = watch.Event{Type: watch.Bookmark, Object: obj}
		}
		select {
		case m.out <- e.ev:
		case <-m.done:
			return
		}
	}
}

// positions are the outbox positions of the workspaces, by namespace (0 for one without events).
func (a *API) positions(ctx context.Context, workspaces []identity.Workspace) (map[string]int64, error) {
	names := map[string]string{}
	out := map[string]int64{}
	for _, ws := range workspaces {
		names[ws.ID] = ws.RouteName
		out[ws.RouteName] = 0
	}
	rows, err := a.reader.query(ctx, `SELECT workspace_id, seq FROM workplace_event_seqs ORDER BY workspace_id LIMIT ?`, maxWorkspaces)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id  string
			seq int64
		)
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, err
		}
		if name, ok := names[id]; ok {
			out[name] = seq
		}
	}
	return out, rows.Err()
}
