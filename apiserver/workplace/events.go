package workplace

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

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
		o.events = append(o.events, e)
		return nil
	}
	return s.writeOutbox(ctx, tx, []Event{e})
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
			o.events = append(o.events, Event{WorkspaceID: workspaceID, Name: EventUnreadNotificationCountChanged, PrincipalID: principalID,
				CreatedAt: s.now()})
		}
		c := o.unread[k]
		c.delta += delta
		o.unread[k] = c
		return nil
	}
	e, err := s.countUnread(ctx, tx, workspaceID, principalID, delta)
	if err != nil {
		return err
	}
	e.CreatedAt = s.now()
	return s.writeOutbox(ctx, tx, []Event{e})
}

// countUnread applies delta to a Principal's unread count and returns the event that tells it.
func (s *Store) countUnread(ctx context.Context, tx *sql.Tx, workspaceID, principalID string, delta int64) (Event, error) {
	var unread int64
	if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO notification_counts (workspace_id, principal_id, unread) VALUES (?, ?, ?)
		ON CONFLICT (workspace_id, principal_id) DO UPDATE SET unread = notification_counts.unread + ? RETURNING unread`),
		workspaceID, principalID, delta, delta).Scan(&unread); err != nil {
		return Event{}, err
	}
	data, err := json.Marshal(map[string]any{"unreadCount": unread})
	return Event{WorkspaceID: workspaceID, Name: EventUnreadNotificationCountChanged, PrincipalID: principalID, Payload: data}, err
}

// outboxOf is the deferred outbox write of tx, when tx is a transaction of the Work store.
func (s *Store) outboxOf(tx *sql.Tx) (*outboxWrite, bool) {
	d, ok := s.Work.(deferrer)
	if !ok {
		return nil, false
	}
	f, ok := d.Deferred(tx, outboxKey{}, func() work.Flusher { return &outboxWrite{s: s} })
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
	events []Event
	unread map[recipient]unreadChange
}

type recipient struct{ workspaceID, principalID string }

type unreadChange struct {
	event int
	delta int64
}

func (o *outboxWrite) Flush(ctx context.Context, tx *sql.Tx) error {
	// In one order, so that two transactions never wait for each other's count rows.
	for _, k := range slices.SortedFunc(maps.Keys(o.unread), func(a, b recipient) int {
		return cmp.Or(cmp.Compare(a.workspaceID, b.workspaceID), cmp.Compare(a.principalID, b.principalID))
	}) {
		c := o.unread[k]
		e, err := o.s.countUnread(ctx, tx, k.workspaceID, k.principalID, c.delta)
		if err != nil {
			return err
		}
		o.events[c.event].Payload = e.Payload
	}
	return o.s.writeOutbox(ctx, tx, o.events)
}

// outboxBatch bounds the rows of one INSERT of outbox events, and so the statements each
// connection caches for it.
const outboxBatch = 16

// writeOutbox numbers events after their workspace's last, in the order given, and appends them.
func (s *Store) writeOutbox(ctx context.Context, tx *sql.Tx, events []Event) error {
	count := map[string]int64{}
	var workspaces []string
	for _, e := range events {
		if count[e.WorkspaceID] == 0 {
			workspaces = append(workspaces, e.WorkspaceID)
		}
		count[e.WorkspaceID]++
	}
	next := map[string]int64{}
	for _, ws := range workspaces {
		var last int64
		if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO workplace_event_seqs (workspace_id, seq) VALUES (?, ?)
			ON CONFLICT (workspace_id) DO UPDATE SET seq = workplace_event_seqs.seq + ? RETURNING seq`), ws, count[ws], count[ws]).Scan(&last); err != nil {
			return err
		}
		next[ws] = last - count[ws] + 1
	}
	// A statement per outboxBatch events: one round trip for a transaction's usual few.
	for batch := range slices.Chunk(events, outboxBatch) {
		query := `INSERT INTO workplace_events (workspace_id, seq, name, principal_id, payload, created_at) VALUES ` +
			strings.Repeat(`(?, ?, ?, ?, ?, ?), `, len(batch)-1) + `(?, ?, ?, ?, ?, ?)`
		args := make([]any, 0, 6*len(batch))
		for _, e := range batch {
			args = append(args, e.WorkspaceID, next[e.WorkspaceID], e.Name, e.PrincipalID, string(e.Payload), ms(e.CreatedAt))
			next[e.WorkspaceID]++
		}
		if _, err := tx.ExecContext(ctx, s.q(query), args...); err != nil {
			return err
		}
	}
	if a, ok := s.Work.(announcer); ok {
		for _, ws := range workspaces {
			a.Announce(tx, Topic(ws))
		}
	}
	return nil
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
