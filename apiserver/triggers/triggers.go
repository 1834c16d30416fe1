// Package triggers is the durable side of the Trigger scheduler: the schedule cursors and the
// occurrence history in the SQL store, and the firing of one occurrence (the owner's
// authorization evaluated again, the target Flow resolved in the Trigger's own workspace, the
// concurrency policy, the submission of autonomous Work) in one transaction whose keys let each
// scheduled instant submit at most once, whichever replica, restart or retry attempts it.
package triggers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/work"
)

// DefaultHistoryLimit is how many occurrences the history keeps per Trigger: older ones are
// removed as new ones come, except those whose Work is still active.
const DefaultHistoryLimit = 100

// WorkType is the type of the WorkItems Triggers submit.
const WorkType = "trigger"

// ErrNotAuthorized is what an Access function wraps when the Principal may not execute runs in
// the workspace (not a member, disabled, or without runs/execute): the firing fails closed.
var ErrNotAuthorized = errors.New("not authorized")

// Access resolves the management context in which principalID executes runs in the workspace
// (its route name): the tenant and workspace ids. It wraps ErrNotAuthorized when the Principal may
// not; any other error is the store's, and the firing is retried.
type Access func(ctx context.Context, principalID, workspace string) (work.Context, error)

// Service fires Triggers and keeps their cursors and history.
type Service struct {
	DB   *store.Store
	Work *work.Store
	// Kube reads the Trigger's namespace, the target Flow and its versions.
	Kube client.Reader
	// Access evaluates the authorization of the Principal a Trigger fires as.
	Access Access
	// Clock is the time source; time.Now when nil.
	Clock func() time.Time
	// HistoryLimit is how many occurrences are kept per Trigger; DefaultHistoryLimit when zero.
	HistoryLimit int
	// Recorded, when set, is told in its transaction of each occurrence recorded in a workspace
	// (the Workplace outbox, which the kube API's watches of TriggerOccurrences follow).
	Recorded func(ctx context.Context, tx *sql.Tx, workspaceID, occurrenceID string) error
}

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) historyLimit() int {
	if s.HistoryLimit > 0 {
		return s.HistoryLimit
	}
	return DefaultHistoryLimit
}

func (s *Service) q(query string) string { return s.DB.Rebind(query) }

// Occurrence is one durable occurrence of a Trigger.
type Occurrence struct {
	ID          string
	TriggerUID  string
	Namespace   string
	Name        string
	Generation  int64
	Kind        platformv1.OccurrenceKind
	ScheduledAt time.Time
	FiredAt     time.Time
	Outcome     platformv1.OccurrenceOutcome
	Reason      string
	Message     string
	// PrincipalID is who the occurrence fired as: the owner, or the caller of Run now.
	PrincipalID string
	WorkspaceID string
	// WorkItemID, WorkTaskID and FlowRunID are set when Work was submitted.
	WorkItemID    string
	WorkTaskID    string
	FlowRunID     string
	FlowNamespace string
	FlowName      string
	FlowVersion   string
}

// Status is the occurrence as the Trigger's status shows it.
func (o *Occurrence) Status() *platformv1.TriggerOccurrence {
	return &platformv1.TriggerOccurrence{
		ID: o.ID, Kind: o.Kind, ScheduledTime: metav1.Time{Time: o.ScheduledAt}, FiredAt: metav1Time(o.FiredAt), Outcome: o.Outcome,
		WorkItemID: o.WorkItemID, TaskID: o.WorkTaskID, Reason: o.Reason, Message: truncate(o.Message, 1024),
	}
}

// namespaceID is the namespace of the name-based UUIDs of occurrences and their WorkItems.
var namespaceID = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://platform.dev/triggers/occurrences"))

// ScheduledOccurrenceID is the identity of the occurrence of a Trigger at a scheduled instant:
// derived from the Trigger's uid and the instant in UTC (to the millisecond the store keeps).
func ScheduledOccurrenceID(uid string, instant time.Time) string {
	return uuid.NewSHA1(namespaceID, []byte(uid+"/scheduled/"+instant.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano))).String()
}

// ManualOccurrenceID is the identity of a Run now: the Trigger's uid and the caller's key.
func ManualOccurrenceID(uid, key string) string {
	return uuid.NewSHA1(namespaceID, []byte(uid+"/manual/"+key)).String()
}

// WorkItemID is the identity of the WorkItem an occurrence submits.
func WorkItemID(occurrenceID string) string {
	return uuid.NewSHA1(namespaceID, []byte("work-item/"+occurrenceID)).String()
}

