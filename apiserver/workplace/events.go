package workplace

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/work"
)

// The names of the Workplace's real-time events, exactly as the hub sends them.
const (
	EventInteractionUpdated             = "InteractionUpdated"
	EventMessageAdded                   = "MessageAdded"
	EventPendingActionCreated           = "PendingActionCreated"
	EventPendingActionResolved          = "PendingActionResolved"
	EventTaskCreated                    = "TaskCreated"
	EventTaskStatusChanged              = "TaskStatusChanged"
	EventTaskActivityAdded              = "TaskActivityAdded"
	EventTaskResultAdded                = "TaskResultAdded"
	EventTaskArtifactAdded              = "TaskArtifactAdded"
	EventNotificationCreated            = "NotificationCreated"
	EventNotificationUpdated            = "NotificationUpdated"
	EventUnreadNotificationCountChanged = "UnreadNotificationCountChanged"
)

// Event is one change of the Workplace, as its outbox holds it: numbered per workspace in commit
// order. Its payload holds ids and versions only, for the client to know what to read again over
// REST; never a resume token or its hash, a prompt or a secret.
type Event struct {
	WorkspaceID string
	Seq         int64
	Name        string
	// PrincipalID is set on the events of one Principal's notifications: only that Principal's
	// connections receive them.
	PrincipalID string
	Payload     json.RawMessage
	CreatedAt   time.Time
}

// Topic is the notification topic of a workspace's outbox: announced by every transaction that
// appends to it, once that transaction committed (on PostgreSQL to every replica), so that the
// real-time hub reads the new events instead of polling.
func Topic(workspaceID string) string { return "workplace/" + workspaceID }

// announcer is the Work store's Announce: the outbox is written in its transactions, which
// announce what they record once committed.
type announcer interface {
	Announce(tx *sql.Tx, topics ...string)
}

// emit appends an event to the outbox in the transaction of the change it describes. The
// workspace's counter row is locked until commit, so that the numbers of one workspace's events
// follow the order in which their transactions commit; in a transaction of the Work store the
// events are written when the transaction's work is done, right before its commit, so that the
// lock, which every transaction of the workspace needs, is held for the shortest time.
func (s *Store) emit(ctx context.Context, tx *sql.Tx, workspaceID, principalID, name string, payload map[string]any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	e := Event{WorkspaceID: workspaceID, Name: name, PrincipalID: principalID, Payload: data, CreatedAt: s.now()}
	if o, ok := s.outboxOf(tx); ok {
		o.add(e)
		return nil
	}
	return s.writeOutbox(ctx, tx, []Event{e}, nil)
}

// unreadChanged adds delta to the count of a Principal's unread notifications and tells it
// (UnreadNotificationCountChanged); in a transaction of the Work store both happen at its end, once
// per Principal, where its outbox events are written.
func (s *Store) unreadChanged(ctx context.Context, tx *sql.Tx, workspaceID, principalID string, delta int64) error {
	if o, ok := s.outboxOf(tx); ok {
		k := recipient{workspaceID, principalID}
		if _, told := o.unread[k]; !told {
			if o.unread == nil {
				o.unread = map[recipient]unreadChange{}
			}
			o.unread[k] = unreadChange{event: len(o.events)}
			o.add(Event{WorkspaceID: workspaceID, Name: EventUnreadNotificationCountChanged, PrincipalID: principalID, CreatedAt: s.now()})
		}
		c := o.unread[k]
		c.delta += delta
		o.unread[k] = c
		return nil
	}
	return s.writeOutbox(ctx, tx, []Event{{WorkspaceID: workspaceID, Name: EventUnreadNotificationCountChanged, PrincipalID: principalID,
		CreatedAt: s.now()}}, map[int]int64{0: delta})
}

// countUnread is the statement that adds to a Principal's unread count and returns the count.
const countUnread = `INSERT INTO notification_counts (workspace_id, principal_id, unread) VALUES (?, ?, ?)
	ON CONFLICT (workspace_id, principal_id) DO UPDATE SET unread = notification_counts.unread + ? RETURNING unread`

// unreadPayload is the payload of UnreadNotificationCountChanged.
func unreadPayload(unread int64) json.RawMessage {
	return json.RawMessage(`{"unreadCount":` + strconv.FormatInt(unread, 10) + `}`)
}

