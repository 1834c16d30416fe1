package work

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"time"

	"platform.dev/platform/apiserver/notify"
)

// Topics of the changes the store commits, for the subscribers of its hub (Changes).
const (
	// RunnableTopic changes when a FlowRun or Runtime Run may have become runnable: executors
	// subscribe to it instead of waiting for their next poll.
	RunnableTopic = "runnable"
)

// RunTopic changes with every committed transition of the FlowRun.
func RunTopic(runID string) string { return "run/" + runID }

// RunSettledTopic changes with every committed transition that leaves the FlowRun neither
// Pending nor Running: a waiter for the run to ask, end or pause is woken once, not at each step.
func RunSettledTopic(runID string) string { return "run-settled/" + runID }

// RuntimeRunTopic changes when the Runtime Run is created or finishes.
func RuntimeRunTopic(id string) string { return "runtime-run/" + id }

// WorkspaceTopic changes with every committed change of the workspace's runs.
func WorkspaceTopic(workspaceID string) string { return "workspace/" + workspaceID }

// Changes is the hub the store notifies of the changes it commits: at once in this process,
// through PostgreSQL for the other replicas once Listen runs (notify.Hub.Listen).
func (s *Store) Changes() *notify.Hub { return s.changes }

// inTxNotify runs fn in a transaction that announces topics, and those that what fn calls
// records with Announce (the Workplace's outbox, written by the Observer): staged inside it for
// the other replicas, published here once it committed.
func (s *Store) inTxNotify(ctx context.Context, topics func() []string, fn func(*sql.Tx) error) error {
	return s.announcing(ctx, s.db.GroupInTx, func(tx *sql.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		s.announce(tx, topics()...)
		return nil
	})
}

// Announce records topics to announce once the transaction tx commits, when tx is one of the
// store's (InTx, and the transactions of runs and submissions, in which the Observer writes):
// other planes that write in them (the Workplace's outbox) wake their own subscribers so. It does
// nothing for another transaction.
func (s *Store) Announce(tx *sql.Tx, topics ...string) { s.announce(tx, topics...) }

// announce records topics to announce when the transaction tx, run by announcing, commits.
func (s *Store) announce(tx *sql.Tx, topics ...string) {
	if r, ok := s.announced.Load(tx); ok {
		r.(*txRecord).topics = append(r.(*txRecord).topics, topics...)
	}
}

// Flusher is a write another plane defers to the end of a transaction (Deferred). What it
// announces, it announces when it is deferred: the transaction's topics are staged before it
// flushes.
type Flusher interface {
	Flush(ctx context.Context, tx *sql.Tx) error
}

// NotifyingFlusher is a Flusher that can send, with its write and in one statement, the
// PostgreSQL notification (pg_notify(channel, payload)) the transaction would otherwise send in a
// statement of its own. FlushNotifying must send it, whatever it writes.
type NotifyingFlusher interface {
	Flusher
	FlushNotifying(ctx context.Context, tx *sql.Tx, channel, payload string) error
}

// Deferred returns the Flusher that tx keeps under key, made by create at the key's first use in
// tx, and flushed when the transaction's work is done, right before it commits (or its savepoint
// is released): a write that locks a row every transaction of a workspace updates (the
// Workplace outbox's counter) then holds the lock for the shortest time. ok is false when tx is
// not one of the store's transactions.
func (s *Store) Deferred(tx *sql.Tx, key any, create func() Flusher) (Flusher, bool) {
	r, ok := s.announced.Load(tx)
	if !ok {
		return nil, false
	}
	record := r.(*txRecord)
	for _, d := range record.deferred {
		if d.key == key {
			return d.flusher, true
		}
	}
	f := create()
	record.deferred = append(record.deferred, deferredWrite{key: key, flusher: f})
	return f, true
}

// txRecord is what one transaction attempt of announcing collects.
type txRecord struct {
	topics   []string
	deferred []deferredWrite
}

type deferredWrite struct {
	key     any
	flusher Flusher
}

