package workplace

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"platform.dev/platform/apiserver/store"
)

// States of an Interaction.
const (
	InteractionActive = "Active"
	InteractionIdle   = "Idle"
	InteractionClosed = "Closed"
)

// Functional roles of messages: labels, never identities.
const (
	RoleUser     = "User"
	RolePlatform = "Platform"
	RoleSystem   = "System"
)

// Kinds of messages.
const (
	// MessageText is what a person wrote: the first request or a follow-up.
	MessageText = "text"
	// MessageAnswer is a person's answer to a pending action (the chosen value, as text).
	MessageAnswer = "answer"
	// MessageReply is the work's functional answer (respond, showResult).
	MessageReply = "reply"
	// MessageQuestion is a pending action the work asks in the conversation.
	MessageQuestion = "question"
	// MessageError is a failure shown in the conversation (showError, a failed run).
	MessageError = "error"
	// MessageCancelled says the work was cancelled.
	MessageCancelled = "cancelled"
	// MessageResult is a durable Result shown in the conversation (results.display Visible).
	MessageResult = "result"
)

// States of a Task. Pending, running, paused and action-required are protected from deletion.
const (
	TaskPending        = "pending"
	TaskRunning        = "running"
	TaskPaused         = "paused"
	TaskActionRequired = "action-required"
	TaskCompleted      = "completed"
	TaskFailed         = "failed"
	TaskCancelled      = "cancelled"
)

// TaskTerminal reports whether a Task in state can be deleted.
func TaskTerminal(state string) bool {
	return state == TaskCompleted || state == TaskFailed || state == TaskCancelled
}

// Kinds and phases of activities.
const (
	ActivityTurn     = "turn"
	ActivityQuestion = "question"
	ActivityRun      = "run"

	PhaseStarted   = "started"
	PhaseCompleted = "completed"
	PhaseWaiting   = "waiting"
	PhaseAnswered  = "answered"
	PhaseFailed    = "failed"
	PhaseCancelled = "cancelled"
	PhasePaused    = "paused"
	PhaseResumed   = "resumed"
	// PhaseExpired, PhaseReminded and PhaseEscalated tell what a question's expiry did;
	// PhaseRefused an approved tool call that was not made.
	PhaseExpired   = "expired"
	PhaseReminded  = "reminded"
	PhaseEscalated = "escalated"
	PhaseRefused   = "refused"
)

// Kinds of notifications.
const (
	NotifyQuestion  = "question"
	NotifyCompleted = "task-completed"
	NotifyFailed    = "task-failed"
)

// Errors; callers test them with errors.Is. The wrapping error's message is for people.
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("conflict")
	ErrStale     = errors.New("stale version")
	ErrProtected = errors.New("protected")
)

// FlowTarget is an exact Flow version of a workspace's resource namespace.
type FlowTarget struct {
	Namespace string `json:"namespace"`
	Flow      string `json:"flow"`
	Version   string `json:"version"`
}

