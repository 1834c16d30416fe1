package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// conn is one client's connection: a reader (the request's goroutine) that handles what the
// client sends, and a writer that sends what is queued for it.
type conn struct {
	hub    *Hub
	slot   *slot
	ws     *websocket.Conn
	caller Caller
	// principal is the caller's, read once.
	principal string

	// pending is what waits to be written, queued the bytes it holds: bounded by SendQueueBytes.
	// The frames are shared with the other members of a group and never written to.
	qmu     sync.Mutex
	pending [][]byte
	queued  int
	// wake tells the writer that pending has something.
	wake chan struct{}
	done chan struct{}
	once sync.Once
	// final is written last, before the socket closes (a Close message or a refused handshake).
	final       []byte
	writerEnded chan struct{}

	lastRead  atomic.Int64
	lastWrite atomic.Int64
	// writing is when the write in progress began (Unix ns), 0 between writes.
	writing atomic.Int64
	// nextCheck is when the caller is checked again; guarded by the hub's lock.
	nextCheck time.Time

	mu     sync.Mutex
	groups map[string]*group
	// names are the workspace names the client joined with (an id or a route name), by group.
	names map[string]string
}

func newConn(h *Hub, s *slot, ws *websocket.Conn, caller Caller) *conn {
	now := time.Now()
	c := &conn{hub: h, slot: s, ws: ws, caller: caller, principal: caller.PrincipalID(), wake: make(chan struct{}, 1),
		done: make(chan struct{}), writerEnded: make(chan struct{}), nextCheck: now.Add(h.opts.Revalidate), groups: map[string]*group{}, names: map[string]string{}}
	c.lastRead.Store(now.UnixNano())
	c.lastWrite.Store(now.UnixNano())
	return c
}

// close ends the connection once, sending final (if any) before the socket closes.
func (c *conn) close(final []byte) {
	c.once.Do(func() {
		c.final = final
		close(c.done)
	})
}

// queue hands a message to the writer without ever waiting: a client that lets more than
// SendQueueBytes wait does not read what it is sent, and is dropped so that it holds up nobody
// else. (A single message is always taken: the queue bounds a backlog, not a message.)
func (c *conn) queue(msg []byte) {
	c.qmu.Lock()
	if c.queued > 0 && c.queued+len(msg) > c.hub.opts.SendQueueBytes {
		c.qmu.Unlock()
		c.close(closeMessage("the connection fell behind: it did not read its messages in time", true))
		return
	}
	c.pending = append(c.pending, msg)
	c.queued += len(msg)
	c.qmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take returns what waits to be written and empties the queue, keeping spare's array for the
// next messages.
func (c *conn) take(spare [][]byte) [][]byte {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	out := c.pending
	c.pending, c.queued = spare[:0], 0
	return out
}

// serve runs the connection until it ends, then leaves its groups.
func (c *conn) serve() {
	go c.write()
	c.read()
	c.close(nil)
	<-c.writerEnded
	c.mu.Lock()
	groups := c.groups
	c.groups = map[string]*group{}
	c.mu.Unlock()
	for _, g := range groups {
		g.remove(c)
		c.hub.releaseGroup(g)
	}
}

// write sends the queued messages, as many per frame as fit in maxBatch bytes, until the
// connection ends.
func (c *conn) write() {
	defer close(c.writerEnded)
	var (
		batch []byte
		spare [][]byte
	)
	for {
		select {
		case <-c.wake:
			msgs := c.take(spare)
			for i, m := range msgs {
				if len(batch) > 0 && len(batch)+len(m) > maxBatch {
					if !c.flush(batch) {
						return
					}
					batch = batch[:0]
				}
				if len(batch) == 0 && (len(m) >= maxBatch || i == len(msgs)-1) {
					// A whole frame already: sent as it is, without a copy.
					if !c.flush(m) {
						return
					}
					continue
				}
				batch = append(batch, m...)
			}
			if len(batch) > 0 && !c.flush(batch) {
				return
			}
			clear(msgs) // the frames go, with the events they hold
			spare, batch = msgs, batch[:0]
			if cap(batch) > 4<<10 {
				batch = nil // an idle connection keeps no large buffer
			}
			if cap(spare) > 64 {
				spare = nil
			}
		case <-c.done:
			if c.final != nil {
				_ = c.send(c.final)
			}
			// The close handshake waits for the client's answer for a few seconds at most.
			_ = c.ws.Close(websocket.StatusNormalClosure, "")
			return
		}
	}
}

// flush sends a frame; false when the connection broke (it is closed then).
func (c *conn) flush(frame []byte) bool {
	if err := c.send(frame); err != nil {
		c.close(nil)
		c.ws.CloseNow()
		return false
	}
	return true
}

func (c *conn) send(b []byte) error {
	// No context per write (a timer each, for every member of every event): the sweep closes a
	// connection whose write has taken longer than writeTimeout.
	now := time.Now().UnixNano()
	c.writing.Store(now)
	err := c.ws.Write(context.Background(), websocket.MessageText, b)
	c.writing.Store(0)
	c.lastWrite.Store(now)
	return err
}

// read handles what the client sends until it closes, breaks the protocol or the connection
// ends otherwise.
func (c *conn) read() {
	h := c.hub
	c.ws.SetReadLimit(h.opts.MaxMessageBytes)
	// A client that does not finish its handshake in time is closed (a Read whose context ends
	// closes the socket).
	handshakeCtx, cancel := context.WithTimeout(context.Background(), h.opts.HandshakeTimeout)
	defer cancel()
	var (
		rest      []byte
		handshook bool
	)
	for {
		ctx := context.Background()
		if !handshook {
			ctx = handshakeCtx
		}
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return
		}
		c.lastRead.Store(time.Now().UnixNano())
		if len(rest)+len(data) > int(h.opts.MaxMessageBytes) {
			c.close(closeMessage(fmt.Sprintf("Connection closed with an error: a message is larger than %d bytes", h.opts.MaxMessageBytes), false))
			return
		}
		var messages [][]byte
		messages, rest = splitFrame(append(rest, data...))
		rest = append([]byte(nil), rest...)
		for _, m := range messages {
			if !handshook {
				if err := handshake(m); err != nil {
					c.close(handshakeError(err.Error()))
					return
				}
				handshook = true
				cancel()
				c.queue(handshakeOK)
				continue
			}
			if !c.handle(m) {
				return
			}
		}
	}
}

