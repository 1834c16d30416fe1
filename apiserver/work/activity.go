package work

import (
	"context"
	"encoding/json"
)

// AgentActivity is what is in flight for one agent of a workspace: the runtime instances the
// Runtime plane holds of it, rebuilt from the runs that still need it.
type AgentActivity struct {
	// RuntimeRuns counts its Pending and Running Runtime Runs; they execute the agent's current
	// revision.
	RuntimeRuns int
	// FlowRuns counts its non-terminal FlowRuns by the agent revision they pinned. Runs that
	// have not pinned yet are not counted: which revision they will use is not decided.
	FlowRuns map[string]int
}

// AgentActivity counts the active runs of the agent with uid in the workspace.
func (s *Store) AgentActivity(ctx context.Context, workspaceID, uid string) (AgentActivity, error) {
	out := AgentActivity{FlowRuns: map[string]int{}}
	if err := s.db.DB().QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM runtime_runs
		WHERE workspace_id = ? AND agent_uid = ? AND status IN ('Pending', 'Running')`), workspaceID, uid).Scan(&out.RuntimeRuns); err != nil {
		return out, err
	}
	// The LIKE narrows the scan to runs whose pinned agents mention the uid (a wildcard in it
	// only widens the match); the JSON decides.
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT agents FROM flow_runs WHERE workspace_id = ?
		AND state NOT IN ('Completed', 'Failed', 'Cancelled') AND agents LIKE ?`), workspaceID, "%"+uid+"%")
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return out, err
		}
		var pinned map[string]struct {
			UID      string `json:"uid"`
			Revision string `json:"revision"`
		}
		if err := json.Unmarshal([]byte(raw), &pinned); err != nil {
			continue // an unreadable pin fails its run in the executor; it is no instance
		}
		for _, a := range pinned {
			if a.UID == uid {
				out.FlowRuns[a.Revision]++
				break
			}
		}
	}
	return out, rows.Err()
}
