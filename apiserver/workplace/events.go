package workplace

import (
	"context"
	"database/sql"
	"encoding"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"platform.dev/platform/apiserver/notify"
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

// The outbox's events that the hub does not send (it sends the spec's twelve names only): they
// tell the kube API's watches of work.platform.dev the changes the twelve do not name, so that
// FlowRuns, WorkItems, TriggerOccurrences and read Notifications are watched from the same outbox
// positions as Tasks.
const (
	// EventFlowRunChanged: a run changed state, step or version, was created (created) or
	// deleted (deleted); it names the run, its WorkItem and its Task.
	EventFlowRunChanged = "FlowRunChanged"
	// EventTriggerOccurrenceRecorded: a Trigger's occurrence was recorded.
	EventTriggerOccurrenceRecorded = "TriggerOccurrenceRecorded"
	// EventNotificationRead: one of a Principal's notifications was marked read by a "mark all
	// read" (whose NotificationUpdated names none).
	EventNotificationRead = "NotificationRead"
)

// emitRun tells that run changed (EventFlowRunChanged).
func (s *Store) emitRun(ctx context.Context, tx *sql.Tx, run work.FlowRun, created, deleted bool) error {
	payload := map[string]any{"flowRunId": run.ID, "workItemId": run.WorkItemID, "taskId": run.WorkTaskID, "state": run.State,
		"version": run.Version}
	if created {
		payload["created"] = true
	}
	if deleted {
		payload["deleted"] = true
	}
	return s.emit(ctx, tx, run.WorkspaceID, "", EventFlowRunChanged, payload)
}

// ObserveDeleted tells, in the transaction that deletes it, that a run is gone (work.Store's
// Delete calls it).
func (s *Store) ObserveDeleted(ctx context.Context, tx *sql.Tx, run work.FlowRun) error {
	return s.emitRun(ctx, tx, run, false, true)
}

// TriggerOccurrenceRecorded tells, in the transaction that records it, that a Trigger's
// occurrence of the workspace was recorded (triggers.Service's Recorded).
func (s *Store) TriggerOccurrenceRecorded(ctx context.Context, tx *sql.Tx, workspaceID, occurrenceID string) error {
	return s.emit(ctx, tx, workspaceID, "", EventTriggerOccurrenceRecorded, map[string]any{"triggerOccurrenceId": occurrenceID})
}

// Event is one change of the Workplace, as its outbox holds it: numbered per workspace, a
// transaction's events in the order emitted and after those of every transaction that committed
// before it wrote them. Its payload holds ids and versions only, for the client to know what to
// read again over REST; never a resume token or its hash, a prompt or a secret.
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

// Topic is the notification topic of a workspace's outbox: announced once new events are
// numbered there (on PostgreSQL to every replica), so that the real-time hub reads them instead of
// polling.
func Topic(workspaceID string) string { return "workplace/" + workspaceID }

// pendingTopic is announced on PostgreSQL by every transaction that leaves outbox events to
// number (NumberOutbox).
const pendingTopic = "workplace-outbox"

// writtenTopic is the topic a transaction that writes events of the workspace announces: on
// SQLite the events are numbered as they are written; on PostgreSQL they wait for NumberOutbox.
func (s *Store) writtenTopic(workspaceID string) string {
	if s.db.Dialect() == store.Postgres {
		return pendingTopic
	}
	return Topic(workspaceID)
}

// announcer is the Work store's Announce: the outbox is written in its transactions, which
// announce what they record once committed.
type announcer interface {
	Announce(tx *sql.Tx, topics ...string)
}

// emit appends an event to the outbox in the transaction of the change it describes. In a
// transaction of the Work store the events are written when the transaction's work is done, right
// before its commit: on SQLite the workspace's counter row, which numbers them, is then locked for
// the shortest time; on PostgreSQL, where they are numbered after the commit, the events of a
// transaction that depends on another's changes come after that transaction's.
func (s *Store) emit(ctx context.Context, tx *sql.Tx, workspaceID, principalID, name string, payload map[string]any) error {
	data, err := payloadJSON(payload)
	if err != nil {
		return err
	}
	e := Event{WorkspaceID: workspaceID, Name: name, PrincipalID: principalID, Payload: data, CreatedAt: s.now()}
	if o, ok := s.outboxOf(tx); ok {
		o.add(e)
		return nil
	}
	return s.writeOutbox(ctx, tx, []Event{e}, nil, nil)
}

// payloadJSON is json.Marshal(payload) for the flat payloads events carry (ids, states,
// versions, flags), written without reflection: encoding the map by reflection was most of the
// Workplace projection's garbage, several events per WorkItem. A key or a value it does not write
// byte for byte as json.Marshal would is left to json.Marshal.
func payloadJSON(payload map[string]any) ([]byte, error) {
	var array [12]string
	keys := array[:0]
	size := 2
	for k, v := range payload {
		if !plainJSONString(k) {
			return json.Marshal(payload)
		}
		keys = append(keys, k)
		size += len(k) + 4
		if s, ok := v.(string); ok {
			size += len(s) + 2
		} else {
			size += 20
		}
	}
	slices.Sort(keys)
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, '"', ':')
		switch v := payload[k].(type) {
		case nil:
			out = append(out, "null"...)
		case bool:
			out = strconv.AppendBool(out, v)
		case int:
			out = strconv.AppendInt(out, int64(v), 10)
		case int64:
			out = strconv.AppendInt(out, v, 10)
		case int32:
			out = strconv.AppendInt(out, int64(v), 10)
		case string:
			if !plainJSONString(v) {
				return json.Marshal(payload)
			}
			out = append(out, '"')
			out = append(out, v...)
			out = append(out, '"')
		default:
			// A named string type (a state) is a string to json.Marshal unless it marshals itself.
			_, marshaler := v.(json.Marshaler)
			_, textMarshaler := v.(encoding.TextMarshaler)
			rv := reflect.ValueOf(v)
			if marshaler || textMarshaler || rv.Kind() != reflect.String || !plainJSONString(rv.String()) {
				return json.Marshal(payload)
			}
			out = append(out, '"')
			out = append(out, rv.String()...)
			out = append(out, '"')
		}
	}
	return append(out, '}'), nil
}

