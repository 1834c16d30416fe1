package work

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Statuses of a tool call. A call is persisted as requested before anything runs; started is
// written before each execution, so a call found started after a crash was interrupted and runs
// again under the same idempotency key; completed holds the result the model reads (a tool
// error, a refusal or a rejection included, with IsError).
const (
	ToolCallRequested        = "requested"
	ToolCallStarted          = "started"
	ToolCallAwaitingApproval = "awaitingApproval"
	ToolCallApproved         = "approved"
	ToolCallRejected         = "rejected"
	ToolCallCompleted        = "completed"
)

// Event types of tool calls in a run's history. Like every event they name the call and say
// what happened; the arguments and the result are on the call itself (ToolCalls).
const (
	EventToolCallRequested = "ToolCallRequested"
	EventToolCallStarted   = "ToolCallStarted"
	// EventToolCallRestarted: a call that was started before a crash runs again under its
	// idempotency key.
	EventToolCallRestarted = "ToolCallRestarted"
	EventToolCallCompleted = "ToolCallCompleted"
	EventToolCallApproved  = "ToolCallApproved"
	EventToolCallRejected  = "ToolCallRejected"
	// EventToolCallRefused: an approved call was not made, because what the approval relied on
	// no longer holds when the run resumes (the reason says what).
	EventToolCallRefused = "ToolCallRefused"
)

// ToolCall is one call of a tool that a model asked for in an Agent step.
type ToolCall struct {
	RunID string
	Step  string
	// Seq numbers the calls of the step from 1; Turn numbers the model answers that asked.
	Seq  int
	Turn int
	// CallID is the model's id of the call, which the result answers.
	CallID       string
	FunctionName string
	// Tool and Provider name the Tool and ToolProvider the call went to; empty when the model
	// named no tool the agent may call.
	Tool      string
	Provider  string
	Arguments string
	// ModelText is what the model said with the calls of its turn (on the turn's first call).
	ModelText  string
	Status     string
	Executions int
	Result     string
	IsError    bool
	Truncated  bool
	Duration   time.Duration
	// IdempotencyKey is sent with every execution of the call.
	IdempotencyKey  string
	PendingActionID string
	// DecidedBy and DecisionReason record an approval decision.
	DecidedBy      string
	DecisionReason string
	// ApprovedDigest is the CallDigest the approval saw; an approved call whose digest is not
	// this one is not run.
	ApprovedDigest string
	CreatedAt      time.Time
	CompletedAt    time.Time
}

// Finished reports whether the call has its result.
func (c ToolCall) Finished() bool { return c.Status == ToolCallCompleted }

// ToolResult is the outcome of a call, as the model reads it.
type ToolResult struct {
	Result    string
	IsError   bool
	Truncated bool
	Duration  time.Duration
	// Refused, on an approved call that was not made, says why (the Task shows it).
	Refused string
}

// inLease runs fn in a transaction on a run that owner holds (Pending or Running under owner's
// lease), then appends the events fn returns. ErrLeaseLost otherwise.
func (s *Store) inLease(ctx context.Context, runID, owner string, fn func(tx *sql.Tx, run FlowRun, now time.Time) ([]Event, error)) error {
	var held FlowRun
	// The worker holds the run: a change of its tool calls makes nothing runnable for the others.
	return s.inTxNotify(ctx, func() []string { return runTopics(held, false) }, func(tx *sql.Tx) error {
		run, err := s.lockRun(ctx, tx, runID, "")
		if err != nil {
			return err
		}
		if run.LeaseOwner != owner || (run.State != StatePending && run.State != StateRunning) {
			return fmt.Errorf("run %s is %s under lease %q: %w", runID, run.State, run.LeaseOwner, ErrLeaseLost)
		}
		held = run
		now := s.now()
		events, err := fn(tx, run, now)
		if err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, run, now, events...)
	})
}