// Interaction is a durable conversation opened from a published Entry.
type Interaction struct {
	ID              string
	TenantID        string
	WorkspaceID     string
	Namespace       string
	PrincipalID     string
	EntryNamespace  string
	EntryName       string
	EntryGeneration int64
	Title           string
	TaskDisplay     string
	Participants    string
	ResultsDisplay  string
	// FollowUpPolicy is what a follow-up does while work is in progress, as the Entry declared
	// it when the conversation opened: Enqueue, Reject or Interrupt.
	FollowUpPolicy string
	Target         FlowTarget
	Continuation   FlowTarget
	// Submitted is the exact JSON the caller submitted.
	Submitted    json.RawMessage
	State        string
	CurrentRunID string
	// LastTaskID is the Task the conversation works on; empty once it is deleted.
	LastTaskID string
	Version    int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Message is one functional message of a conversation.
type Message struct {
	ID            string
	InteractionID string
	Seq           int64
	Role          string
	Kind          string
	Text          string
	Payload       json.RawMessage
	RunID         string
	// Pending marks a follow-up accepted while the previous run was working; its run starts when
	// that run ends.
	Pending   bool
	CreatedAt time.Time
}

// Task is a public, living Task.
type Task struct {
	ID            string
	TenantID      string
	WorkspaceID   string
	PrincipalID   string
	InteractionID string
	Title         string
	State         string
	Visible       bool
	CurrentRunID  string
	Reason        string
	Milestones    int
	Version       int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	EndedAt       time.Time
}

// Activity is one functional progress item of a Task.
type Activity struct {
	TaskID      string
	Seq         int64
	Kind        string
	Phase       string
	Label       string
	Participant string
	RunID       string
	Step        string
	CreatedAt   time.Time
}

// Result is a durable Result of a Task.
type Result struct {
	ID        string
	TaskID    string
	RunID     string
	Seq       int64
	Action    string
	Text      string
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Artifact is the metadata of an artifact; its bytes are in the artifact store.
type Artifact struct {
	ID          string
	TaskID      string
	WorkspaceID string
	ResultID    string
	Name        string
	MediaType   string
	Length      int64
	StorageKey  string
	CreatedAt   time.Time
}

// Notification tells one Principal of a workspace about something that needs attention.
type Notification struct {
	ID            string
	WorkspaceID   string
	PrincipalID   string
	Kind          string
	Attention     bool
	Title         string
	TaskID        string
	InteractionID string
	RunID         string
	// PendingActionID is the question a question notification is about.
	PendingActionID string
	// ResolvedAt is when its question stopped waiting (answered, expired or closed: Resolution).
	ResolvedAt time.Time
	Resolution string
	ReadAt     time.Time
	Version    int64
	CreatedAt  time.Time
}

// Store reads and writes the Workplace plane.
type Store struct {
	db *store.Store
	// Work starts the runs of conversations.
	Work WorkStore
	// Blobs holds artifact bytes.
	Blobs ArtifactStore
	// Clock is the time source; time.Now when nil.
	Clock func() time.Time
	// openedIn holds, by transaction, the conversation Open inserted in it while it submits the
	// conversation's first run: the projection of that run's creation, in the same transaction,
	// takes it instead of reading back the row just written.
	openedIn sync.Map // *sql.Tx -> Interaction
}

// NewStore returns the Workplace store over db, starting runs with w, with its artifacts in
// artifacts.
func NewStore(db *store.Store, w WorkStore, artifacts ArtifactStore) *Store {
	return &Store{db: db, Work: w, Blobs: artifacts}
}

func (s *Store) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

func (s *Store) q(query string) string { return s.db.Rebind(query) }

// newID is time-ordered (UUIDv7): new rows land at the end of the id indexes instead of on a
// random page of them, so a commit writes fewer pages.
func newID() string { return uuid.Must(uuid.NewV7()).String() }

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullJSON(b json.RawMessage) sql.NullString {
	return sql.NullString{String: string(b), Valid: len(b) > 0}
}

type scanner interface{ Scan(...any) error }

const interactionColumns = `id, tenant_id, workspace_id, namespace, principal_id, entry_namespace, entry_name, entry_generation,
	title, task_display, participants, results_display, target_namespace, target_flow, target_version, continuation_namespace,
	continuation_flow, continuation_version, submitted, state, current_run_id, last_task_id, version, created_at, updated_at,
	follow_up_policy`

func scanInteraction(row scanner) (Interaction, error) {
	var (
		i                    Interaction
		submitted            string
		lastTask             sql.NullString
		createdAt, updatedAt int64
	)
	err := row.Scan(&i.ID, &i.TenantID, &i.WorkspaceID, &i.Namespace, &i.PrincipalID, &i.EntryNamespace, &i.EntryName, &i.EntryGeneration,
		&i.Title, &i.TaskDisplay, &i.Participants, &i.ResultsDisplay, &i.Target.Namespace, &i.Target.Flow, &i.Target.Version,
		&i.Continuation.Namespace, &i.Continuation.Flow, &i.Continuation.Version, &submitted, &i.State, &i.CurrentRunID, &lastTask,
		&i.Version, &createdAt, &updatedAt, &i.FollowUpPolicy)
	if errors.Is(err, sql.ErrNoRows) {
		return i, fmt.Errorf("interaction: %w", ErrNotFound)
	}
	i.Submitted, i.LastTaskID = json.RawMessage(submitted), lastTask.String
	i.CreatedAt, i.UpdatedAt = fromMS(createdAt), fromMS(updatedAt)
	return i, err
}

// Interaction reads an Interaction of the workspace; another workspace's is not found.
func (s *Store) Interaction(ctx context.Context, workspaceID, id string) (Interaction, error) {
	return scanInteraction(s.db.DB().QueryRowContext(ctx, s.q(`SELECT `+interactionColumns+` FROM interactions WHERE id = ? AND workspace_id = ?`), id, workspaceID))
}

func (s *Store) interactionTx(ctx context.Context, tx *sql.Tx, id string) (Interaction, error) {
	// Taken once: what reads the conversation after may come after a change of it.
	if i, ok := s.openedIn.LoadAndDelete(tx); ok && i.(Interaction).ID == id {
		return i.(Interaction), nil
	}
	return scanInteraction(tx.QueryRowContext(ctx, s.q(`SELECT `+interactionColumns+` FROM interactions WHERE id = ?`), id))
}

// Interactions lists the workspace's Interactions of a Principal, most recently active first.
func (s *Store) Interactions(ctx context.Context, workspaceID, principalID string, take int) ([]Interaction, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT `+interactionColumns+` FROM interactions
		WHERE workspace_id = ? AND principal_id = ? ORDER BY updated_at DESC, id LIMIT ?`), workspaceID, principalID, take)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Interaction
	for rows.Next() {
		i, err := scanInteraction(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, rows.Err()
}

const messageColumns = `id, interaction_id, seq, role, kind, text, payload, run_id, pending, created_at`

func scanMessage(row scanner) (Message, error) {
	var (
		m         Message
		payload   sql.NullString
		pending   int64
		createdAt int64
	)
	err := row.Scan(&m.ID, &m.InteractionID, &m.Seq, &m.Role, &m.Kind, &m.Text, &payload, &m.RunID, &pending, &createdAt)
	if payload.Valid {
		m.Payload = json.RawMessage(payload.String)
	}
	m.Pending, m.CreatedAt = pending != 0, fromMS(createdAt)
	return m, err
}

// Messages lists an Interaction's messages after seq, oldest first, at most take.
func (s *Store) Messages(ctx context.Context, workspaceID, interactionID string, afterSeq int64, take int) ([]Message, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT `+messageColumns+` FROM interaction_messages
		WHERE interaction_id = ? AND workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?`), interactionID, workspaceID, afterSeq, take)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// recentMessages are the last n messages of an Interaction, oldest first.
func (s *Store) recentMessages(ctx context.Context, tx *sql.Tx, interactionID string, n int) ([]Message, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT `+messageColumns+` FROM interaction_messages
		WHERE interaction_id = ? ORDER BY seq DESC LIMIT ?`), interactionID, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append([]Message{m}, out...)
	}
	return out, rows.Err()
}

// appendMessage numbers a message after the Interaction's last one. Callers change the
// Interaction's row in the same transaction first, which serializes writers of one conversation.
func (s *Store) appendMessage(ctx context.Context, tx *sql.Tx, m *Message) error {
	// Numbered, written and told with the conversation's workspace, state and version (which the
	// events tell) in one statement, not a read before the write.
	return s.writeMessage(ctx, tx, m, nil)
}

// opened is what a conversation inserted in the transaction is: its first message needs nothing
// read (insertMessage).
type opened struct {
	workspace, state string
	version          int64
}

// insertMessage writes m as the first message of its conversation, inserted in this transaction
// in workspace, in state at version.
func (s *Store) insertMessage(ctx context.Context, tx *sql.Tx, m *Message, workspace, state string, version int64) error {
	m.Seq = 1
	return s.writeMessage(ctx, tx, m, &opened{workspace: workspace, state: state, version: version})
}

// writeMessage writes m, numbered after its conversation's last message unless o (a conversation
// inserted just now) says it is the first, and tells it.
func (s *Store) writeMessage(ctx context.Context, tx *sql.Tx, m *Message, o *opened) error {
	if m.ID == "" {
		m.ID = newID()
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = s.now()
	}
	var workspace, state string
	var version int64
	if o != nil {
		if _, err := tx.ExecContext(store.Pipelined(ctx), s.q(`INSERT INTO interaction_messages (id, interaction_id, workspace_id, seq, role, kind, text, payload,
			run_id, pending, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			m.ID, m.InteractionID, o.workspace, m.Seq, m.Role, m.Kind, m.Text, nullJSON(m.Payload), m.RunID, boolInt(m.Pending), ms(m.CreatedAt)); err != nil {
			return err
		}
		workspace, state, version = o.workspace, o.state, o.version
	} else if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO interaction_messages (id, interaction_id, workspace_id, seq, role, kind, text, payload,
		run_id, pending, created_at) SELECT ?, i.id, i.workspace_id,
		(SELECT COALESCE(MAX(seq), 0) + 1 FROM interaction_messages WHERE interaction_id = i.id), ?, ?, ?, ?, ?, ?, ?
		FROM interactions i WHERE i.id = ?
		RETURNING workspace_id, seq, (SELECT state FROM interactions WHERE id = interaction_messages.interaction_id),
		(SELECT version FROM interactions WHERE id = interaction_messages.interaction_id)`),
		m.ID, m.Role, m.Kind, m.Text, nullJSON(m.Payload), m.RunID, boolInt(m.Pending), ms(m.CreatedAt), m.InteractionID).Scan(
		&workspace, &m.Seq, &state, &version); err != nil {
		return err
	}
	if err := s.emit(ctx, tx, workspace, "", EventMessageAdded, map[string]any{"interactionId": m.InteractionID, "messageId": m.ID, "seq": m.Seq}); err != nil {
		return err
	}
	return s.emit(ctx, tx, workspace, "", EventInteractionUpdated, map[string]any{"interactionId": m.InteractionID, "state": state, "version": version})
}

const taskColumns = `id, tenant_id, workspace_id, principal_id, interaction_id, title, state, visible, current_run_id, reason, milestones,
	version, created_at, updated_at, ended_at`

func scanTask(row scanner) (Task, error) {
	var (
		t                             Task
		interaction                   sql.NullString
		visible                       int64
		createdAt, updatedAt, endedAt int64
	)
	err := row.Scan(&t.ID, &t.TenantID, &t.WorkspaceID, &t.PrincipalID, &interaction, &t.Title, &t.State, &visible, &t.CurrentRunID,
		&t.Reason, &t.Milestones, &t.Version, &createdAt, &updatedAt, &endedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("task: %w", ErrNotFound)
	}
	t.InteractionID, t.Visible = interaction.String, visible != 0
	t.CreatedAt, t.UpdatedAt, t.EndedAt = fromMS(createdAt), fromMS(updatedAt), fromMS(endedAt)
	return t, err
}

// Task reads a Task of the workspace; another workspace's is not found.
func (s *Store) Task(ctx context.Context, workspaceID, id string) (Task, error) {
	return scanTask(s.db.DB().QueryRowContext(ctx, s.q(`SELECT `+taskColumns+` FROM work_tasks WHERE id = ? AND workspace_id = ?`), id, workspaceID))
}

func (s *Store) taskTx(ctx context.Context, tx *sql.Tx, id string) (Task, error) {
	return scanTask(tx.QueryRowContext(ctx, s.q(`SELECT `+taskColumns+` FROM work_tasks WHERE id = ?`), id))
}

// TaskFilter narrows a list of Tasks.
type TaskFilter struct {
	// States keeps the Tasks in one of these states; all when empty.
	States []string
	// Before, when set, lists the Tasks updated before it (the next page).
	Before time.Time
	Take   int
}

// Tasks lists the workspace's Tasks, most recently updated first.
func (s *Store) Tasks(ctx context.Context, workspaceID string, f TaskFilter) ([]Task, error) {
	query := `SELECT ` + taskColumns + ` FROM work_tasks WHERE workspace_id = ?`
	args := []any{workspaceID}
	if len(f.States) > 0 {
		query += ` AND state IN (?` + strings.Repeat(", ?", len(f.States)-1) + `)`
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	if !f.Before.IsZero() {
		query += ` AND updated_at < ?`
		args = append(args, ms(f.Before))
	}
	query += ` ORDER BY updated_at DESC, id LIMIT ?`
	args = append(args, f.Take)
	rows, err := s.db.DB().QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Activities lists a Task's activities, oldest first.
func (s *Store) Activities(ctx context.Context, taskID string) ([]Activity, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT task_id, seq, kind, phase, label, participant, run_id, step, created_at
		FROM task_activities WHERE task_id = ? ORDER BY seq`), taskID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Activity
	for rows.Next() {
		var (
			a  Activity
			at int64
		)
		if err := rows.Scan(&a.TaskID, &a.Seq, &a.Kind, &a.Phase, &a.Label, &a.Participant, &a.RunID, &a.Step, &at); err != nil {
			return nil, err
		}
		a.CreatedAt = fromMS(at)
		out = append(out, a)
	}
	return out, rows.Err()
}