const occurrenceColumns = `id, trigger_uid, namespace, name, generation, kind, scheduled_at, fired_at, outcome, reason, message,
	principal_id, workspace_id, work_item_id, work_task_id, flow_run_id, flow_namespace, flow_name, flow_version`

type scanner interface{ Scan(...any) error }

func scanOccurrence(row scanner) (Occurrence, error) {
	var (
		o                   Occurrence
		scheduled, fired    int64
		item, task, flowRun sql.NullString
	)
	err := row.Scan(&o.ID, &o.TriggerUID, &o.Namespace, &o.Name, &o.Generation, &o.Kind, &scheduled, &fired, &o.Outcome, &o.Reason,
		&o.Message, &o.PrincipalID, &o.WorkspaceID, &item, &task, &flowRun, &o.FlowNamespace, &o.FlowName, &o.FlowVersion)
	o.ScheduledAt, o.FiredAt = fromMS(scheduled), fromMS(fired)
	o.WorkItemID, o.WorkTaskID, o.FlowRunID = item.String, task.String, flowRun.String
	return o, err
}

// Occurrences lists the history of the Trigger uid, newest first, at most limit.
func (s *Service) Occurrences(ctx context.Context, uid string, limit int) ([]Occurrence, error) {
	rows, err := s.DB.DB().QueryContext(ctx, s.q(`SELECT `+occurrenceColumns+` FROM trigger_occurrences
		WHERE trigger_uid = ? ORDER BY fired_at DESC, scheduled_at DESC, id LIMIT ?`), uid, limit)
	if err != nil {
		return nil, fmt.Errorf("trigger occurrences: %w", err)
	}
	defer rows.Close()
	var out []Occurrence
	for rows.Next() {
		o, err := scanOccurrence(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// Latest is the Trigger's newest occurrence, or nil.
func (s *Service) Latest(ctx context.Context, uid string) (*Occurrence, error) {
	list, err := s.Occurrences(ctx, uid, 1)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return &list[0], nil
}

func (s *Service) occurrence(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string) (Occurrence, error) {
	return scanOccurrence(q.QueryRowContext(ctx, s.q(`SELECT `+occurrenceColumns+` FROM trigger_occurrences WHERE id = ?`), id))
}

// insert records o unless an occurrence of its id exists; false when one does (decided already,
// here or by another replica).
func (s *Service) insert(ctx context.Context, tx *sql.Tx, o Occurrence) (bool, error) {
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO trigger_occurrences (`+occurrenceColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		o.ID, o.TriggerUID, o.Namespace, o.Name, o.Generation, o.Kind, ms(o.ScheduledAt), ms(o.FiredAt), o.Outcome, o.Reason,
		truncate(o.Message, 1024), o.PrincipalID, o.WorkspaceID, nullString(o.WorkItemID), nullString(o.WorkTaskID), nullString(o.FlowRunID),
		o.FlowNamespace, o.FlowName, o.FlowVersion)
	if err != nil {
		return false, fmt.Errorf("record trigger occurrence: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil || n != 1 {
		return false, err
	}
	if s.Recorded != nil && o.WorkspaceID != "" {
		if err := s.Recorded(ctx, tx, o.WorkspaceID, o.ID); err != nil {
			return false, err
		}
	}
	return true, nil
}

// advance moves the Trigger's cursor to instant when it is behind.
func (s *Service) advance(ctx context.Context, tx *sql.Tx, uid string, instant time.Time) error {
	_, err := tx.ExecContext(ctx, s.q(`UPDATE trigger_schedules SET cursor_at = ?, updated_at = ? WHERE trigger_uid = ? AND cursor_at < ?`),
		ms(instant), ms(s.now()), uid, ms(instant))
	return err
}

// prune keeps the Trigger's newest occurrences within the history limit. An occurrence whose
// Work is still active stays: the concurrency policy looks for it.
func (s *Service) prune(ctx context.Context, tx *sql.Tx, uid string) error {
	var cutoff int64
	err := tx.QueryRowContext(ctx, s.q(`SELECT fired_at FROM trigger_occurrences WHERE trigger_uid = ?
		ORDER BY fired_at DESC, scheduled_at DESC, id LIMIT 1 OFFSET ?`), uid, s.historyLimit()).Scan(&cutoff)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.q(`DELETE FROM trigger_occurrences WHERE trigger_uid = ? AND fired_at <= ?
		AND (work_item_id IS NULL OR work_item_id NOT IN (SELECT id FROM work_items WHERE status NOT IN (?, ?, ?)))`),
		uid, cutoff, work.StateCompleted, work.StateFailed, work.StateCancelled)
	return err
}

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

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
