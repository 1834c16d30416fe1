package work

import (
	"context"
	"time"
)

// RunFilter narrows a list of FlowRuns.
type RunFilter struct {
	// States keeps the runs in one of these states; all when empty.
	States []string
	// Before, when set, lists the runs created before it (the next page).
	Before time.Time
	Take   int
}

// Runs lists the workspace's FlowRuns, newest first: the technical runs an operator's cleanup
// deletes apart from the Tasks they served.
func (s *Store) Runs(ctx context.Context, workspaceID string, f RunFilter) ([]FlowRun, error) {
	query := `SELECT ` + runColumns + ` FROM flow_runs WHERE workspace_id = ?`
	args := []any{workspaceID}
	if len(f.States) > 0 {
		query += ` AND state IN (?`
		for range f.States[1:] {
			query += `, ?`
		}
		query += `)`
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	if !f.Before.IsZero() {
		query += ` AND created_at < ?`
		args = append(args, ms(f.Before))
	}
	query += ` ORDER BY created_at DESC, id LIMIT ?`
	args = append(args, f.Take)
	rows, err := s.db.DB().QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FlowRun
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