// plainJSONString is whether json.Marshal writes s as itself between quotes: printable ASCII
// without a quote, a backslash or what it escapes for HTML.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
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
		CreatedAt: s.now()}}, map[int]int64{0: delta}, nil)
}

// countUnread is the statement that adds to a Principal's unread count and returns the count
// (SQLite).
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
	// announced is the workspace whose topic add announced last.
	announced string
}

// add buffers e and announces its topic now: the transaction stages its announcements before it
// flushes, so that the flush is the last thing before the commit.
func (o *outboxWrite) add(e Event) {
	if o.events == nil {
		o.events = make([]Event, 0, 8) // a WorkItem's run emits about as many
	}
	o.events = append(o.events, e)
	// A topic announced once is announced at the commit: a transaction's events are mostly of
	// one workspace.
	if e.WorkspaceID == o.announced && len(o.events) > 1 {
		return
	}
	if a, ok := o.s.Work.(announcer); ok {
		a.Announce(o.tx, o.s.writtenTopic(e.WorkspaceID))
		o.announced = e.WorkspaceID
	}
}

type recipient struct{ workspaceID, principalID string }

type unreadChange struct {
	event int
	delta int64
}

func (o *outboxWrite) Flush(ctx context.Context, tx *sql.Tx) error {
	return o.s.writeOutbox(ctx, tx, o.events, o.deltas(), nil)
}

// FlushNotifying writes the events as Flush does, and sends the transaction's notification to
// the other replicas with the first of them (PostgreSQL): one statement for both.
func (o *outboxWrite) FlushNotifying(ctx context.Context, tx *sql.Tx, channel, payload string) error {
	return o.s.writeOutbox(ctx, tx, o.events, o.deltas(), &notice{channel, payload})
}

