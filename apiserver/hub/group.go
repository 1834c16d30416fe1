package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"platform.dev/platform/apiserver/notify"
	"platform.dev/platform/apiserver/workplace"
)

// events are the names the hub sends: the Workplace's twelve, and nothing else.
var events = map[string]bool{
	workplace.EventInteractionUpdated: true, workplace.EventMessageAdded: true, workplace.EventPendingActionCreated: true,
	workplace.EventPendingActionResolved: true, workplace.EventTaskCreated: true, workplace.EventTaskStatusChanged: true,
	workplace.EventTaskActivityAdded: true, workplace.EventTaskResultAdded: true, workplace.EventTaskArtifactAdded: true,
	workplace.EventNotificationCreated: true, workplace.EventNotificationUpdated: true, workplace.EventUnreadNotificationCountChanged: true,
}

// GroupName is the name of a workspace's group, as the spec gives it.
func GroupName(workspaceID string) string { return "workspace:" + workspaceID }

// group is the connections of this process that joined one workspace, and the reader that sends
// them the workspace's outbox events in order: one reader per workspace, woken by the outbox's
// topic, however many connections listen.
type group struct {
	id    string
	hub   *Hub
	refs  int // guarded by the hub's lock
	ready chan struct{}
	err   error
	stop  chan struct{}

	mu      sync.RWMutex
	members map[*conn]struct{}
}

// acquireGroup returns the workspace's group, opening it for the first member: subscribed to the
// outbox's topic before it reads the last event's number, so that every event committed after
// the join is sent.
func (h *Hub) acquireGroup(ctx context.Context, id string) (*group, error) {
	h.mu.Lock()
	g := h.groups[id]
	if g != nil {
		g.refs++
		h.mu.Unlock()
		select {
		case <-g.ready:
		case <-ctx.Done():
			h.releaseGroup(g)
			return nil, ctx.Err()
		}
		if g.err != nil {
			h.releaseGroup(g)
			return nil, g.err
		}
		return g, nil
	}
	g = &group{id: id, hub: h, refs: 1, ready: make(chan struct{}), stop: make(chan struct{}), members: map[*conn]struct{}{}}
	h.groups[id] = g
	h.mu.Unlock()

	sub, err := h.opts.Changes.Subscribe(workplace.Topic(id))
	var last int64
	if err == nil {
		if last, err = h.opts.Source.LastEventSeq(ctx, id); err != nil {
			sub.Close()
		}
	}
	g.err = err
	if err != nil {
		// Later joiners open the group afresh instead of finding this failed one.
		h.mu.Lock()
		if h.groups[id] == g {
			delete(h.groups, id)
		}
		h.mu.Unlock()
	}
	close(g.ready)
	if err != nil {
		h.releaseGroup(g)
		return nil, err
	}
	go g.run(sub, last)
	return g, nil
}

// releaseGroup closes the group once its last member left.
func (h *Hub) releaseGroup(g *group) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if g.refs--; g.refs == 0 {
		if h.groups[g.id] == g {
			delete(h.groups, g.id)
		}
		close(g.stop)
	}
}

func (g *group) add(c *conn) {
	g.mu.Lock()
	g.members[c] = struct{}{}
	g.mu.Unlock()
}

func (g *group) remove(c *conn) {
	g.mu.Lock()
	delete(g.members, c)
	g.mu.Unlock()
}

// run sends the events after last, then each batch the outbox's topic announces, until the
// group closes. A read that fails is tried again; a subscription dropped for falling behind is
// opened again: the events are read by number, so none is lost and none sent twice.
func (g *group) run(sub *notify.Subscription, last int64) {
	h := g.hub
	workplace.FollowOutbox(h.ctx, g.stop, h.opts.Changes, g.id, sub, func() (err error) {
		last, err = g.drain(last)
		return err
	}, h.opts.Log)
}

// drain sends every committed event after last and returns the number of the last one read.
func (g *group) drain(last int64) (int64, error) {
	for {
		page, err := g.hub.opts.Source.Events(g.hub.ctx, g.id, last, readPage)
		if err != nil {
			return last, err
		}
		if len(page) > 0 {
			last = page[len(page)-1].Seq
			g.deliver(encodePage(page))
		}
		if len(page) < readPage {
			return last, nil
		}
	}
}

// eventArgument is the event's payload with its workspace's id.
func eventArgument(e workplace.Event) json.RawMessage {
	payload := map[string]any{}
	_ = json.Unmarshal(e.Payload, &payload)
	payload["workspaceId"] = e.WorkspaceID
	b, _ := json.Marshal(payload)
	return b
}

// encoded is a page of events as the members receive them, each event encoded once: everyone is
// what members receive whose Principal has no event of its own in the page; own, by Principal,
// what that Principal's members receive (the events for everyone and its own, in order).
type encoded struct {
	everyone []byte
	own      map[string][]byte
}

// encodePage encodes the events of a page that the hub sends (the spec's twelve names).
func encodePage(page []workplace.Event) encoded {
	var e encoded
	for _, ev := range page {
		if !events[ev.Name] {
			continue
		}
		msg := invocation(ev.Name, eventArgument(ev))
		if ev.PrincipalID == "" {
			e.everyone = append(e.everyone, msg...)
			for p, b := range e.own {
				e.own[p] = append(b, msg...)
			}
			continue
		}
		if e.own == nil {
			e.own = map[string][]byte{}
		}
		b, ok := e.own[ev.PrincipalID]
		if !ok {
			b = append([]byte(nil), e.everyone...)
		}
		e.own[ev.PrincipalID] = append(b, msg...)
	}
	return e
}

// frames splits messages (each ending with the separator) into frames of at most maxBatch bytes,
// at message boundaries (a message larger than that is a frame of its own). The separator never
// occurs inside a JSON message: encoding/json escapes control characters.
func frames(b []byte) [][]byte {
	var out [][]byte
	for len(b) > maxBatch {
		cut := bytes.LastIndexByte(b[:maxBatch], recordSeparator) + 1
		if cut == 0 {
			cut = bytes.IndexByte(b, recordSeparator) + 1
		}
		if cut == 0 || cut == len(b) {
			break
		}
		out = append(out, b[:cut:cut])
		b = b[cut:]
	}
	if len(b) > 0 {
		out = append(out, b)
	}
	return out
}

// deliver queues a page to every member: the frames of one encoding shared by all the members
// that receive the same events, so that a busy workspace costs a few frames per member, encoded
// once, not a message per event and member. It never waits on a member.
func (g *group) deliver(e encoded) {
	if len(e.everyone) == 0 && len(e.own) == 0 {
		return
	}
	everyone := frames(e.everyone)
	var own map[string][][]byte
	if len(e.own) > 0 {
		own = make(map[string][][]byte, len(e.own))
		for p, b := range e.own {
			own[p] = frames(b)
		}
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	for c := range g.members {
		fs := everyone
		if mine, ok := own[c.principal]; ok {
			fs = mine
		}
		for _, f := range fs {
			c.queue(f)
		}
	}
}