// appendActivity numbers a to follow its Task's last activity and tells the Task's workspace.
func (s *Store) appendActivity(ctx context.Context, tx *sql.Tx, workspaceID string, a *Activity) error {
	if a.CreatedAt.IsZero() {
		a.CreatedAt = s.now()
	}
	if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO task_activities (task_id, seq, kind, phase, label, participant, run_id, step, created_at)
		SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ?, ?, ?, ? FROM task_activities WHERE task_id = ? RETURNING seq`),
		a.TaskID, a.Kind, a.Phase, a.Label, a.Participant, a.RunID, a.Step, ms(a.CreatedAt), a.TaskID).Scan(&a.Seq); err != nil {
		return err
	}
	return s.emit(ctx, tx, workspaceID, "", EventTaskActivityAdded, map[string]any{"taskId": a.TaskID, "seq": a.Seq})
}

// appendActivities numbers list, activities of one Task in their order, to follow its last
// activity, in one statement, and tells the Task's workspace of each.
func (s *Store) appendActivities(ctx context.Context, tx *sql.Tx, workspaceID string, list []Activity) error {
	if len(list) == 1 {
		return s.appendActivity(ctx, tx, workspaceID, &list[0])
	}
	taskID := list[0].TaskID
	// As a run's events are numbered: the SELECT is read whole before the INSERT writes.
	args := make([]any, 0, 2+8*len(list))
	args = append(args, taskID, taskID)
	for i, a := range list {
		args = append(args, i+1, a.Kind, a.Phase, a.Label, a.Participant, a.RunID, a.Step, ms(a.CreatedAt))
	}
	rows, err := tx.QueryContext(ctx, s.q(`INSERT INTO task_activities (task_id, seq, kind, phase, label, participant, run_id, step, created_at)
		SELECT ?, (SELECT COALESCE(MAX(seq), 0) FROM task_activities WHERE task_id = ?) + e.column1, e.column2, e.column3, e.column4,
		e.column5, e.column6, e.column7, e.column8 FROM (VALUES `+
		valueRows(`(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT))`, len(list))+
		`) AS e RETURNING seq`), args...)
	if err != nil {
		return err
	}
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return err
		}
		seqs = append(seqs, seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(seqs) != len(list) {
		return fmt.Errorf("task %s: %d activities appended of %d", taskID, len(seqs), len(list))
	}
	// The rows' numbers follow their order in list.
	slices.Sort(seqs)
	for i := range list {
		list[i].Seq = seqs[i]
		if err := s.emit(ctx, tx, workspaceID, "", EventTaskActivityAdded, map[string]any{"taskId": taskID, "seq": seqs[i]}); err != nil {
			return err
		}
	}
	return nil
}

// Results lists a Task's Results, oldest first.
func (s *Store) Results(ctx context.Context, taskID string) ([]Result, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT id, task_id, run_id, seq, action, text, payload, created_at
		FROM task_results WHERE task_id = ? ORDER BY seq`), taskID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Result
	for rows.Next() {
		var (
			r       Result
			payload sql.NullString
			at      int64
		)
		if err := rows.Scan(&r.ID, &r.TaskID, &r.RunID, &r.Seq, &r.Action, &r.Text, &payload, &at); err != nil {
			return nil, err
		}
		if payload.Valid {
			r.Payload = json.RawMessage(payload.String)
		}
		r.CreatedAt = fromMS(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

const artifactColumns = `id, task_id, workspace_id, result_id, name, media_type, length, storage_key, created_at`

func scanArtifact(row scanner) (Artifact, error) {
	var (
		a  Artifact
		at int64
	)
	err := row.Scan(&a.ID, &a.TaskID, &a.WorkspaceID, &a.ResultID, &a.Name, &a.MediaType, &a.Length, &a.StorageKey, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("artifact: %w", ErrNotFound)
	}
	a.CreatedAt = fromMS(at)
	return a, err
}

// Artifacts lists a Task's artifact metadata, oldest first.
func (s *Store) Artifacts(ctx context.Context, taskID string) ([]Artifact, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT `+artifactColumns+` FROM task_artifacts WHERE task_id = ? ORDER BY created_at, id`), taskID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Artifact
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Artifact reads one artifact's metadata of a Task of the workspace.
func (s *Store) Artifact(ctx context.Context, workspaceID, taskID, id string) (Artifact, error) {
	return scanArtifact(s.db.DB().QueryRowContext(ctx, s.q(`SELECT `+artifactColumns+` FROM task_artifacts
		WHERE id = ? AND task_id = ? AND workspace_id = ?`), id, taskID, workspaceID))
}

const notificationColumns = `id, workspace_id, principal_id, kind, attention, title, task_id, interaction_id, run_id, pending_action_id,
	resolved_at, resolution, read_at, version, created_at`

func scanNotification(row scanner) (Notification, error) {
	var (
		n                 Notification
		attention         int64
		task, interaction sql.NullString
		readAt, createdAt int64
		resolvedAt        int64
	)
	err := row.Scan(&n.ID, &n.WorkspaceID, &n.PrincipalID, &n.Kind, &attention, &n.Title, &task, &interaction, &n.RunID, &n.PendingActionID,
		&resolvedAt, &n.Resolution, &readAt, &n.Version, &createdAt)
	if errors.Is(err, sql.ErrNoRows) {
		return n, fmt.Errorf("notification: %w", ErrNotFound)
	}
	n.Attention, n.TaskID, n.InteractionID = attention != 0, task.String, interaction.String
	n.ReadAt, n.CreatedAt, n.ResolvedAt = fromMS(readAt), fromMS(createdAt), fromMS(resolvedAt)
	return n, err
}

// Notifications lists a Principal's notifications in the workspace attention-first: unread ones
// that need attention, then the other unread ones, then the read ones; newest first in each.
func (s *Store) Notifications(ctx context.Context, workspaceID, principalID string, take int) ([]Notification, int, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT `+notificationColumns+` FROM notifications
		WHERE workspace_id = ? AND principal_id = ?
		ORDER BY CASE WHEN read_at = 0 THEN 0 ELSE 1 END, CASE WHEN read_at = 0 THEN attention ELSE 0 END DESC, created_at DESC, id LIMIT ?`),
		workspaceID, principalID, take)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []Notification
	for rows.Next() {
		n, err := scanNotification(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	unread, err := s.UnreadCount(ctx, workspaceID, principalID)
	return out, unread, err
}

// UnreadCount is how many of a Principal's notifications in the workspace are unread: on
// PostgreSQL the stored count plus the changes that committed transactions left for the numbering
// of the outbox (NumberEvents moves them from one to the other in one transaction).
func (s *Store) UnreadCount(ctx context.Context, workspaceID, principalID string) (int, error) {
	query := `SELECT COALESCE((SELECT unread FROM notification_counts WHERE workspace_id = ? AND principal_id = ?), 0)`
	args := []any{workspaceID, principalID}
	if s.db.Dialect() == store.Postgres {
		query += ` + COALESCE((SELECT SUM(unread_delta) FROM workplace_events_pending
			WHERE workspace_id = ? AND principal_id = ? AND unread_delta IS NOT NULL), 0)`
		args = append(args, workspaceID, principalID)
	}
	var n int
	err := s.db.DB().QueryRowContext(ctx, s.q(query), args...).Scan(&n)
	return n, err
}

// MarkRead marks one of a Principal's notifications read; marking it again changes nothing.
func (s *Store) MarkRead(ctx context.Context, workspaceID, principalID, id string) (Notification, error) {
	var n Notification
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE notifications SET read_at = ?, version = version + 1
			WHERE id = ? AND workspace_id = ? AND principal_id = ? AND read_at = 0`), ms(s.now()), id, workspaceID, principalID)
		if err != nil {
			return err
		}
		n, err = scanNotification(tx.QueryRowContext(ctx, s.q(`SELECT `+notificationColumns+` FROM notifications
			WHERE id = ? AND workspace_id = ? AND principal_id = ?`), id, workspaceID, principalID))
		if err != nil {
			return err
		}
		if changed, _ := res.RowsAffected(); changed == 0 {
			return nil
		}
		if err := s.emit(ctx, tx, workspaceID, principalID, EventNotificationUpdated, map[string]any{"notificationId": id, "read": true, "version": n.Version}); err != nil {
			return err
		}
		return s.unreadChanged(ctx, tx, workspaceID, principalID, -1)
	})
	return n, err
}

// inTx runs fn in a transaction of the Work store when there is one (so that its changes are
// announced to the live channels), else of the SQL store.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if s.Work != nil {
		return s.Work.InTx(ctx, fn)
	}
	return s.db.InTx(ctx, fn)
}

// MarkAllRead marks every unread notification of a Principal in the workspace read and says how
// many it marked.
func (s *Store) MarkAllRead(ctx context.Context, workspaceID, principalID string) (int64, error) {
	var marked int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.q(`UPDATE notifications SET read_at = ?, version = version + 1
			WHERE workspace_id = ? AND principal_id = ? AND read_at = 0 RETURNING id`), ms(s.now()), workspaceID, principalID)
		if err != nil {
			return err
		}
		ids, err := store.Strings(rows)
		if err != nil {
			return err
		}
		if marked = int64(len(ids)); marked == 0 {
			return nil
		}
		// The hub's event names none of them; the kube API's watches of Notifications are told
		// each.
		for _, id := range ids {
			if err := s.emit(ctx, tx, workspaceID, principalID, EventNotificationRead, map[string]any{"notificationId": id}); err != nil {
				return err
			}
		}
		if err := s.emit(ctx, tx, workspaceID, principalID, EventNotificationUpdated, map[string]any{"all": true, "read": true}); err != nil {
			return err
		}
		return s.unreadChanged(ctx, tx, workspaceID, principalID, -marked)
	})
	return marked, err
}

func (s *Store) notify(ctx context.Context, tx *sql.Tx, n Notification) error {
	n.ID = newID()
	if _, err := tx.ExecContext(store.Pipelined(ctx), s.q(`INSERT INTO notifications (id, workspace_id, principal_id, kind, attention, title, task_id,
		interaction_id, run_id, pending_action_id, read_at, version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 1, ?)`),
		n.ID, n.WorkspaceID, n.PrincipalID, n.Kind, boolInt(n.Attention), n.Title, nullString(n.TaskID), nullString(n.InteractionID), n.RunID,
		n.PendingActionID, ms(s.now())); err != nil {
		return err
	}
	if err := s.emit(ctx, tx, n.WorkspaceID, n.PrincipalID, EventNotificationCreated, map[string]any{"notificationId": n.ID, "kind": n.Kind,
		"attention": n.Attention, "taskId": n.TaskID, "interactionId": n.InteractionID}); err != nil {
		return err
	}
	return s.unreadChanged(ctx, tx, n.WorkspaceID, n.PrincipalID, 1)
}

// PendingActionOf reads a pending action of the workspace by its id, with the run it suspends,
// when it belongs to the conversation interactionID (an empty interactionID: to the Task taskID);
// any other is not found.
func (s *Store) PendingActionOf(ctx context.Context, workspaceID, interactionID, taskID, actionID string) (actionRunID string, err error) {
	query, arg := `interaction_id = ?`, interactionID
	if interactionID == "" {
		query, arg = `task_id = ?`, taskID
	}
	err = s.db.DB().QueryRowContext(ctx, s.q(`SELECT run_id FROM pending_actions WHERE id = ? AND workspace_id = ? AND `+query),
		actionID, workspaceID, arg).Scan(&actionRunID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("pending action: %w", ErrNotFound)
	}
	return actionRunID, err
}
