package work

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// States of a Runtime Run. A Runtime Run never suspends: an agent that asks for input ends it
// with the request as its response.
const (
	RuntimePending   = "Pending"
	RuntimeRunning   = "Running"
	RuntimeCompleted = "Completed"
	RuntimeFailed    = "Failed"
)

// Message is one message of a Runtime Run's input.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// RuntimeRun is one durable, asynchronous invocation of an agent.
type RuntimeRun struct {
	ID string
	Context
	AgentName    string
	AgentUID     string
	AgentVersion string
	Messages     []Message
	// Overrides are the run's overrides of the agent's generation settings.
	Overrides      RuntimeOverrides
	Mode           string
	TimeoutSeconds int
	Origin         string
	// The correlation chain above the run, when work it belongs to created it; empty for a run
	// created through the Runtime or routing API. The run's ID is the runtime execution id.
	InteractionID   string
	WorkTaskID      string
	WorkExecutionID string
	FlowRunID       string
	Status          string
	ModelProvider   string
	ResolvedModel   string
	// Response is the agent's final answer (JSON), once Completed.
	Response       json.RawMessage
	Error          string
	Attempt        int
	LeaseOwner     string
	LeaseExpiresAt time.Time
	Version        int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
	CompletedAt    time.Time
}

// RuntimeOverrides are the only generation settings a Runtime Run may override.
type RuntimeOverrides struct {
	Temperature     *float64 `json:"temperature,omitempty"`
	MaxOutputTokens *int64   `json:"maxOutputTokens,omitempty"`
}

// CreateRuntimeRun records a Pending Runtime Run; a worker executes it.
func (s *Store) CreateRuntimeRun(ctx context.Context, r RuntimeRun) (RuntimeRun, error) {
	input, err := json.Marshal(r.Messages)
	if err != nil {
		return r, err
	}
	overrides, err := json.Marshal(r.Overrides)
	if err != nil {
		return r, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	r.ID, r.Status, r.Attempt, r.Version, r.CreatedAt, r.UpdatedAt = newID(), RuntimePending, 1, 1, now, now
	topics := func() []string { return []string{RuntimeRunTopic(r.ID), WorkspaceTopic(r.WorkspaceID), RunnableTopic} }
	err = s.inTxNotify(ctx, topics, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO runtime_runs (id, tenant_id, workspace_id, namespace, principal_id, agent_name,
			agent_uid, agent_version, input, mode, timeout_seconds, origin, interaction_id, work_task_id, work_execution_id, flow_run_id,
			status, version, created_at, updated_at, overrides)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.TenantID, r.WorkspaceID, r.Namespace, r.PrincipalID, r.AgentName, r.AgentUID, r.AgentVersion, string(input),
			r.Mode, r.TimeoutSeconds, r.Origin, r.InteractionID, r.WorkTaskID, r.WorkExecutionID, r.FlowRunID, r.Status, r.Version, ms(now), ms(now), string(overrides))
		return err
	})
	return r, err
}

const runtimeColumns = `id, tenant_id, workspace_id, namespace, principal_id, agent_name, agent_uid, agent_version, input, mode,
	timeout_seconds, origin, interaction_id, work_task_id, work_execution_id, flow_run_id, status, model_provider, resolved_model, response, error, attempt, lease_owner, lease_expires_at,
	version, created_at, updated_at, completed_at, overrides`

func scanRuntimeRun(row scanner) (RuntimeRun, error) {
	var (
		r                                        RuntimeRun
		input, overrides                         string
		response                                 sql.NullString
		lease, createdAt, updatedAt, completedAt int64
	)
	err := row.Scan(&r.ID, &r.TenantID, &r.WorkspaceID, &r.Namespace, &r.PrincipalID, &r.AgentName, &r.AgentUID, &r.AgentVersion,
		&input, &r.Mode, &r.TimeoutSeconds, &r.Origin, &r.InteractionID, &r.WorkTaskID, &r.WorkExecutionID, &r.FlowRunID, &r.Status, &r.ModelProvider, &r.ResolvedModel, &response, &r.Error,
		&r.Attempt, &r.LeaseOwner, &lease, &r.Version, &createdAt, &updatedAt, &completedAt, &overrides)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("runtime run: %w", ErrNotFound)
	}
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(input), &r.Messages); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(overrides), &r.Overrides); err != nil {
		return r, err
	}
	if response.Valid {
		r.Response = json.RawMessage(response.String)
	}
	r.LeaseExpiresAt, r.CreatedAt, r.UpdatedAt, r.CompletedAt = fromMS(lease), fromMS(createdAt), fromMS(updatedAt), fromMS(completedAt)
	return r, nil
}