// outboxOf is the deferred outbox write of tx, when tx is a transaction of the Work store.
func (s *Store) outboxOf(tx *sql.Tx) (*outboxWrite, bool) {
	d, ok := s.Work.(deferrer)
	if !ok {
		return nil, false
	}
	f, ok := d.Deferred(tx, outboxKey{}, func() work.Flusher { return &outboxWrite{s: s, tx: tx} })
	if !ok {
		return nil, false
	}
	return f.(*outboxWrite), true
}

// deferrer is the Work store's Deferred.
type deferrer interface {
	Deferred(tx *sql.Tx, key any, create func() work.Flusher) (work.Flusher, bool)
}

type outboxKey struct{}

// outboxWrite is what one transaction emitted, written at its end: its events, and the changes
// of unread counts whose events hold a place among them.
type outboxWrite struct {
	s      *Store
	tx     *sql.Tx
	events []Event
	unread map[recipient]unreadChange
}

// add buffers e and announces its workspace's topic now: the transaction stages its
// announcements before it flushes, so that the flush is the last thing before the commit.
func (o *outboxWrite) add(e Event) {
	o.events = append(o.events, e)
	if a, ok := o.s.Work.(announcer); ok {
		a.Announce(o.tx, Topic(e.WorkspaceID))
	}
}

type recipient struct{ workspaceID, principalID string }

type unreadChange struct {
	event int
	delta int64
}

func (o *outboxWrite) Flush(ctx context.Context, tx *sql.Tx) error {
	deltas := make(map[int]int64, len(o.unread))
	for _, c := range o.unread {
		deltas[c.event] = c.delta
	}
	return o.s.writeOutbox(ctx, tx, o.events, deltas)
}

// outboxBatch bounds the rows of one INSERT of outbox events, and so the statements each
// connection caches for it.
const outboxBatch = 16

