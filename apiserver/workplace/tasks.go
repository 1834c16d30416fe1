package workplace

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/work"
)

// StoreArtifact stores bytes in the artifact store and records them as an artifact of the Task:
// the bytes first, so that no metadata ever points at missing bytes.
func (s *Store) StoreArtifact(ctx context.Context, taskID, workspaceID, name, mediaType string, data []byte) (Artifact, error) {
	key, n, err := s.Blobs.Put(ctx, bytes.NewReader(data))
	if err != nil {
		return Artifact{}, err
	}
	a := Artifact{ID: newID(), TaskID: taskID, WorkspaceID: workspaceID, Name: name, MediaType: mediaType, Length: n, StorageKey: key, CreatedAt: s.now()}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO task_artifacts (`+artifactColumns+`) SELECT ?, id, workspace_id, '', ?, ?, ?, ?, ?
			FROM work_tasks WHERE id = ? AND workspace_id = ?`), a.ID, a.Name, a.MediaType, a.Length, a.StorageKey, ms(a.CreatedAt), taskID, workspaceID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("task: %w", ErrNotFound)
		}
		return s.emit(ctx, tx, workspaceID, "", EventTaskArtifactAdded, map[string]any{"taskId": taskID, "artifactId": a.ID})
	})
	if err != nil {
		_ = s.Blobs.Delete(context.WithoutCancel(ctx), key)
		return Artifact{}, err
	}
	return a, nil
}

// DeleteArtifact removes an artifact's metadata and bytes (an answer that was refused after its
// file was stored).
func (s *Store) DeleteArtifact(ctx context.Context, a Artifact) error {
	if _, err := s.db.DB().ExecContext(ctx, s.q(`DELETE FROM task_artifacts WHERE id = ?`), a.ID); err != nil {
		return err
	}
	return s.Blobs.Delete(ctx, a.StorageKey)
}

// DeleteTask deletes a completed, failed or cancelled Task at version: in one transaction its
// runs with their history and pending actions, its WorkItems, Results, activities, artifact
// metadata and notifications; then its artifacts' bytes. Pending, running, paused and
// action-required Tasks are protected (ErrProtected); another version is ErrStale. A
// conversation that pointed to it is detached and keeps its messages.
func (s *Store) DeleteTask(ctx context.Context, workspaceID, id string, version int64) error {
	var keys []string
	err := s.Work.InTx(ctx, func(tx *sql.Tx) error {
		t, err := scanTask(tx.QueryRowContext(ctx, s.q(`SELECT `+taskColumns+` FROM work_tasks WHERE id = ? AND workspace_id = ?`), id, workspaceID))
		if err != nil {
			return err
		}
		if t.Version != version {
			return fmt.Errorf("task %s was changed since version %d: %w", id, version, ErrStale)
		}
		if !TaskTerminal(t.State) {
			return fmt.Errorf("a %s Task is protected: only completed, failed and cancelled Tasks can be deleted: %w", t.State, ErrProtected)
		}
		var active int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM flow_runs WHERE work_task_id = ? AND state NOT IN ('Completed', 'Failed', 'Cancelled')`),
			id).Scan(&active); err != nil {
			return err
		}
		if active > 0 {
			return fmt.Errorf("the Task still has work in progress: %w", ErrProtected)
		}
		rows, err := tx.QueryContext(ctx, s.q(`SELECT storage_key FROM task_artifacts WHERE task_id = ?`), id)
		if err != nil {
			return err
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return err
			}
			keys = append(keys, k)
		}
		rows.Close()
		// The unread notifications going with the Task leave their recipients' counts.
		type unreadOf struct {
			principalID string
			count       int64
		}
		var unread []unreadOf
		rows, err = tx.QueryContext(ctx, s.q(`SELECT principal_id, COUNT(*) FROM notifications WHERE task_id = ? AND workspace_id = ? AND read_at = 0
			GROUP BY principal_id ORDER BY principal_id`), id, workspaceID)
		if err != nil {
			return err
		}
		for rows.Next() {
			var u unreadOf
			if err := rows.Scan(&u.principalID, &u.count); err != nil {
				rows.Close()
				return err
			}
			unread = append(unread, u)
		}
		rows.Close()
		var detached []string
		rows, err = tx.QueryContext(ctx, s.q(`SELECT id FROM interactions WHERE last_task_id = ?`), id)
		if err != nil {
			return err
		}
		for rows.Next() {
			var i string
			if err := rows.Scan(&i); err != nil {
				rows.Close()
				return err
			}
			detached = append(detached, i)
		}
		rows.Close()
		// The runs and WorkItems that go with the Task are told gone (the kube API's watches).
		var runs []work.FlowRun
		rows, err = tx.QueryContext(ctx, s.q(`SELECT id, work_item_id, state, version FROM flow_runs WHERE work_task_id = ?`), id)
		if err != nil {
			return err
		}
		for rows.Next() {
			r := work.FlowRun{WorkTaskID: id, Context: work.Context{WorkspaceID: workspaceID}}
			if err := rows.Scan(&r.ID, &r.WorkItemID, &r.State, &r.Version); err != nil {
				rows.Close()
				return err
			}
			runs = append(runs, r)
		}
		rows.Close()
		for _, r := range runs {
			if err := s.emitRun(ctx, tx, r, false, true); err != nil {
				return err
			}
		}
		for _, stmt := range []string{
			`UPDATE interactions SET last_task_id = NULL, version = version + 1 WHERE last_task_id = ?`,
			`UPDATE interactions SET current_run_id = '' WHERE current_run_id IN (SELECT id FROM flow_runs WHERE work_task_id = ?)`,
			`DELETE FROM notifications WHERE task_id = ?`,
			`DELETE FROM pending_actions WHERE task_id = ?`,
			`UPDATE flow_runs SET parent_flow_run_id = NULL WHERE parent_flow_run_id IN (SELECT id FROM flow_runs WHERE work_task_id = ?)`,
			`DELETE FROM flow_runs WHERE work_task_id = ?`,
			`DELETE FROM work_items WHERE work_task_id = ?`,
			`DELETE FROM work_tasks WHERE id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, s.q(stmt), id); err != nil {
				return err
			}
		}
		for _, i := range detached {
			if err := s.emitInteraction(ctx, tx, i); err != nil {
				return err
			}
		}
		if err := s.emit(ctx, tx, workspaceID, "", EventTaskStatusChanged, map[string]any{"taskId": id, "deleted": true}); err != nil {
			return err
		}
		for _, u := range unread {
			if err := s.unreadChanged(ctx, tx, workspaceID, u.principalID, -u.count); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := s.Blobs.Delete(ctx, k); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// CompactActivities keeps what compact progress shows: the current functional activity, the
// latest one still open (a turn started and not finished, a question not answered); none once
// the work ended, since its end is conveyed by the answer, the question, the Result or the
// artifact.
func CompactActivities(all []Activity) []Activity {
	open := map[string]int{}
	for i, a := range all {
		key := a.Kind + "/" + a.RunID + "/" + a.Step
		switch a.Phase {
		case PhaseStarted, PhaseWaiting:
			open[key] = i
		case PhaseCompleted, PhaseAnswered, PhaseExpired, PhaseFailed, PhaseCancelled:
			// An expired question ended too, even when its fallback let the run go on (Reject,
			// Proceed) while its Task stays paused: it no longer waits for anyone.
			delete(open, key)
			if a.Kind == ActivityRun {
				open = map[string]int{}
			}
		}
	}
	latest := -1
	for _, i := range open {
		latest = max(latest, i)
	}
	if latest < 0 {
		return []Activity{}
	}
	return []Activity{all[latest]}
}

// CloseInteractions closes the conversations opened from an Entry that no run keeps busy (the
// eligible ones), when the Entry is deleted with that option; they keep their messages. It says
// how many it closed.
func (s *Store) CloseInteractions(ctx context.Context, workspaceID, entryNamespace, entryName string) (int64, error) {
	var closed int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.q(`SELECT id FROM interactions WHERE workspace_id = ? AND entry_namespace = ? AND entry_name = ? AND state = ?`),
			workspaceID, entryNamespace, entryName, InteractionIdle)
		if err != nil {
			return err
		}
		ids, err := store.Strings(rows)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE interactions SET state = ?, version = version + 1, updated_at = ? WHERE id = ?`),
				InteractionClosed, ms(s.now()), id); err != nil {
				return err
			}
			if err := s.emitInteraction(ctx, tx, id); err != nil {
				return err
			}
		}
		closed = int64(len(ids))
		return nil
	})
	return closed, err
}
