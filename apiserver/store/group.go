package store

import (
	"context"
	"database/sql"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// maxGroup bounds how many transactions share one commit.
const maxGroup = 128

// GroupInTx is InTx for short transactions whose callers may share a commit: on SQLite, the
// transactions that arrive while one commit is under way run one after the other inside the
// next transaction, each in a savepoint of its own, and one commit (one fsync) makes them all
// durable before any caller returns. A transaction that fails rolls back to its savepoint and
// fails alone. fn must not call GroupInTx or InTx itself, and, as for InTx, may run again. On
// PostgreSQL, which commits concurrent transactions in parallel, it is InTx.
func (s *Store) GroupInTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if s.dialect != SQLite {
		return s.InTx(ctx, fn)
	}
	req := &groupRequest{ctx: ctx, fn: fn, done: make(chan struct{})}
	g := &s.group
	g.mu.Lock()
	g.queue = append(g.queue, req)
	if !g.running {
		g.running = true
		go s.commitGroups()
	}
	g.mu.Unlock()
	<-req.done
	return req.err
}

// group is the queue of transactions waiting for the next shared commit.
type group struct {
	mu      sync.Mutex
	queue   []*groupRequest
	running bool
}

type groupRequest struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	err  error
	done chan struct{}
	// alone: the request must run in a transaction of its own (the shared one failed).
	alone bool
}

// commitGroups commits the queued transactions in groups until the queue is empty.
func (s *Store) commitGroups() {
	g := &s.group
	for {
		g.mu.Lock()
		n := min(len(g.queue), maxGroup)
		if n == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		g.mu.Unlock()
		s.commitGroup(batch)
	}
}

func (s *Store) commitGroup(batch []*groupRequest) {
	defer prometheus.NewTimer(commitGroupDuration).ObserveDuration()
	commitGroupTransactions.Observe(float64(len(batch)))
	if len(batch) > 1 {
		s.runShared(batch)
	} else {
		batch[0].alone = true
	}
	for _, r := range batch {
		if r.alone {
			r.err = s.InTx(r.ctx, r.fn)
		}
		close(r.done)
	}
}

// runShared runs batch in one transaction, each request in a savepoint. It marks alone the
// requests that must run again in a transaction of their own: one that lost a race, and all of
// them when the shared transaction broke or its commit failed (what they saw is gone).
func (s *Store) runShared(batch []*groupRequest) {
	everyoneAlone := func() {
		for _, r := range batch {
			r.alone, r.err = true, nil
		}
	}
	// The shared transaction ignores the callers' contexts: one caller going away must not roll
	// the others back. Each fn's statements still use its caller's context.
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		everyoneAlone()
		return
	}
	for _, r := range batch {
		if r.ctx.Err() != nil {
			r.err = r.ctx.Err()
			continue
		}
		if !s.runInSavepoint(tx, r) {
			// An interrupted statement rolls the whole transaction back.
			_ = tx.Rollback()
			everyoneAlone()
			return
		}
	}
	if err := tx.Commit(); err != nil {
		everyoneAlone()
		return
	}
	s.counter.commits.Add(1)
}

// runInSavepoint runs r's fn in a savepoint of tx; r.err is fn's error (its writes rolled back).
// It reports false when tx can no longer be used.
func (s *Store) runInSavepoint(tx *sql.Tx, r *groupRequest) bool {
	if _, err := tx.Exec(`SAVEPOINT grouped`); err != nil {
		return false
	}
	s.counter.transactions.Add(1)
	if r.err = r.fn(tx); r.err != nil {
		if _, err := tx.Exec(`ROLLBACK TO grouped`); err != nil {
			return false
		}
		if s.retryable(r.err) {
			r.alone = true // a lost race in the shared transaction: tried again alone
		}
	}
	// Releasing fails when the transaction is gone, whatever fn reported.
	if _, err := tx.Exec(`RELEASE grouped`); err != nil {
		return false
	}
	return true
}