// RequestToolCalls persists the calls of one model turn, before any of them runs, with the usage
// of the model call that asked for them (when it reported any).
func (s *Store) RequestToolCalls(ctx context.Context, runID, owner string, calls []ToolCall, used ...ModelCall) error {
	return s.inLease(ctx, runID, owner, func(tx *sql.Tx, run FlowRun, now time.Time) ([]Event, error) {
		events := make([]Event, 0, len(calls))
		for _, c := range calls {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO flow_run_tool_calls (run_id, step, seq, turn, call_id, function_name,
				tool, provider, arguments, model_text, status, idempotency_key, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
				runID, c.Step, c.Seq, c.Turn, c.CallID, c.FunctionName, c.Tool, c.Provider, c.Arguments, c.ModelText,
				ToolCallRequested, c.IdempotencyKey, ms(now)); err != nil {
				return nil, err
			}
			events = append(events, Event{Type: EventToolCallRequested, Step: c.Step, Attempt: run.Attempt, Reason: callReason(c, "requested")})
		}
		if len(used) > 0 {
			return s.recordUsage(ctx, tx, run, used, events, now, false, nil)
		}
		return events, nil
	})
}

// StartToolCall records that a call runs now; restarted is true when it had been started
// before (a crash interrupted it).
func (s *Store) StartToolCall(ctx context.Context, runID, owner, step string, seq int) (restarted bool, err error) {
	err = s.inLease(ctx, runID, owner, func(tx *sql.Tx, run FlowRun, now time.Time) ([]Event, error) {
		c, err := s.toolCall(ctx, tx, runID, step, seq)
		if err != nil {
			return nil, err
		}
		switch c.Status {
		case ToolCallRequested, ToolCallApproved, ToolCallStarted:
		default:
			return nil, fmt.Errorf("tool call %d of step %q is %s: %w", seq, step, c.Status, ErrConflict)
		}
		restarted = c.Status == ToolCallStarted
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE flow_run_tool_calls SET status = ?, executions = executions + 1
			WHERE run_id = ? AND step = ? AND seq = ?`), ToolCallStarted, runID, step, seq); err != nil {
			return nil, err
		}
		e := Event{Type: EventToolCallStarted, Step: step, Attempt: run.Attempt, Reason: callReason(c, "started")}
		if restarted {
			e.Type, e.Reason = EventToolCallRestarted, callReason(c, "interrupted; it runs again under the same idempotency key")
		}
		return []Event{e}, nil
	})
	return restarted, err
}

// FinishToolCall records the result of a call. A call already finished keeps its result.
func (s *Store) FinishToolCall(ctx context.Context, runID, owner, step string, seq int, r ToolResult) error {
	return s.inLease(ctx, runID, owner, func(tx *sql.Tx, run FlowRun, now time.Time) ([]Event, error) {
		c, err := s.toolCall(ctx, tx, runID, step, seq)
		if err != nil {
			return nil, err
		}
		if c.Finished() {
			return nil, fmt.Errorf("tool call %d of step %q is already completed: %w", seq, step, ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE flow_run_tool_calls SET status = ?, result = ?, is_error = ?, truncated = ?,
			duration_ms = ?, completed_at = ? WHERE run_id = ? AND step = ? AND seq = ?`),
			ToolCallCompleted, r.Result, boolInt(r.IsError), boolInt(r.Truncated), r.Duration.Milliseconds(), ms(now),
			runID, step, seq); err != nil {
			return nil, err
		}
		outcome := fmt.Sprintf("completed in %d ms", r.Duration.Milliseconds())
		if r.IsError {
			outcome = "completed with an error result"
		}
		events := []Event{{Type: EventToolCallCompleted, Step: step, Attempt: run.Attempt, Reason: callReason(c, outcome)}}
		if r.Refused != "" {
			events = append([]Event{{Type: EventToolCallRefused, Step: step, Attempt: run.Attempt,
				Reason: callReason(c, "the approved call was not made: "+r.Refused)}}, events...)
		}
		return events, nil
	})
}