// announcing runs fn in a transaction of inTx and announces, once it committed, the topics that
// fn recorded with announce: staged inside it for the other replicas, published here after.
// Transactions sharing a commit (GroupInTx) run their fns one after the other, so the record of
// one never mixes with another's.
func (s *Store) announcing(ctx context.Context, inTx func(context.Context, func(*sql.Tx) error) error, fn func(*sql.Tx) error) error {
	var topics []string
	err := inTx(ctx, func(tx *sql.Tx) error {
		record := &txRecord{}
		s.announced.Store(tx, record)
		defer s.announced.Delete(tx)
		if err := fn(tx); err != nil {
			return err
		}
		// Staged before the deferred writes, so that these are the last before the commit (a
		// deferred write announces its topics when it is deferred). A transaction that writes
		// many outbox rows announces their workspace's topic once.
		topics = slices.Compact(slices.Sorted(slices.Values(record.topics)))
		// On PostgreSQL a deferred write that can carries the notification in its own
		// statement: a statement less per transaction.
		carrier := -1
		for i, d := range record.deferred {
			if _, ok := d.flusher.(NotifyingFlusher); ok {
				carrier = i
				break
			}
		}
		channel, payload, carried := s.changes.Notification(s.db.Dialect(), topics...)
		if !carried || carrier < 0 {
			carrier = -1
			if err := s.changes.Stage(ctx, tx, s.db.Dialect(), topics...); err != nil {
				return err
			}
		}
		for i, d := range record.deferred {
			var err error
			if i == carrier {
				err = d.flusher.(NotifyingFlusher).FlushNotifying(ctx, tx, channel, payload)
			} else {
				err = d.flusher.Flush(ctx, tx)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.changes.Publish(topics...)
	}
	return err
}

// maxSettledKept bounds the settled runs a store keeps for WaitSettled (settledRuns).
const maxSettledKept = 1024

// settledRuns are the latest runs that this process's transitions left settled (neither Pending
// nor Running), at most maxSettledKept, the oldest forgotten first: a waiter for a run that a
// worker of this process settles finds it here instead of reading it, once woken or at once when
// it came before the waiter subscribed.
type settledRuns struct {
	mu    sync.Mutex
	runs  map[string]FlowRun
	order []string // ring of the kept ids, next the oldest once full
	next  int
}

// keep records run when it is settled.
func (k *settledRuns) keep(run FlowRun) {
	if run.State == StatePending || run.State == StateRunning {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.runs == nil {
		k.runs = make(map[string]FlowRun, maxSettledKept)
	}
	if _, kept := k.runs[run.ID]; !kept {
		if len(k.order) < maxSettledKept {
			k.order = append(k.order, run.ID)
		} else {
			delete(k.runs, k.order[k.next])
			k.order[k.next] = run.ID
			k.next = (k.next + 1) % maxSettledKept
		}
	}
	k.runs[run.ID] = run
}

// after is the kept settled run of workspaceID newer than version.
func (k *settledRuns) after(workspaceID, id string, version int64) (FlowRun, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	run, ok := k.runs[id]
	return run, ok && run.WorkspaceID == workspaceID && run.Version > version
}

// WaitSettled waits up to timeout for a Pending or Running run to ask, end or pause, and returns
// it as it then is: woken when a committed change settles the run (RunSettledTopic), never
// polling. When the hub holds as many subscribers as it serves, it answers at once.
func (s *Store) WaitSettled(ctx context.Context, workspaceID string, run FlowRun, timeout time.Duration) (FlowRun, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var sub *notify.Subscription
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	for run.State == StatePending || run.State == StateRunning {
		if sub == nil {
			// Subscribed before the read, so that a change between the read and the wait wakes it.
			var err error
			if sub, err = s.changes.Subscribe(RunSettledTopic(run.ID)); err != nil {
				return run, nil
			}
		}
		// A worker of this process that settled the run since left it here: no read.
		next, settled := s.settled.after(workspaceID, run.ID, run.Version)
		if !settled {
			var err error
			if next, err = s.Run(ctx, workspaceID, run.ID); err != nil {
				return run, err
			}
		}
		if run = next; run.State != StatePending && run.State != StateRunning {
			break
		}
		select {
		case <-ctx.Done():
			return run, nil
		case <-deadline.C:
			return run, nil
		case _, ok := <-sub.Events():
			if !ok {
				sub = nil // dropped for falling behind: subscribe again and re-read
			}
		}
	}
	return run, nil
}
