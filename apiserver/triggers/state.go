package triggers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/work"
)

// State is what the store knows of a Trigger's schedule.
type State struct {
	// Cursor: the occurrences of every scheduled instant at or before it are decided.
	Cursor time.Time
	// ResumedAt is when the Trigger was last resumed after a pause.
	ResumedAt time.Time
	// Failures counts the consecutive failed scheduled occurrences of the current generation
	// since ResumedAt: an occurrence that could not submit, or whose Work failed. A Submitted
	// occurrence whose Work completed ends the count; Skipped, Missed and still active ones
	// neither count nor end it.
	Failures int
}

// Sync records what the scheduler sees of the Trigger (its schedule, by key, and whether it is
// enabled) and returns the durable state of its schedule. A Trigger seen for the first time owes
// the instants since its creation; a changed schedule or an enablement owes none before now.
func (s *Service) Sync(ctx context.Context, t *platformv1.Trigger, scheduleKey string, enabled bool, maxFailures int) (State, error) {
	now := s.now()
	var st State
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO trigger_schedules (trigger_uid, namespace, name, schedule_key, enabled,
			cursor_at, resumed_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT (trigger_uid) DO NOTHING`),
			string(t.UID), t.Namespace, t.Name, scheduleKey, boolInt(enabled), ms(t.CreationTimestamp.Time), ms(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			// A Trigger seen for the first time: one of the same name deleted while the scheduler
			// was not looking leaves its state and history behind.
			if err := s.forget(ctx, tx, t.Namespace, t.Name, string(t.UID)); err != nil {
				return err
			}
		}
		query := `SELECT schedule_key, enabled, cursor_at, resumed_at FROM trigger_schedules WHERE trigger_uid = ?`
		if s.DB.Dialect() == store.Postgres {
			query += ` FOR UPDATE`
		}
		var (
			key               string
			wasEnabled        int
			cursor, resumedAt int64
		)
		if err := tx.QueryRowContext(ctx, s.q(query), string(t.UID)).Scan(&key, &wasEnabled, &cursor, &resumedAt); err != nil {
			return err
		}
		if key != scheduleKey || (wasEnabled == 0 && enabled) {
			cursor = max(cursor, ms(now))
		}
		if key != scheduleKey || (wasEnabled != 0) != enabled {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE trigger_schedules SET schedule_key = ?, enabled = ?, cursor_at = ?, updated_at = ?
				WHERE trigger_uid = ?`), scheduleKey, boolInt(enabled), cursor, ms(now), string(t.UID)); err != nil {
				return err
			}
		}
		st.Cursor, st.ResumedAt = fromMS(cursor), fromMS(resumedAt)
		st.Failures, err = s.failures(ctx, tx, t, resumedAt, maxFailures)
		return err
	})
	if err != nil {
		return State{}, fmt.Errorf("trigger schedule state: %w", err)
	}
	return st, nil
}

// failures counts the consecutive failed scheduled occurrences (see State.Failures), up to limit
// (at least the threshold the caller compares it with).
func (s *Service) failures(ctx context.Context, tx *sql.Tx, t *platformv1.Trigger, resumedAt int64, limit int) (int, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT o.outcome, COALESCE(w.status, '') FROM trigger_occurrences o
		LEFT JOIN work_items w ON w.id = o.work_item_id
		WHERE o.trigger_uid = ? AND o.kind = ? AND o.generation = ? AND o.fired_at > ?
		ORDER BY o.fired_at DESC, o.scheduled_at DESC LIMIT ?`),
		string(t.UID), platformv1.ScheduledOccurrence, t.Generation, resumedAt, max(limit, 1)*4+16)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	count := 0
	for rows.Next() {
		var outcome, status string
		if err := rows.Scan(&outcome, &status); err != nil {
			return 0, err
		}
		switch {
		case outcome == string(platformv1.OccurrenceFailed), outcome == string(platformv1.OccurrenceSubmitted) && status == work.StateFailed:
			count++
		case outcome == string(platformv1.OccurrenceSubmitted) && (status == work.StateCompleted):
			return count, rows.Err()
		}
	}
	return count, rows.Err()
}

// Resume lifts a pause: failures before now no longer count, and nothing is owed for the time the
// Trigger was paused.
func (s *Service) Resume(ctx context.Context, uid string) error {
	now := ms(s.now())
	_, err := s.DB.DB().ExecContext(ctx, s.q(`UPDATE trigger_schedules SET resumed_at = ?, cursor_at = CASE WHEN cursor_at < ? THEN ? ELSE cursor_at END,
		updated_at = ? WHERE trigger_uid = ?`), now, now, now, now, uid)
	return err
}

// Forget removes the schedule state and history of the Triggers named namespace/name other than
// keepUID (all of them when it is empty): the Trigger was deleted, or replaced by one of the same
// name. Their Work and Tasks stay.
func (s *Service) Forget(ctx context.Context, namespace, name, keepUID string) error {
	return s.DB.InTx(ctx, func(tx *sql.Tx) error { return s.forget(ctx, tx, namespace, name, keepUID) })
}

func (s *Service) forget(ctx context.Context, tx *sql.Tx, namespace, name, keepUID string) error {
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM trigger_occurrences WHERE namespace = ? AND name = ? AND trigger_uid <> ?`),
		namespace, name, keepUID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, s.q(`DELETE FROM trigger_schedules WHERE namespace = ? AND name = ? AND trigger_uid <> ?`),
		namespace, name, keepUID)
	return err
}

// Cursor is the Trigger's cursor, zero when the store has no state for it.
func (s *Service) Cursor(ctx context.Context, uid string) (time.Time, error) {
	var cursor int64
	err := s.DB.DB().QueryRowContext(ctx, s.q(`SELECT cursor_at FROM trigger_schedules WHERE trigger_uid = ?`), uid).Scan(&cursor)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	return fromMS(cursor), err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func metav1Time(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &metav1.Time{Time: t}
}