// callReason names a call in an event: its number, its function and what happened; never its
// arguments or result.
func callReason(c ToolCall, what string) string {
	return fmt.Sprintf("tool call %d (%s): %s", c.Seq, c.FunctionName, what)
}

const toolCallColumns = `run_id, step, seq, turn, call_id, function_name, tool, provider, arguments, model_text, status, executions,
	result, is_error, truncated, duration_ms, idempotency_key, pending_action_id, decided_by, decision_reason, created_at, completed_at,
	approved_digest`

func scanToolCall(row scanner) (ToolCall, error) {
	var (
		c                         ToolCall
		result, action            sql.NullString
		isError, truncated        int64
		durationMS, created, done int64
	)
	err := row.Scan(&c.RunID, &c.Step, &c.Seq, &c.Turn, &c.CallID, &c.FunctionName, &c.Tool, &c.Provider, &c.Arguments, &c.ModelText,
		&c.Status, &c.Executions, &result, &isError, &truncated, &durationMS, &c.IdempotencyKey, &action, &c.DecidedBy,
		&c.DecisionReason, &created, &done, &c.ApprovedDigest)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("tool call: %w", ErrNotFound)
	}
	c.Result, c.PendingActionID = result.String, action.String
	c.IsError, c.Truncated = isError != 0, truncated != 0
	c.Duration = time.Duration(durationMS) * time.Millisecond
	c.CreatedAt, c.CompletedAt = fromMS(created), fromMS(done)
	return c, err
}

func (s *Store) toolCall(ctx context.Context, tx *sql.Tx, runID, step string, seq int) (ToolCall, error) {
	return scanToolCall(tx.QueryRowContext(ctx, s.q(`SELECT `+toolCallColumns+` FROM flow_run_tool_calls
		WHERE run_id = ? AND step = ? AND seq = ?`), runID, step, seq))
}

