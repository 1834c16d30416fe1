// Package notify tells whoever waits on a topic (a run, a workspace) that it changed: at once for
// the changes this process commits, and through PostgreSQL's LISTEN/NOTIFY for those of every
// replica sharing the database. It only wakes: the store stays the source of truth, so a waiter
// re-reads what it shows after each event, and a subscriber dropped for falling behind
// subscribes again and re-reads.
package notify

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
)

// Defaults of Options.
const (
	DefaultMaxSubscribers = 16384
	DefaultBuffer         = 16
)

// ErrTooManySubscribers is what Subscribe answers when the hub holds MaxSubscribers already.
var ErrTooManySubscribers = errors.New("notify: too many subscribers")

// Options bound a Hub.
type Options struct {
	// MaxSubscribers bounds the subscriptions open at once; DefaultMaxSubscribers when zero.
	MaxSubscribers int
	// Buffer is how many events a subscription queues before it is dropped; DefaultBuffer when
	// zero.
	Buffer int
}

// Event says that a topic changed.
type Event struct {
	Topic string
}

// Hub routes events to the subscriptions of their topic.
type Hub struct {
	max    int
	buffer int
	// origin names this hub in the notifications it sends to other replicas, so that it skips
	// its own when PostgreSQL hands them back.
	origin string

	mu     sync.Mutex
	topics map[string]map[*Subscription]struct{}
	count  int
}

// New returns an empty hub.
func New(opts Options) *Hub {
	h := &Hub{max: opts.MaxSubscribers, buffer: opts.Buffer, topics: map[string]map[*Subscription]struct{}{}}
	if h.max <= 0 {
		h.max = DefaultMaxSubscribers
	}
	if h.buffer <= 0 {
		h.buffer = DefaultBuffer
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	h.origin = hex.EncodeToString(b)
	return h
}

// Subscription receives the events of its topics until it is closed or dropped.
type Subscription struct {
	hub     *Hub
	topics  []string
	events  chan Event
	dropped atomic.Bool
	once    sync.Once
}

// Subscribe opens a subscription to topics. Subscribe before reading the state the topics
// describe, so that a change between the read and the wait is not missed.
func (h *Hub) Subscribe(topics ...string) (*Subscription, error) {
	s := &Subscription{hub: h, topics: topics, events: make(chan Event, h.buffer)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count >= h.max {
		return nil, ErrTooManySubscribers
	}
	h.count++
	for _, t := range topics {
		set := h.topics[t]
		if set == nil {
			set = map[*Subscription]struct{}{}
			h.topics[t] = set
		}
		set[s] = struct{}{}
	}
	return s, nil
}

// Events delivers the subscription's events; it is closed when the subscription is closed or
// dropped.
func (s *Subscription) Events() <-chan Event { return s.events }

// Dropped reports whether the hub dropped the subscription because its queue was full: events
// were lost, so the subscriber re-reads the store (and subscribes again to go on).
func (s *Subscription) Dropped() bool { return s.dropped.Load() }

// Close ends the subscription.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.remove(s)
}

// remove unregisters s; the hub's lock is held.
func (h *Hub) remove(s *Subscription) {
	s.once.Do(func() {
		for _, t := range s.topics {
			if set := h.topics[t]; set != nil {
				delete(set, s)
				if len(set) == 0 {
					delete(h.topics, t)
				}
			}
		}
		h.count--
		close(s.events)
	})
}

// Publish delivers an event of each topic to this process's subscribers. It never blocks: a
// subscriber whose queue is full is dropped.
func (h *Hub) Publish(topics ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range topics {
		for s := range h.topics[t] {
			select {
			case s.events <- Event{Topic: t}:
			default:
				s.dropped.Store(true)
				h.remove(s)
			}
		}
	}
}

// wakeAll delivers an event to every subscriber, of its first topic: after notifications may
// have been missed (a lost LISTEN connection), everyone re-reads.
func (h *Hub) wakeAll() {
	h.mu.Lock()
	var all []string
	seen := map[*Subscription]bool{}
	for _, set := range h.topics {
		for s := range set {
			if !seen[s] {
				seen[s] = true
				all = append(all, s.topics[0])
			}
		}
	}
	h.mu.Unlock()
	h.Publish(uniq(all)...)
}

func uniq(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Subscribers is how many subscriptions are open.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}
