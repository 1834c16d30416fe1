// Package listener bounds what clients can hold of the process's file descriptors: each
// listener caps its open connections, making room for a newcomer by closing the connection that
// has been quiet the longest, and the caps leave headroom under the descriptor limit for the
// store, etcd and everything else the process opens.
package listener

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// quietEnough is how long a connection must have been silent before it may be closed to make
// room: a connection busy within it belongs to someone being served.
const quietEnough = time.Second

// Limit returns a listener that keeps at most max connections of l open. A connection accepted
// at the cap closes the connections that have been silent longest (no byte read or written for
// at least a second; idle keep-alives and clients that never finish their headers first), so that
// clients holding connections without using them cannot lock others out. When every connection
// is busy, the newcomer is closed instead.
func Limit(l net.Listener, max int) net.Listener {
	return &limited{Listener: l, max: max, open: map[*conn]struct{}{}}
}

type limited struct {
	net.Listener
	max int

	mu   sync.Mutex
	open map[*conn]struct{}
}

func (l *limited) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tracked := &conn{Conn: c, owner: l}
		tracked.touch()
		if l.admit(tracked) {
			return tracked, nil
		}
		c.Close()
	}
}

// admit registers c, first closing quiet connections when the listener is at its cap; false
// when every open connection is busy.
func (l *limited) admit(c *conn) bool {
	l.mu.Lock()
	var victims []*conn
	if len(l.open) >= l.max {
		victims = l.quietest(max(1, l.max/64), time.Now().Add(-quietEnough).UnixNano())
		if len(victims) == 0 {
			l.mu.Unlock()
			return false
		}
		for _, v := range victims {
			delete(l.open, v)
		}
	}
	l.open[c] = struct{}{}
	l.mu.Unlock()
	// Closed outside the lock: a close may block on the kernel.
	for _, v := range victims {
		v.Conn.Close()
	}
	return true
}

// quietest returns up to n connections silent since before cutoff, the most silent first. One
// pass frees a batch, so that a flood at the cap costs one scan per batch, not per connection.
func (l *limited) quietest(n int, cutoff int64) []*conn {
	out := make([]*conn, 0, n)
	for c := range l.open {
		last := c.last.Load()
		if last > cutoff {
			continue
		}
		if len(out) < n {
			out = append(out, c)
			continue
		}
		// Replace the least silent of the batch when c has been silent longer.
		newest := 0
		for i := range out {
			if out[i].last.Load() > out[newest].last.Load() {
				newest = i
			}
		}
		if last < out[newest].last.Load() {
			out[newest] = c
		}
	}
	return out
}

func (l *limited) forget(c *conn) {
	l.mu.Lock()
	delete(l.open, c)
	l.mu.Unlock()
}

// Open is how many connections the listener holds open now.
func Open(l net.Listener) int {
	if lim, ok := l.(*limited); ok {
		lim.mu.Lock()
		defer lim.mu.Unlock()
		return len(lim.open)
	}
	return -1
}

// conn records when it last moved a byte.
type conn struct {
	net.Conn
	owner  *limited
	last   atomic.Int64
	closed atomic.Bool
}

func (c *conn) touch() { c.last.Store(time.Now().UnixNano()) }

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *conn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.owner.forget(c)
	}
	return c.Conn.Close()
}