// handle acts on one message; false when the connection ends.
func (c *conn) handle(raw []byte) bool {
	m, err := parseMessage(raw)
	if err != nil {
		c.close(closeMessage("Connection closed with an error: "+err.Error(), false))
		return false
	}
	switch m.Type {
	case typeInvocation:
		if len(m.StreamIDs) > 0 {
			c.complete(m.InvocationID, "streaming arguments are not supported")
			return true
		}
		c.invoke(m)
	case typeStreamInvocation:
		c.complete(m.InvocationID, "the hub has no streaming method: "+truncate(m.Target, 64)+" cannot stream")
	case typeClose:
		c.close(nil)
		return false
	case typeCancelInvocation, typePing, typeStreamItem, typeCompletion, typeAck, typeSequence:
		// Invocations complete before the next message is read, so there is nothing to cancel;
		// the hub invokes nothing that a client completes and never offers stateful reconnect.
	}
	return true
}

// complete answers an invocation that asked for an answer (it has an id).
func (c *conn) complete(id *string, reason string) {
	if id != nil {
		c.queue(completion(*id, reason))
	}
}

// invoke runs a hub method: JoinWorkspace or LeaveWorkspace, each with the workspace's id (or
// route name).
func (c *conn) invoke(m message) {
	if limited, ok := c.caller.(Limited); ok {
		// A caller past its rate limit gets the invocation's completion with the reason.
		if refused, _ := limited.Limit(c.hub.ctx); refused != "" {
			c.complete(m.InvocationID, refused)
			return
		}
	}
	var workspace string
	if len(m.Arguments) != 1 || json.Unmarshal(m.Arguments[0], &workspace) != nil || workspace == "" || len(workspace) > 256 {
		if m.Target == "JoinWorkspace" || m.Target == "LeaveWorkspace" {
			c.complete(m.InvocationID, m.Target+" takes one argument: the workspace's id")
			return
		}
	}
	switch m.Target {
	case "JoinWorkspace":
		c.complete(m.InvocationID, errorText(c.join(workspace)))
	case "LeaveWorkspace":
		c.leave(workspace)
		c.complete(m.InvocationID, "")
	default:
		c.complete(m.InvocationID, fmt.Sprintf("unknown hub method %q: the hub has JoinWorkspace and LeaveWorkspace", truncate(m.Target, 64)))
	}
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// join adds the connection to the workspace's group, once the caller may read runs there.
func (c *conn) join(workspace string) error {
	ctx, cancel := context.WithTimeout(c.hub.ctx, 30*time.Second)
	defer cancel()
	id, err := c.caller.Join(ctx, workspace)
	if err != nil {
		return err
	}
	c.mu.Lock()
	_, joined := c.groups[id]
	n := len(c.groups)
	if joined {
		c.names[workspace] = id
	}
	c.mu.Unlock()
	if joined {
		return nil
	}
	if n >= maxGroupsPerConnection {
		return fmt.Errorf("a connection joins at most %d workspaces", maxGroupsPerConnection)
	}
	g, err := c.hub.acquireGroup(ctx, id)
	if err != nil {
		c.hub.opts.Log.Error(err, "opening a workspace group failed", "workspace", id)
		return errors.New("the workspace's events cannot be read now; try again")
	}
	g.add(c)
	c.mu.Lock()
	c.groups[id] = g
	c.names[workspace] = id
	c.mu.Unlock()
	return nil
}

// leave removes the connection from the group of the workspace named by its id or route name.
func (c *conn) leave(workspace string) {
	c.mu.Lock()
	id, ok := c.names[workspace]
	if !ok {
		id = workspace
	}
	g := c.groups[id]
	if g != nil {
		delete(c.groups, id)
		for name, joined := range c.names {
			if joined == id {
				delete(c.names, name)
			}
		}
	}
	c.mu.Unlock()
	if g != nil {
		g.remove(c)
		c.hub.releaseGroup(g)
	}
}

func (c *conn) groupIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	return ids
}