// writeOutbox numbers events after their workspace's last, in the order given, and appends them.
// deltas holds, by the index of the UnreadNotificationCountChanged event that tells it, the change
// of its Principal's unread count, applied here so that the event says the count.
//
// Each workspace's counter row and each count row stay locked until the commit, so the numbers
// follow the commit order; workspaces and counts are taken in one order, so that two
// transactions rarely wait for each other (PostgreSQL breaks the rare deadlock, and the
// transaction runs again). On PostgreSQL, where transactions run in parallel, the counter, the
// counts and the rows are written in one statement: the locks, which every transaction of the
// workspace waits for, are held for that statement and the commit only.
func (s *Store) writeOutbox(ctx context.Context, tx *sql.Tx, events []Event, deltas map[int]int64) error {
	defer prometheus.NewTimer(outboxWriteDuration).ObserveDuration()
	postgres := s.db.Dialect() == store.Postgres
	if !postgres {
		for _, i := range slices.SortedFunc(maps.Keys(deltas), func(a, b int) int {
			return cmp.Or(cmp.Compare(events[a].WorkspaceID, events[b].WorkspaceID), cmp.Compare(events[a].PrincipalID, events[b].PrincipalID))
		}) {
			var unread int64
			e := events[i]
			if err := tx.QueryRowContext(ctx, s.q(countUnread), e.WorkspaceID, e.PrincipalID, deltas[i], deltas[i]).Scan(&unread); err != nil {
				return err
			}
			events[i].Payload = unreadPayload(unread)
		}
	}
	byWorkspace := map[string][]int{}
	for i, e := range events {
		byWorkspace[e.WorkspaceID] = append(byWorkspace[e.WorkspaceID], i)
	}
	for _, ws := range slices.Sorted(maps.Keys(byWorkspace)) {
		for batch := range slices.Chunk(byWorkspace[ws], outboxBatch) {
			var err error
			if postgres {
				err = s.appendOutboxCounting(ctx, tx, ws, events, batch, deltas)
			} else {
				err = s.appendOutbox(ctx, tx, ws, events, batch)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

const bumpOutboxCounter = `INSERT INTO workplace_event_seqs (workspace_id, seq) VALUES (?, ?)
	ON CONFLICT (workspace_id) DO UPDATE SET seq = workplace_event_seqs.seq + ? RETURNING seq`

// valueRows is n rows of a VALUES list.
func valueRows(row string, n int) string { return strings.Repeat(row+`, `, n-1) + row }

// appendOutbox numbers the events at batch, all of the workspace, after its last and appends them.
func (s *Store) appendOutbox(ctx context.Context, tx *sql.Tx, workspaceID string, events []Event, batch []int) error {
	n := int64(len(batch))
	var last int64
	if err := tx.QueryRowContext(ctx, s.q(bumpOutboxCounter), workspaceID, n, n).Scan(&last); err != nil {
		return err
	}
	args := make([]any, 0, 6*len(batch))
	for k, i := range batch {
		e := events[i]
		args = append(args, workspaceID, last-n+int64(k+1), e.Name, e.PrincipalID, string(e.Payload), ms(e.CreatedAt))
	}
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO workplace_events (workspace_id, seq, name, principal_id, payload, created_at) VALUES `+
		valueRows(`(?, ?, ?, ?, ?, ?)`, len(batch))), args...)
	return err
}

// appendOutboxCounting is appendOutbox in one statement, which also applies the unread count
// changes of the batch's events and writes the counts into their payloads (PostgreSQL: a
// statement's data-modifying WITH clauses).
func (s *Store) appendOutboxCounting(ctx context.Context, tx *sql.Tx, workspaceID string, events []Event, batch []int, deltas map[int]int64) error {
	n := int64(len(batch))
	var (
		with    = []string{`counter AS (` + bumpOutboxCounter + `)`}
		from    = []string{`counter`}
		payload = `e.payload`
		args    = []any{workspaceID, n, n}
	)
	for k, i := range batch {
		delta, counted := deltas[i]
		if !counted {
			continue
		}
		name := fmt.Sprintf("count%d", k+1)
		with = append(with, name+` AS (`+countUnread+`)`)
		from = append(from, name)
		args = append(args, workspaceID, events[i].PrincipalID, delta, delta)
		payload = fmt.Sprintf(`CASE WHEN e.k = %d THEN '{"unreadCount":' || %s.unread || '}' ELSE %s END`, k+1, name, payload)
	}
	args = append(args, workspaceID, n)
	for k, i := range batch {
		e := events[i]
		args = append(args, k+1, e.Name, e.PrincipalID, string(e.Payload), ms(e.CreatedAt))
	}
	_, err := tx.ExecContext(ctx, s.q(`WITH `+strings.Join(with, `, `)+`
		INSERT INTO workplace_events (workspace_id, seq, name, principal_id, payload, created_at)
		SELECT ?, counter.seq - CAST(? AS BIGINT) + e.k, e.name, e.principal_id, `+payload+`, e.created_at
		FROM `+strings.Join(from, `, `)+`, (VALUES `+
		valueRows(`(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT))`, len(batch))+`)
		AS e (k, name, principal_id, payload, created_at)`), args...)
	return err
}

// emitInteraction tells that a conversation changed, with its version and state now.
func (s *Store) emitInteraction(ctx context.Context, tx *sql.Tx, interactionID string) error {
	var (
		workspace, state string
		version          int64
	)
	err := tx.QueryRowContext(ctx, s.q(`SELECT workspace_id, state, version FROM interactions WHERE id = ?`), interactionID).Scan(&workspace, &state, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.emit(ctx, tx, workspace, "", EventInteractionUpdated, map[string]any{"interactionId": interactionID, "state": state, "version": version})
}

// Events lists a workspace's events after seq, oldest first, at most take: what the hub
// dispatches after their transactions committed.
func (s *Store) Events(ctx context.Context, workspaceID string, afterSeq int64, take int) ([]Event, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT workspace_id, seq, name, principal_id, payload, created_at FROM workplace_events
		WHERE workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?`), workspaceID, afterSeq, take)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var (
			e       Event
			payload string
			at      int64
		)
		if err := rows.Scan(&e.WorkspaceID, &e.Seq, &e.Name, &e.PrincipalID, &payload, &at); err != nil {
			return nil, err
		}
		e.Payload, e.CreatedAt = json.RawMessage(payload), fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// LastEventSeq is the number of a workspace's latest event, 0 before its first.
func (s *Store) LastEventSeq(ctx context.Context, workspaceID string) (int64, error) {
	var seq int64
	err := s.db.DB().QueryRowContext(ctx, s.q(`SELECT seq FROM workplace_event_seqs WHERE workspace_id = ?`), workspaceID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// PruneEvents deletes the events older than before: they were dispatched long ago, and a client
// that reconnects reads the state over REST, not the events it missed.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.DB().ExecContext(ctx, s.q(`DELETE FROM workplace_events WHERE created_at < ?`), ms(before))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