func (o *outboxWrite) deltas() map[int]int64 {
	deltas := make(map[int]int64, len(o.unread))
	for _, c := range o.unread {
		deltas[c.event] = c.delta
	}
	return deltas
}

// notice is a PostgreSQL notification that an outbox write sends with its first statement.
type notice struct{ channel, payload string }

// outboxBatch bounds the rows of one INSERT of outbox events, and so the statements each
// connection caches for it.
const outboxBatch = 16

// writeOutbox appends events in the order given. deltas holds, by the index of the
// UnreadNotificationCountChanged event that tells it, the change of its Principal's unread count;
// the event says the count once the change is applied.
//
// On SQLite, which runs one writer at a time, the events are numbered and the counts applied
// here. On PostgreSQL, where transactions run in parallel, doing so would hold the workspace's
// counter row and the Principal's count row until the commit and so line up the transactions of
// the workspace: the events are appended unnumbered with the count changes they tell, and
// NumberOutbox numbers them and applies the changes once committed.
//
// With n set (PostgreSQL), the first statement also sends that notification.
func (s *Store) writeOutbox(ctx context.Context, tx *sql.Tx, events []Event, deltas map[int]int64, n *notice) error {
	defer prometheus.NewTimer(outboxWriteDuration).ObserveDuration()
	if s.db.Dialect() == store.Postgres {
		if n != nil && len(events) == 0 {
			_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, n.channel, n.payload)
			return err
		}
		for start := 0; start < len(events); start += outboxBatch {
			if err := s.appendPending(ctx, tx, events, start, min(start+outboxBatch, len(events)), deltas, n); err != nil {
				return err
			}
			n = nil
		}
		return nil
	}
	for _, i := range slices.Sorted(maps.Keys(deltas)) {
		var unread int64
		e := events[i]
		if err := tx.QueryRowContext(ctx, s.q(countUnread), e.WorkspaceID, e.PrincipalID, deltas[i], deltas[i]).Scan(&unread); err != nil {
			return err
		}
		events[i].Payload = unreadPayload(unread)
	}
	byWorkspace := map[string][]int{}
	for i, e := range events {
		byWorkspace[e.WorkspaceID] = append(byWorkspace[e.WorkspaceID], i)
	}
	for _, ws := range slices.Sorted(maps.Keys(byWorkspace)) {
		for batch := range slices.Chunk(byWorkspace[ws], outboxBatch) {
			if err := s.appendOutbox(ctx, tx, ws, events, batch); err != nil {
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
	// The workspace, and the instant the events mostly share, are boxed into arguments once.
	workspace, createdAt, at := any(workspaceID), any(nil), time.Time{}
	for k, i := range batch {
		e := events[i]
		if createdAt == nil || !e.CreatedAt.Equal(at) {
			createdAt, at = ms(e.CreatedAt), e.CreatedAt
		}
		args = append(args, workspace, last-n+int64(k+1), e.Name, e.PrincipalID, string(e.Payload), createdAt)
	}
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO workplace_events (workspace_id, seq, name, principal_id, payload, created_at) VALUES `+
		valueRows(`(?, ?, ?, ?, ?, ?)`, len(batch))), args...)
	return err
}

// appendPending appends events[from:to] unnumbered, in their order, with the unread count
// changes they tell (NumberEvents applies them); with n set it sends n too, in the same statement.
func (s *Store) appendPending(ctx context.Context, tx *sql.Tx, events []Event, from, to int, deltas map[int]int64, n *notice) error {
	args := make([]any, 0, 2+7*(to-from))
	// The notification rides along as a CTE the INSERT's rows join (an unreferenced CTE is not
	// evaluated); pg_notify is volatile, so the CTE runs once, not per row.
	with, joined := ``, ``
	if n != nil {
		with, joined = `WITH notified AS MATERIALIZED (SELECT pg_notify(CAST(? AS TEXT), CAST(? AS TEXT))) `, `, notified`
		args = append(args, n.channel, n.payload)
	}
	for i := from; i < to; i++ {
		e := events[i]
		var delta any
		if d, counted := deltas[i]; counted {
			delta = d
		}
		args = append(args, i-from+1, e.WorkspaceID, e.Name, e.PrincipalID, string(e.Payload), delta, ms(e.CreatedAt))
	}
	_, err := tx.ExecContext(store.Pipelined(ctx), s.q(with+`INSERT INTO workplace_events_pending (workspace_id, name, principal_id, payload, unread_delta, created_at)
		SELECT e.workspace_id, e.name, e.principal_id, e.payload, e.unread_delta, e.created_at FROM (VALUES `+
		valueRows(`(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT))`, to-from)+`)
		AS e (k, workspace_id, name, principal_id, payload, unread_delta, created_at)`+joined+`
		ORDER BY e.k`), args...)
	return err
}

// numberingLockKey is the PostgreSQL advisory lock that lets one numbering statement at a time,
// in every replica, number the outbox, so that two never wait for each other's rows nor deadlock
// over the counters (arbitrary, fixed for the instance's lifetime).
const numberingLockKey int64 = 0x706c61746633

// numberBatch bounds the events one numbering statement moves (a variable for tests).
var numberBatch = 1000

// numberPending moves the oldest unnumbered events to the outbox, numbered after their
// workspace's last in the order they were appended, applies the unread count changes they tell
// (each such event says the count as it was once its change was applied), and returns how many
// events each workspace got: one statement, its own transaction.
//
// It tells the other replicas of the workspaces it numbered (their Topic) in the same statement,
// when one notification carries them all (the last column says it did): delivered when it
// commits, as an Announce after it would be.
//
// It takes numberingLockKey before it deletes a row (the rows it picks join the lock). Its
// snapshot may be older than the lock: a row that the previous holder moved meanwhile is skipped
// by the DELETE (it is gone by then), a row committed meanwhile waits for the next round, and each
// counter and count is updated from its latest version (ON CONFLICT DO UPDATE reads past the
// snapshot). Picking the oldest rows keeps the order even without the lock: a transaction whose
// events were appended after another's commit has the higher ids, so no statement picks its rows
// without the other's (unless these were moved already).
const numberPending = `WITH locked AS (SELECT pg_advisory_xact_lock(CAST(? AS BIGINT)) AS held),
	moved AS (
		DELETE FROM workplace_events_pending WHERE id IN (
			SELECT p.id FROM workplace_events_pending p, locked ORDER BY p.id LIMIT ?)
		RETURNING id, workspace_id, name, principal_id, payload, unread_delta, created_at),
	counts AS (SELECT workspace_id, COUNT(*) AS n FROM moved GROUP BY workspace_id),
	counters AS (INSERT INTO workplace_event_seqs (workspace_id, seq) SELECT workspace_id, n FROM counts
		ON CONFLICT (workspace_id) DO UPDATE SET seq = workplace_event_seqs.seq + EXCLUDED.seq
		RETURNING workspace_id, seq),
	deltas AS (SELECT workspace_id, principal_id, SUM(unread_delta) AS d FROM moved
		WHERE unread_delta IS NOT NULL GROUP BY workspace_id, principal_id),
	unread AS (INSERT INTO notification_counts (workspace_id, principal_id, unread)
		SELECT workspace_id, principal_id, d FROM deltas
		ON CONFLICT (workspace_id, principal_id) DO UPDATE SET unread = notification_counts.unread + EXCLUDED.unread
		RETURNING workspace_id, principal_id, unread),
	appended AS (INSERT INTO workplace_events (workspace_id, seq, name, principal_id, payload, created_at)
		SELECT m.workspace_id, c.seq - k.n + ROW_NUMBER() OVER (PARTITION BY m.workspace_id ORDER BY m.id),
			m.name, m.principal_id,
			CASE WHEN m.unread_delta IS NULL THEN m.payload
			ELSE '{"unreadCount":' || (u.unread - d.d + SUM(m.unread_delta) OVER (PARTITION BY m.workspace_id, m.principal_id ORDER BY m.id)) || '}' END,
			m.created_at
		FROM moved m JOIN counters c ON c.workspace_id = m.workspace_id JOIN counts k ON k.workspace_id = m.workspace_id
		LEFT JOIN deltas d ON d.workspace_id = m.workspace_id AND d.principal_id = m.principal_id
		LEFT JOIN unread u ON u.workspace_id = m.workspace_id AND u.principal_id = m.principal_id),
	notified AS (SELECT pg_notify(CAST(? AS TEXT), CAST(? AS TEXT) || string_agg(' ' || CAST(? AS TEXT) || workspace_id, '')) FROM counts
		HAVING COUNT(*) > 0 AND length(CAST(? AS TEXT)) + SUM(1 + length(CAST(? AS TEXT)) + length(workspace_id)) <= ?)
	SELECT workspace_id, n, (SELECT COUNT(*) FROM notified) FROM counts`

// NumberEvents numbers the events that committed transactions left unnumbered (PostgreSQL; on
// SQLite they are numbered as they are written) and announces each workspace's Topic.
//
// Events are numbered in the order they were appended, among those committed when each numbering
// statement starts. A transaction appends its events last, right before its commit: the events of
// a transaction that read or waited for another's changes were appended after that one committed,
// so they are numbered after its events.
func (s *Store) NumberEvents(ctx context.Context) error {
	if s.db.Dialect() != store.Postgres {
		return nil
	}
	changes, _ := s.Work.(notifier)
	for {
		moved, topics, notified, err := s.numberRound(ctx)
		if err != nil {
			return err
		}
		if changes != nil {
			// After the commit: a replica that missed it learns of the workspace's next events
			// (from the numbering statement itself when it could tell them).
			if notified {
				changes.Changes().Publish(topics...)
			} else if err := changes.Changes().Announce(ctx, s.db.DB(), s.db.Dialect(), topics...); err != nil {
				return err
			}
		}
		if moved < int64(numberBatch) {
			return nil
		}
	}
}

// numberRound runs numberPending once: how many events it moved, the topics of their workspaces,
// and whether the statement told the other replicas of them.
func (s *Store) numberRound(ctx context.Context) (int64, []string, bool, error) {
	channel, origin, limit := "", "", 0 // nothing fits: no notification without the Work store's hub
	if n, ok := s.Work.(notifier); ok {
		channel, origin, limit = n.Changes().Sender()
	}
	prefix := Topic("")
	rows, err := s.db.DB().QueryContext(ctx, s.q(numberPending), numberingLockKey, numberBatch, channel, origin, prefix, origin, prefix, limit)
	if err != nil {
		return 0, nil, false, err
	}
	defer rows.Close()
	var (
		moved    int64
		topics   []string
		notified bool
	)
	for rows.Next() {
		var (
			workspaceID string
			n, sent     int64
		)
		if err := rows.Scan(&workspaceID, &n, &sent); err != nil {
			return 0, nil, false, err
		}
		moved += n
		topics = append(topics, Topic(workspaceID))
		notified = sent > 0
	}
	return moved, topics, notified, rows.Err()
}

// numberSweep is how often NumberOutbox numbers without being woken: after a lost wake-up, a
// failed attempt, or a process that stopped between a commit and the numbering.
const numberSweep = 2 * time.Second

// notifier is the Work store's Changes: the hub its transactions announce to.
type notifier interface {
	Changes() *notify.Hub
}

// NumberOutbox numbers the outbox (NumberEvents) whenever a committed transaction left events to
// number, and every numberSweep, until ctx ends; on SQLite, or without the Work store's hub, it
// returns at once. Every replica runs it; they take turns.
func (s *Store) NumberOutbox(ctx context.Context, log logr.Logger) {
	n, ok := s.Work.(notifier)
	if s.db.Dialect() != store.Postgres || !ok {
		return
	}
	changes := n.Changes()
	sweep := time.NewTicker(numberSweep)
	defer sweep.Stop()
	var sub *notify.Subscription
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	for {
		if sub == nil {
			// Subscribed before numbering, so that what commits meanwhile wakes the next round;
			// when the hub is full, the sweep numbers meanwhile.
			sub, _ = changes.Subscribe(pendingTopic)
		}
		if err := s.NumberEvents(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "numbering the Workplace outbox failed; trying again")
		}
		var wake <-chan notify.Event
		if sub != nil {
			wake = sub.Events()
		}
		select {
		case <-ctx.Done():
			return
		case <-sweep.C:
		case _, open := <-wake:
			if !open {
				sub = nil // dropped for falling behind: subscribe again, then number
				continue
			}
			// What woke the subscription while the last round ran, committed before the next
			// one starts: one round numbers it all (a subscription closed meanwhile is seen at
			// the next wait).
			for len(wake) > 0 {
				<-wake
			}
		}
	}
}

// updateInteraction sets a conversation's columns (set, with args), bumps nothing itself, and
// tells the change with the version and state the UPDATE returns: one statement, no read after.
// A conversation deleted meanwhile is no change.
func (s *Store) updateInteraction(ctx context.Context, tx *sql.Tx, interactionID, set string, args ...any) error {
	var (
		workspace, state string
		version          int64
	)
	err := tx.QueryRowContext(ctx, s.q(`UPDATE interactions SET `+set+` WHERE id = ? RETURNING workspace_id, state, version`),
		append(args, interactionID)...).Scan(&workspace, &state, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.emit(ctx, tx, workspace, "", EventInteractionUpdated, map[string]any{"interactionId": interactionID, "state": state, "version": version})
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
// that reconnects reads the state over REST, not the events it missed. On PostgreSQL that
// includes events never numbered (no process numbered the outbox since).
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.DB().ExecContext(ctx, s.q(`DELETE FROM workplace_events WHERE created_at < ?`), ms(before))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil || s.db.Dialect() != store.Postgres {
		return n, err
	}
	res, err = s.db.DB().ExecContext(ctx, s.q(`DELETE FROM workplace_events_pending WHERE created_at < ?`), ms(before))
	if err != nil {
		return n, err
	}
	pending, err := res.RowsAffected()
	return n + pending, err
}

// FollowOutbox calls drain once, then after each announcement of the workspace's outbox topic,
// until stop is closed or ctx ends; sub is the subscription already open (nil to open one) and
// is closed on return. A failed drain is tried again after a growing pause, and a subscription
// dropped for falling behind is opened again: readers read events by number, so none is lost.
// The hub's groups and the kube API's Work watches follow the outbox through it.
func FollowOutbox(ctx context.Context, stop <-chan struct{}, changes *notify.Hub, workspaceID string, sub *notify.Subscription,
	drain func() error, log logr.Logger) {
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	pause := 100 * time.Millisecond
	for {
		if err := drain(); err != nil {
			log.Error(err, "reading the Workplace outbox failed; reading again", "workspace", workspaceID, "in", pause.String())
			retry.Reset(pause)
			pause = min(2*pause, 5*time.Second)
		} else {
			pause = 100 * time.Millisecond
		}
		var events <-chan notify.Event
		if sub != nil {
			events = sub.Events()
		}
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-retry.C:
		case _, ok := <-events:
			if !ok {
				sub = nil
			}
		}
		if sub == nil {
			var err error
			if sub, err = changes.Subscribe(Topic(workspaceID)); err != nil {
				sub = nil
				retry.Reset(time.Second)
			}
		}
	}
}