// RuntimeRun reads a Runtime Run of the workspace; another workspace's is not found.
func (s *Store) RuntimeRun(ctx context.Context, workspaceID, id string) (RuntimeRun, error) {
	return scanRuntimeRun(s.queryRow(ctx, `SELECT `+runtimeColumns+` FROM runtime_runs WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

// ClaimRuntimeRun leases one runnable Runtime Run to owner, as Claim does for FlowRuns.
func (s *Store) ClaimRuntimeRun(ctx context.Context, owner string, lease time.Duration, excludeWorkspaces ...string) (*RuntimeRun, error) {
	now := s.now()
	var run RuntimeRun
	found, err := s.claimRow(ctx, `runtime_runs`, `status`, `lease_owner = ?, lease_expires_at = ?, status = 'Running'`, runtimeColumns,
		[]any{owner, ms(now.Add(lease))}, now, excludeWorkspaces, func(row rowScanner) (err error) {
			run, err = scanRuntimeRun(row)
			return err
		})
	if err != nil || !found {
		return nil, err
	}
	return &run, nil
}

// RuntimeOutcome is how a worker ends (or retries) a Runtime Run it holds.
type RuntimeOutcome struct {
	// Retry keeps the run Running under a new attempt.
	Retry         bool
	Status        string
	ModelProvider string
	ResolvedModel string
	Response      json.RawMessage
	Error         string
}

// FinishRuntimeRun records the outcome of the run owner holds; ErrLeaseLost when it no longer
// holds it.
func (s *Store) FinishRuntimeRun(ctx context.Context, id, owner string, o RuntimeOutcome) error {
	return s.inTxNotify(ctx, func() []string { return []string{RuntimeRunTopic(id)} }, func(tx *sql.Tx) error {
		now := ms(s.now())
		var (
			res sql.Result
			err error
		)
		if o.Retry {
			res, err = s.txExec(ctx, tx, `UPDATE runtime_runs SET attempt = attempt + 1, error = ?, version = version + 1,
				updated_at = ? WHERE id = ? AND lease_owner = ? AND status = 'Running'`, o.Error, now, id, owner)
		} else {
			res, err = s.txExec(ctx, tx, `UPDATE runtime_runs SET status = ?, model_provider = ?, resolved_model = ?, response = ?,
				error = ?, lease_owner = '', lease_expires_at = 0, version = version + 1, updated_at = ?, completed_at = ?
				WHERE id = ? AND lease_owner = ? AND status = 'Running'`,
				o.Status, o.ModelProvider, o.ResolvedModel, nullJSON(o.Response), o.Error, now, now, id, owner)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(err, fmt.Errorf("runtime run %s: %w", id, ErrLeaseLost))
		}
		return nil
	})
}

// DeleteRuntimeRun removes a terminal Runtime Run at its current version.
func (s *Store) DeleteRuntimeRun(ctx context.Context, workspaceID, id string, version int64) error {
	return s.db.GroupInTx(ctx, func(tx *sql.Tx) error {
		r, err := scanRuntimeRun(s.txQueryRow(ctx, tx, `SELECT `+runtimeColumns+` FROM runtime_runs WHERE id = ? AND workspace_id = ?`, id, workspaceID))
		if err != nil {
			return err
		}
		if r.Version != version {
			return fmt.Errorf("the runtime run is at version %d: %w", r.Version, ErrStale)
		}
		if r.Status != RuntimeCompleted && r.Status != RuntimeFailed {
			return fmt.Errorf("a %s runtime run cannot be deleted; only Completed or Failed ones: %w", r.Status, ErrConflict)
		}
		_, err = s.txExec(ctx, tx, `DELETE FROM runtime_runs WHERE id = ? AND version = ?`, id, version)
		return err
	})
}

// RenewRuntimeLease extends owner's lease on a Running Runtime Run; false when owner lost it.
func (s *Store) RenewRuntimeLease(ctx context.Context, id, owner string, lease time.Duration) (bool, error) {
	var n int64
	err := s.db.GroupInTx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE runtime_runs SET lease_expires_at = ? WHERE id = ? AND lease_owner = ? AND status = 'Running'`,
			ms(s.now().Add(lease)), id, owner)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}