// ToolCalls lists the tool calls of a run's step ("" for every step), in the order they were
// asked for.
func (s *Store) ToolCalls(ctx context.Context, runID, step string) ([]ToolCall, error) {
	query, args := `SELECT `+toolCallColumns+` FROM flow_run_tool_calls WHERE run_id = ?`, []any{runID}
	if step != "" {
		query += ` AND step = ?`
		args = append(args, step)
	}
	rows, err := s.db.DB().QueryContext(ctx, s.q(query+` ORDER BY created_at, step, seq`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ToolCall
	for rows.Next() {
		c, err := scanToolCall(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// awaitApproval links a call to the approval PendingAction created for it, in the transaction
// that creates the action.
func (s *Store) awaitApproval(ctx context.Context, tx *sql.Tx, runID, step string, seq int, actionID string) error {
	res, err := tx.ExecContext(ctx, s.q(`UPDATE flow_run_tool_calls SET status = ?, pending_action_id = ?
		WHERE run_id = ? AND step = ? AND seq = ? AND status = ?`), ToolCallAwaitingApproval, actionID, runID, step, seq, ToolCallRequested)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(err, fmt.Errorf("tool call %d of step %q is not waiting to be requested: %w", seq, step, ErrConflict))
	}
	return nil
}

// maxDecisionReason bounds the reason of an approval decision that the model reads.
const maxDecisionReason = 2048

// decideToolCall records the decision of an approval on the call it approves, in the
// transaction that completes the action; ErrNotFound when the action approves no tool call.
func (s *Store) decideToolCall(ctx context.Context, tx *sql.Tx, action PendingAction, by string, approved bool, reason string) (Event, error) {
	c, err := scanToolCall(tx.QueryRowContext(ctx, s.q(`SELECT `+toolCallColumns+` FROM flow_run_tool_calls
		WHERE pending_action_id = ?`), action.ID))
	if err != nil {
		return Event{}, err
	}
	status, event, what := ToolCallApproved, EventToolCallApproved, "approved"
	if !approved {
		status, event, what = ToolCallRejected, EventToolCallRejected, "rejected"
	}
	if len(reason) > maxDecisionReason {
		return Event{}, fmt.Errorf("the reason of an approval decision is at most %d bytes: %w", maxDecisionReason, ErrInvalidInput)
	}
	// The approval names the exact call it saw; the executor runs the call only if it is still
	// that call.
	digest := ""
	if approved && action.Call != nil {
		digest = action.Call.Digest
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE flow_run_tool_calls SET status = ?, decided_by = ?, decision_reason = ?, approved_digest = ?
		WHERE run_id = ? AND step = ? AND seq = ? AND status = ?`), status, by, reason, digest, c.RunID, c.Step, c.Seq,
		ToolCallAwaitingApproval); err != nil {
		return Event{}, err
	}
	if by == ExpiryDecider {
		return Event{Type: event, Step: c.Step, Reason: callReason(c, what+" when nobody decided in time")}, nil
	}
	return Event{Type: event, Step: c.Step, Reason: callReason(c, what+" by a person")}, nil
}

// RetryToolCall gives a started call back after a provider outage: it runs again at the step's
// next attempt, still approved when it was. A call found started is one a crash interrupted.
func (s *Store) RetryToolCall(ctx context.Context, runID, owner, step string, seq int) error {
	return s.inLease(ctx, runID, owner, func(tx *sql.Tx, run FlowRun, now time.Time) ([]Event, error) {
		_, err := tx.ExecContext(ctx, s.q(`UPDATE flow_run_tool_calls SET status = CASE WHEN decided_by <> '' THEN ? ELSE ? END
			WHERE run_id = ? AND step = ? AND seq = ? AND status = ?`), ToolCallApproved, ToolCallRequested, runID, step, seq, ToolCallStarted)
		return nil, err
	})
}

// ExpiryDecider is who decided an approval that expired into its fallback: nobody.
const ExpiryDecider = "system:expiry"

// ApprovalCall is what the approval of a tool call shows of it: who calls which tool of which
// provider with which complete arguments, and the digest of that exact call. Once approved, only
// a call with the same digest runs.
type ApprovalCall struct {
	Agent    string `json:"agent"`
	Tool     string `json:"tool"`
	ToolName string `json:"toolName"`
	Provider string `json:"provider"`
	// Arguments are the call's complete arguments as the model sent them, structured when they
	// are JSON (a JSON string of the raw text otherwise).
	Arguments json.RawMessage `json:"arguments"`
	// Digest is CallDigest of the call: sha256:<hex>.
	Digest string `json:"digest"`
}

// NewApprovalCall describes a call for its approver.
func NewApprovalCall(agent string, c ToolCall, toolName string) ApprovalCall {
	return ApprovalCall{Agent: agent, Tool: c.Tool, ToolName: toolName, Provider: c.Provider, Arguments: canonicalArguments(c.Arguments),
		Digest: CallDigest(c.Tool, c.Provider, c.Arguments)}
}

// CallDigest is the digest of one exact call: sha256:<hex> of the canonical JSON encoding of
// the Tool, its provider and the arguments (object keys sorted, no insignificant space, numbers
// as written), so that the same call always has the same digest and any other call another.
func CallDigest(tool, provider, arguments string) string {
	b, _ := json.Marshal(struct {
		Arguments json.RawMessage `json:"arguments"`
		Provider  string          `json:"provider"`
		Tool      string          `json:"tool"`
	}{canonicalArguments(arguments), provider, tool})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// canonicalArguments is the canonical JSON of a call's arguments; arguments that are not JSON
// are kept as a JSON string of their text.
func canonicalArguments(arguments string) json.RawMessage {
	dec := json.NewDecoder(strings.NewReader(arguments))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil && !dec.More() {
		if b, err := json.Marshal(v); err == nil {
			return b
		}
	}
	b, _ := json.Marshal(arguments)
	return b
}
