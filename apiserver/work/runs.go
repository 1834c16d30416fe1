package work

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"platform.dev/platform/apiserver/store"
)

// notIn is the condition that column is none of values (empty without values) and its arguments.
func notIn(column string, values []string) (string, []any) {
	if len(values) == 0 {
		return "", nil
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return " AND " + column + " NOT IN (?" + strings.Repeat(", ?", len(values)-1) + ")", args
}

// Claim leases one runnable run to owner for lease and returns it, or nil when there is none (the
// executor instead reads one, Claimable, and takes it with its first transition, ClaimApplied).
// Runnable: Pending or Running, and no live lease (a Running run whose lease expired was left by
// a worker that stopped or died). Runs of excludeWorkspaces are left for later.
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration, excludeWorkspaces ...string) (*FlowRun, error) {
	now := s.now()
	var run FlowRun
	found, err := s.claimRow(ctx, `flow_runs`, `state`, `lease_owner = ?, lease_expires_at = ?`, runColumns,
		[]any{owner, ms(now.Add(lease))}, now, excludeWorkspaces, func(row rowScanner) (err error) {
			run, err = scanRun(row)
			return err
		})
	if err != nil || !found {
		return nil, err
	}
	return &run, nil
}

// Claimable is a runnable run (as Claim takes) that no worker holds, read without taking it, or
// nil when there is none: the worker that read it takes it with its first transition
// (ClaimApplied), so that a run whose next steps need no call outside the process is claimed
// and finished in one commit. Runs of excludeWorkspaces and the runs excludeRuns (those the
// process's other workers read and have not taken yet) are left out. A read costs what Claim's
// look for a runnable run costs, and takes no lock: of several workers (of this replica or
// another) that read one run, one takes it.
func (s *Store) Claimable(ctx context.Context, excludeWorkspaces, excludeRuns []string) (*FlowRun, error) {
	exclude, args := notIn("workspace_id", excludeWorkspaces)
	notRuns, runArgs := notIn("id", excludeRuns)
	run, err := scanRun(s.queryRow(ctx, `SELECT `+runColumns+` FROM flow_runs WHERE state IN ('Pending', 'Running') AND lease_expires_at < ?`+
		exclude+notRuns+` ORDER BY updated_at LIMIT 1`, append(append([]any{ms(s.now())}, args...), runArgs...)...))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &run, nil
}

// claimRow leases one runnable row of table (stateColumn Pending or Running, its lease expired,
// outside excludeWorkspaces, the longest unchanged first): it sets set with args and scans the
// row as it is then, its columns, with scan. found is false when there was none.
//
// On PostgreSQL it is one statement, its own transaction: FOR UPDATE SKIP LOCKED lets the workers
// of several replicas claim different rows at once, and finding none costs what a read would. On
// SQLite a read answers first, as most claims find nothing (every commit that makes a run
// runnable wakes a worker), without taking the one write lock; the UPDATE then shares a commit.
func (s *Store) claimRow(ctx context.Context, table, stateColumn, set, columns string, args []any, now time.Time,
	excludeWorkspaces []string, scan func(rowScanner) error) (found bool, err error) {
	exclude, excluded := notIn("workspace_id", excludeWorkspaces)
	args = append(append(args, ms(now)), excluded...)
	claim := func(row rowScanner) error {
		found = false
		err := scan(row)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		found = err == nil
		return err
	}
	query := `UPDATE ` + table + ` SET ` + set + ` WHERE id = (SELECT id FROM ` + table + ` WHERE ` + stateColumn +
		` IN ('Pending', 'Running') AND lease_expires_at < ?` + exclude + ` ORDER BY updated_at LIMIT 1`
	if s.db.Dialect() == store.Postgres {
		query += ` FOR UPDATE SKIP LOCKED) RETURNING ` + columns
		return found, claim(s.queryRow(ctx, query, args...))
	}
	if ok, err := s.anyClaimable(ctx, table, stateColumn, now, exclude, excluded); err != nil || !ok {
		return false, err
	}
	query += `) RETURNING ` + columns
	err = s.db.GroupInTx(ctx, func(tx *sql.Tx) error { return claim(s.txQueryRow(ctx, tx, query, args...)) })
	return found, err
}

// anyClaimable reports whether table holds a runnable run (its stateColumn Pending or Running)
// whose lease expired, outside the excluded workspaces.
func (s *Store) anyClaimable(ctx context.Context, table, stateColumn string, now time.Time, exclude string, excluded []any) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM `+firstClaimable(table, stateColumn, exclude)+` AS claimable`,
		append([]any{ms(now)}, excluded...)...).Scan(&n)
	return n > 0, err
}

// firstClaimable selects a row of table when it holds a runnable one (its stateColumn Pending or
// Running, its lease expired before the argument) outside the workspaces exclude leaves out.
func firstClaimable(table, stateColumn, exclude string) string {
	return `(SELECT 1 FROM ` + table + ` WHERE ` + stateColumn + ` IN ('Pending', 'Running')
		AND lease_expires_at < ?` + exclude + ` LIMIT 1)`
}

// AnyRunnable reports whether any workspace has a FlowRun or a Runtime Run that Claim or
// ClaimRuntimeRun would take: one read.
func (s *Store) AnyRunnable(ctx context.Context) (bool, error) {
	now := ms(s.now())
	var n int
	err := s.queryRow(ctx, `SELECT (SELECT COUNT(*) FROM `+firstClaimable(`flow_runs`, `state`, ``)+` AS flow)
		+ (SELECT COUNT(*) FROM `+firstClaimable(`runtime_runs`, `status`, ``)+` AS runtime)`, now, now).Scan(&n)
	return n > 0, err
}

// RenewLease extends owner's lease on a run; false when the run is no longer runnable by owner
// (paused, cancelled, suspended, or claimed by another worker after the lease expired).
func (s *Store) RenewLease(ctx context.Context, runID, owner string, lease time.Duration) (bool, error) {
	var n int64
	err := s.db.GroupInTx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE flow_runs SET lease_expires_at = ?
			WHERE id = ? AND lease_owner = ? AND state IN ('Pending', 'Running')`, ms(s.now().Add(lease)), runID, owner)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

// ReleaseLease gives a run back so that any worker may claim it at once.
func (s *Store) ReleaseLease(ctx context.Context, runID, owner string) error {
	return s.inTxNotify(ctx, func() []string { return []string{RunnableTopic} }, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `UPDATE flow_runs SET lease_owner = '', lease_expires_at = 0
			WHERE id = ? AND lease_owner = ?`, runID, owner)
		return err
	})
}

// Pin is what a run fixes at its first execution.
type Pin struct {
	Digest   string
	Snapshot json.RawMessage
	Agents   json.RawMessage
}

// Suspension creates a PendingAction and moves the run to ActionRequired.
type Suspension struct {
	// Step is the step that asks.
	Step string
	Kind string
	// Prompt is the question shown to the person.
	Prompt  string
	Options []Option
	// Continuation is the step the run resumes at once the action is completed.
	Continuation string
	// TTL is how long the action can be answered; DefaultActionTTL when zero.
	TTL time.Duration
	// ToolCallSeq, on an approval, is the tool call of Step that the action approves, and Call
	// what its approver sees of it.
	ToolCallSeq int
	Call        *ApprovalCall
	// Budget, on an approval, is the budget the step's next model call would start past.
	Budget *BudgetCrossing
	// OnExpiry is what the action turns into when nobody answers it in time (Fallback*;
	// FallbackFail when empty), Default the answer a FallbackProceed records.
	OnExpiry string
	Default  json.RawMessage
	// RemindBefore is how long before its expiry the reminder goes out; a quarter of the TTL, at
	// most an hour, when zero.
	RemindBefore time.Duration
}

// reminderLead is how long before the expiry of an action waiting ttl its reminder goes out.
func reminderLead(ttl, declared time.Duration) time.Duration {
	if declared > 0 && declared < ttl {
		return declared
	}
	return min(ttl/4, time.Hour)
}

// Transition is one persisted change of a leased run. Zero fields keep their value.
type Transition struct {
	Events      []Event
	Pin         *Pin
	State       string
	CurrentStep *string
	StepStarted *bool
	Attempt     int
	Data        *RunData
	Result      json.RawMessage
	Reason      string
	Suspend     *Suspension
	// Usage are the model calls whose outcome the transition records.
	Usage []ModelCall
	// UsageFresh says that Usage holds every model call its steps made (the run's first
	// execution, which recorded none before): the usage each step's outcome tells is summed from
	// them instead of read back.
	UsageFresh bool
	// Prior are, by step, the model calls a step of Usage had recorded before (carried by the
	// executor from the commit that recorded them): with them, Usage holds every call of that
	// step, whose usage is summed from both instead of read back.
	Prior map[string][]ModelCall
}

// ApplyTo sets the fields of run that t changes, as Apply does before it persists them (a
// suspension aside, which Apply turns into a PendingAction).
func (t Transition) ApplyTo(run *FlowRun) error {
	if t.Pin != nil {
		run.FlowDigest, run.Snapshot, run.Agents = t.Pin.Digest, t.Pin.Snapshot, t.Pin.Agents
	}
	if t.State != "" {
		run.State = t.State
	}
	if t.CurrentStep != nil {
		run.CurrentStep = *t.CurrentStep
	}
	if t.StepStarted != nil {
		run.StepStarted = *t.StepStarted
	}
	if t.Attempt != 0 {
		run.Attempt = t.Attempt
	}
	if t.Data != nil {
		data, err := json.Marshal(t.Data)
		if err != nil {
			return fmt.Errorf("run data: %w", err)
		}
		run.Data = data
	}
	if t.Result != nil {
		run.Result = t.Result
	}
	if t.Reason != "" {
		run.Reason = t.Reason
	}
	return nil
}

// Then is t followed by u as one transition: u's fields win, and the events are t's then u's.
// Transitions with nothing outside the store in between are persisted as one, in one commit.
func (t Transition) Then(u Transition) Transition {
	out := t
	out.Events = append(append([]Event{}, t.Events...), u.Events...)
	if u.Pin != nil {
		out.Pin = u.Pin
	}
	if u.State != "" {
		out.State = u.State
	}
	if u.CurrentStep != nil {
		out.CurrentStep = u.CurrentStep
	}
	if u.StepStarted != nil {
		out.StepStarted = u.StepStarted
	}
	if u.Attempt != 0 {
		out.Attempt = u.Attempt
	}
	if u.Data != nil {
		out.Data = u.Data
	}
	if u.Result != nil {
		out.Result = u.Result
	}
	if u.Reason != "" {
		out.Reason = u.Reason
	}
	if u.Suspend != nil {
		out.Suspend = u.Suspend
	}
	out.Usage = append(append([]ModelCall{}, t.Usage...), u.Usage...)
	if len(u.Prior) > 0 {
		prior := make(map[string][]ModelCall, len(t.Prior)+len(u.Prior))
		maps.Copy(prior, t.Prior)
		for step, calls := range u.Prior {
			if _, ok := prior[step]; !ok { // a step's calls before the transitions are those first told
				prior[step] = calls
			}
		}
		out.Prior = prior
	}
	return out
}

// Apply persists a transition of a run that owner holds, with its events, in one transaction.
// ErrLeaseLost when the run is no longer Pending or Running under owner's lease (it was paused,
// cancelled or claimed by another worker): the caller must drop the run without acting.
func (s *Store) Apply(ctx context.Context, runID, owner string, t Transition) (FlowRun, error) {
	return s.apply(ctx, runID, nil, owner, t, false)
}

// ApplyHeld is Apply for the worker that holds the run as the store last returned it (Claim, a
// leased Submit, or its previous ApplyHeld): instead of reading the run again, the write checks
// that nothing changed it meanwhile (the same version, still Pending or Running under owner's
// lease), and ErrLeaseLost otherwise. A transition costs a statement less. The lease's expiry,
// which renewals move without a new version, is kept as the store has it, and the returned run
// has held's.
func (s *Store) ApplyHeld(ctx context.Context, held FlowRun, owner string, t Transition) (FlowRun, error) {
	return s.apply(ctx, held.ID, &held, owner, t, false)
}

// ClaimApplied is ApplyHeld for a run read by Claimable, not leased yet, with the lease owner
// takes set on held (LeaseOwner, LeaseExpiresAt): the write takes the run with its transition
// only if it is still claimable as read (the same version, Pending or Running, its lease
// expired), and is ErrLeaseLost otherwise, nothing written: another worker took it or it
// changed, and the caller drops it (the steps t records ran only in the process). A crash before
// it commits leaves the run claimable, as read.
func (s *Store) ClaimApplied(ctx context.Context, held FlowRun, owner string, t Transition) (FlowRun, error) {
	if held.LeaseOwner != owner || owner == "" {
		return FlowRun{}, fmt.Errorf("run %s is leased to %q: %w", held.ID, held.LeaseOwner, ErrLeaseLost)
	}
	return s.apply(ctx, held.ID, &held, owner, t, true)
}

// SubmitApplied writes a prepared submission whose run owner holds (Prepare with a Lease)
// together with the run's first transition t, in one transaction and one commit: the WorkItem and
// the FlowRun as t leaves them, the run's creation and t's events, what the Observer projects of
// them. Until it commits nothing of the submission exists, so the submitter acknowledges it only
// after; a crash before loses work nobody was told about, and the steps t records ran only in the
// process (they made no call outside it: the executor commits before any). It returns the
// WorkItem and the run as committed.
func (s *Store) SubmitApplied(ctx context.Context, p Prepared, owner string, t Transition) (WorkItem, FlowRun, error) {
	var (
		item = p.Item
		out  FlowRun
	)
	if p.Run.LeaseOwner != owner || owner == "" {
		return item, out, fmt.Errorf("run %s is leased to %q: %w", p.Run.ID, p.Run.LeaseOwner, ErrLeaseLost)
	}
	err := s.announcing(ctx, s.db.GroupInTx, func(tx *sql.Tx) error {
		run := p.Run
		now := s.now()
		next, events, err := transitioned(run, t)
		if err != nil {
			return err
		}
		next.UpdatedAt = now.UTC().Truncate(time.Millisecond)
		item = p.Item
		item.Status, item.Result, item.Reason, item.UpdatedAt = workItemStatus(next), next.Result, next.Reason, next.UpdatedAt
		if err := p.writePrelude(ctx, tx, next); err != nil {
			return err
		}
		if err := s.insertSubmission(ctx, tx, item, next, p.hash); err != nil {
			return fmt.Errorf("work: submit: %w", err)
		}
		if t.Suspend != nil {
			if err := s.suspend(ctx, tx, next, *t.Suspend, now, p.hash, &events); err != nil {
				return err
			}
		}
		if len(t.Usage) > 0 {
			if events, err = s.recordUsage(ctx, tx, next, t.Usage, events, now, true, nil); err != nil {
				return err
			}
		}
		// The run's creation is told as it was, Pending; what t did follows.
		events = append([]Event{{Type: EventRunCreated, State: StatePending}}, events...)
		if err := s.appendEvents(ctx, tx, next, now, events...); err != nil {
			return err
		}
		out = next
		s.announce(tx, runTopics(next, false)...)
		return nil
	})
	return item, out, err
}

// transitioned is run with t applied and the events t records: a suspension moves it to
// ActionRequired (the caller writes the PendingAction, suspend), and a run left neither Pending
// nor Running gives its lease up.
func transitioned(run FlowRun, t Transition) (FlowRun, []Event, error) {
	next := run
	if err := t.ApplyTo(&next); err != nil {
		return next, nil, err
	}
	if t.Suspend != nil {
		next.State = StateActionRequired
	}
	if next.State != StatePending && next.State != StateRunning {
		next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
	}
	return next, append([]Event{}, t.Events...), nil
}

// suspend creates the PendingAction of sus for run (its resume token's digest hash, read from the
// run when empty) and adds the event that tells it.
func (s *Store) suspend(ctx context.Context, tx *sql.Tx, run FlowRun, sus Suspension, now time.Time, hash string, events *[]Event) error {
	id, err := s.createAction(ctx, tx, run, sus, now, hash)
	if err != nil {
		return err
	}
	if sus.ToolCallSeq > 0 {
		if err := s.awaitApproval(ctx, tx, run.ID, sus.Step, sus.ToolCallSeq, id); err != nil {
			return err
		}
	}
	*events = append(*events, Event{Type: EventPendingActionCreated, Step: sus.Step, Reason: "pending action " + id})
	return nil
}

// apply persists t of the run runID that owner holds: read and locked, or held as the worker
// last had it (held), or held as read claimable and taken by this write (claim).
func (s *Store) apply(ctx context.Context, runID string, held *FlowRun, owner string, t Transition, claim bool) (FlowRun, error) {
	var out FlowRun
	// The worker holds the run: a transition of it makes nothing runnable for the others.
	err := s.inTxNotify(ctx, func() []string { return runTopics(out, false) }, func(tx *sql.Tx) error {
		var run FlowRun
		if held != nil {
			run = *held
		} else {
			var err error
			if run, err = s.lockRun(ctx, tx, runID, ""); err != nil {
				return err
			}
		}
		if run.LeaseOwner != owner || (run.State != StatePending && run.State != StateRunning) {
			return fmt.Errorf("run %s is %s under lease %q: %w", runID, run.State, run.LeaseOwner, ErrLeaseLost)
		}
		now := s.now()
		next, events, err := transitioned(run, t)
		if err != nil {
			return err
		}
		if t.Suspend != nil {
			if err := s.suspend(ctx, tx, run, *t.Suspend, now, "", &events); err != nil {
				return err
			}
		}
		switch {
		case claim:
			out, err = s.saveClaimedRun(ctx, tx, run, next, now)
		case held != nil:
			out, err = s.saveHeldRun(ctx, tx, run, next, owner, now)
		default:
			out, err = s.saveRun(ctx, tx, run, next, now)
		}
		if err != nil {
			return err
		}
		if len(t.Usage) > 0 {
			if events, err = s.recordUsage(ctx, tx, out, t.Usage, events, now, t.UsageFresh, t.Prior); err != nil {
				return err
			}
		}
		return s.appendEvents(ctx, tx, out, now, events...)
	})
	if err == nil {
		s.settled.keep(out)
	}
	return out, err
}

// runTopics are the topics a committed change of run announces: RunSettledTopic too when it left
// the run neither Pending nor Running, RunnableTopic when it may have made the run runnable (it
// is Pending or Running and no worker holds it).
func runTopics(run FlowRun, runnable bool) []string {
	topics := []string{RunTopic(run.ID), WorkspaceTopic(run.WorkspaceID)}
	switch {
	case run.State != StatePending && run.State != StateRunning:
		topics = append(topics, RunSettledTopic(run.ID))
	case runnable && run.LeaseOwner == "":
		topics = append(topics, RunnableTopic)
	}
	return topics
}

func (s *Store) createAction(ctx context.Context, tx *sql.Tx, run FlowRun, sus Suspension, now time.Time, hash string) (string, error) {
	if hash == "" {
		if err := s.txQueryRow(ctx, tx, `SELECT resume_token_hash FROM flow_runs WHERE id = ?`, run.ID).Scan(&hash); err != nil {
			return "", err
		}
	}
	ttl := sus.TTL
	if ttl <= 0 {
		ttl = DefaultActionTTL
	}
	var options sql.NullString
	if len(sus.Options) > 0 {
		b, err := json.Marshal(sus.Options)
		if err != nil {
			return "", err
		}
		options = sql.NullString{String: string(b), Valid: true}
	}
	onExpiry := sus.OnExpiry
	if onExpiry == "" {
		onExpiry = FallbackFail
	}
	var budget sql.NullString
	if sus.Budget != nil {
		b, err := json.Marshal(sus.Budget)
		if err != nil {
			return "", err
		}
		budget = sql.NullString{String: string(b), Valid: true}
	}
	var call sql.NullString
	if sus.Call != nil {
		b, err := json.Marshal(sus.Call)
		if err != nil {
			return "", err
		}
		call = sql.NullString{String: string(b), Valid: true}
	}
	var remindAt int64
	if lead := reminderLead(ttl, sus.RemindBefore); lead > 0 {
		remindAt = ms(now.Add(ttl - lead))
	}
	id := newID()
	// The action takes the digest of the token handed to whoever submitted or last answered the
	// run: the raw token exists only in that response.
	_, err := s.txExec(ctx, tx, `INSERT INTO pending_actions (id, workspace_id, interaction_id, task_id, run_id, step, kind, prompt,
		options, status, expires_at, continuation_step, version, token_hash, created_at, on_expiry, expiry_default, expires_after_ms,
		remind_at, tool_call, budget)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, run.WorkspaceID, nullString(run.InteractionID), run.WorkTaskID, run.ID, sus.Step, sus.Kind, sus.Prompt, options, ActionCreated,
		ms(now.Add(ttl)), sus.Continuation, hash, ms(now), onExpiry, nullJSON(sus.Default), ttl.Milliseconds(), remindAt, call, budget)
	return id, err
}

// lockRun reads a run for update (row lock on PostgreSQL; SQLite transactions are already
// exclusive). With workspaceID set, a run of another workspace is not found.
// lockRunWithAction is lockRun of the workspace's run with its pending action actionID and the
// digest of the action's token, in one read: ErrNotFound when either is not there.
func (s *Store) lockRunWithAction(ctx context.Context, tx *sql.Tx, workspaceID, runID, actionID string) (FlowRun, PendingAction, string, error) {
	query := runWithActionQuery
	if s.db.Dialect() == store.Postgres {
		query += ` FOR NO KEY UPDATE OF r`
	}
	return scanRunWithAction(s.txQueryRow(ctx, tx, query, runID, workspaceID, actionID))
}

// runWithActionQuery reads a run of a workspace with one of its pending actions and the digest of
// the action's token.
var runWithActionQuery = `SELECT ` + runWithActionColumns + `, p.token_hash FROM flow_runs r
		JOIN pending_actions p ON p.run_id = r.id AND p.workspace_id = r.workspace_id
		WHERE r.id = ? AND r.workspace_id = ? AND p.id = ?`

// scanRunWithAction scans a row of runWithActionQuery.
func scanRunWithAction(row rowScanner) (FlowRun, PendingAction, string, error) {
	var (
		a    PendingAction
		hash string
	)
	// The row's run columns come first, then the action's: each scan takes its own.
	run, err := scanRun(scanFunc(func(runDest ...any) error {
		var err error
		a, hash, err = scanAction(scanFunc(func(actionDest ...any) error { return row.Scan(append(runDest, actionDest...)...) }))
		return err
	}))
	return run, a, hash, err
}

// scanFunc is a scanner of a func.
type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// columnsOf is columns, a list of column names, each named by alias ("r.").
func columnsOf(columns, alias string) string {
	names := strings.Split(columns, ",")
	for i, n := range names {
		names[i] = alias + strings.TrimSpace(n)
	}
	return strings.Join(names, ", ")
}

// runWithActionColumns are the columns of a run (r) and its action (p) that lockRunWithAction reads.
var runWithActionColumns = columnsOf(runColumns, "r.") + ", " + columnsOf(actionColumns, "p.")

func (s *Store) lockRun(ctx context.Context, tx *sql.Tx, runID, workspaceID string) (FlowRun, error) {
	query := `SELECT ` + runColumns + ` FROM flow_runs WHERE id = ?`
	args := []any{runID}
	if workspaceID != "" {
		query += ` AND workspace_id = ?`
		args = append(args, workspaceID)
	}
	if s.db.Dialect() == store.Postgres {
		query += ` FOR NO KEY UPDATE`
	}
	return scanRun(s.txQueryRow(ctx, tx, query, args...))
}

// saveRun writes next over old (the version read in the same transaction), bumps the version and
// keeps the WorkItem's status, result and reason in step with the run.
func (s *Store) saveRun(ctx context.Context, tx *sql.Tx, old, next FlowRun, now time.Time) (FlowRun, error) {
	return s.writeRun(ctx, tx, old, next, now, `lease_expires_at = ?`, []any{ms(next.LeaseExpiresAt)}, ` AND version = ?`, old.Version)
}

// saveHeldRun is saveRun over old as owner's worker holds it, not read in the transaction: the
// write finds the run only if it is still that version, Pending or Running under owner's lease
// (ErrLeaseLost otherwise), and keeps its lease expiry unless next gives the lease up.
func (s *Store) saveHeldRun(ctx context.Context, tx *sql.Tx, old, next FlowRun, owner string, now time.Time) (FlowRun, error) {
	next, err := s.writeRun(ctx, tx, old, next, now, `lease_expires_at = CASE WHEN ? = '' THEN 0 ELSE lease_expires_at END`,
		[]any{next.LeaseOwner}, ` AND version = ? AND lease_owner = ? AND state IN ('Pending', 'Running')`, old.Version, owner)
	if errors.Is(err, ErrStale) {
		return next, fmt.Errorf("run %s was changed by another since its worker's last transition: %w", old.ID, ErrLeaseLost)
	}
	return next, err
}

// saveClaimedRun is saveRun over old as read claimable, not read in the transaction, which next
// leases: the write finds the run only if it is still that version, Pending or Running, its lease
// expired (ErrLeaseLost otherwise).
func (s *Store) saveClaimedRun(ctx context.Context, tx *sql.Tx, old, next FlowRun, now time.Time) (FlowRun, error) {
	next, err := s.writeRun(ctx, tx, old, next, now, `lease_expires_at = ?`, []any{ms(next.LeaseExpiresAt)},
		` AND version = ? AND state IN ('Pending', 'Running') AND lease_expires_at < ?`, old.Version, ms(now))
	if errors.Is(err, ErrStale) {
		return next, fmt.Errorf("run %s was taken or changed since it was read claimable: %w", old.ID, ErrLeaseLost)
	}
	return next, err
}

// writeRun writes next's fields over the run old with the lease expiry set by leaseSet and the
// condition where, leaseSet's and where's arguments in args; ErrStale when no run matched.
func (s *Store) writeRun(ctx context.Context, tx *sql.Tx, old, next FlowRun, now time.Time, leaseSet string, setArgs []any, where string,
	whereArgs ...any) (FlowRun, error) {
	next.Version = old.Version + 1
	next.UpdatedAt = now.UTC().Truncate(time.Millisecond)
	args := append([]any{next.FlowDigest, nullJSON(next.Snapshot), nullJSON(next.Agents), next.State, next.PausedFrom, next.CurrentStep,
		boolInt(next.StepStarted), next.Attempt, string(next.Data), nullJSON(next.Result), next.Reason, next.LeaseOwner}, setArgs...)
	args = append(append(args, next.Version, ms(now), old.ID), whereArgs...)
	res, err := s.txExec(ctx, tx, `UPDATE flow_runs SET flow_digest = ?, flow_snapshot = ?, agents = ?, state = ?,
		paused_from = ?, current_step = ?, step_started = ?, attempt = ?, data = ?, result = ?, reason = ?, lease_owner = ?,
		`+leaseSet+`, version = ?, updated_at = ? WHERE id = ?`+where, args...)
	if err != nil {
		return next, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return next, errors.Join(err, fmt.Errorf("run %s changed concurrently: %w", old.ID, ErrStale))
	}
	if old.State != next.State || next.Result != nil || next.Reason != old.Reason {
		_, err = s.txExec(store.Pipelined(ctx), tx, `UPDATE work_items SET status = ?, result = ?, reason = ?, updated_at = ? WHERE id = ?`,
			workItemStatus(next), nullJSON(next.Result), next.Reason, ms(now), next.WorkItemID)
	}
	return next, err
}

// workItemStatus mirrors the run's state; a paused run's WorkItem is Paused.
func workItemStatus(r FlowRun) string { return r.State }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Answer is a person's response to a PendingAction: Value for text and choice, Confirmed for
// confirmation.
type Answer struct {
	Value     *string
	Confirmed *bool
	// Approved and Reason answer an approval.
	Approved *bool
	Reason   string
	// File answers a file action: its bytes are in the artifact store already.
	File *FileAnswer
}

// FileAnswer is the file a person sent: what the run learns of it (never its storage key).
type FileAnswer struct {
	Name       string `json:"name"`
	MediaType  string `json:"mediaType"`
	Length     int64  `json:"length"`
	ArtifactID string `json:"artifactId"`
}

// Response answers a PendingAction. Every id must match: the action of that run in that
// workspace, and the token of that action.
type Response struct {
	WorkspaceID string
	RunID       string
	ActionID    string
	Token       string
	// PrincipalID is who answered; it is recorded on the action.
	PrincipalID string
	Answer      Answer
	// SkipToken answers without the resume token: for the question of an autonomous Task,
	// which nobody received a token for. The caller has checked who may answer.
	SkipToken bool
	// Lease, when set, commits the resumed run already leased to a worker of this process that
	// starts it at once (Reservation), instead of leaving it for any worker to claim. A run that
	// stays Paused is not leased.
	Lease *Lease
	// MayAnswerEscalated says, in the answer's own transaction and only for an action escalated
	// to the workspace's Owners and Admins, whether PrincipalID is one of them: a check made
	// before the transaction would let an escalation committed in between be answered by anyone.
	// Nil refuses every escalated action.
	MayAnswerEscalated func(ctx context.Context, tx *sql.Tx) (bool, error)
}

// checkAnswer validates an answer against the action and returns the value recorded.
func checkAnswer(a PendingAction, ans Answer) (any, error) {
	switch a.Kind {
	case KindText:
		if ans.Value == nil || *ans.Value == "" {
			return nil, fmt.Errorf("a text action is answered with a non-empty value: %w", ErrInvalidInput)
		}
		return *ans.Value, nil
	case KindChoice:
		if ans.Value == nil {
			return nil, fmt.Errorf("a choice is answered with the value of one of its options: %w", ErrInvalidInput)
		}
		for _, o := range a.Options {
			if o.Value == *ans.Value {
				return o.Value, nil
			}
		}
		// The answer is not repeated: Problem Details never echo submitted values.
		return nil, fmt.Errorf("the value is not one of the options of the choice: %w", ErrInvalidInput)
	case KindConfirmation:
		if ans.Confirmed == nil {
			return nil, fmt.Errorf("a confirmation is answered with confirmed true or false: %w", ErrInvalidInput)
		}
		return *ans.Confirmed, nil
	case KindApproval:
		if ans.Approved == nil {
			return nil, fmt.Errorf("an approval is answered with approved true or false: %w", ErrInvalidInput)
		}
		return map[string]any{"approved": *ans.Approved, "reason": ans.Reason}, nil
	case KindFile:
		if ans.File == nil || ans.File.ArtifactID == "" {
			return nil, fmt.Errorf("a file action is answered with a file: %w", ErrInvalidInput)
		}
		return ans.File, nil
	}
	return nil, fmt.Errorf("%s actions cannot be answered: %w", a.Kind, ErrInvalidInput)
}

// Respond completes a PendingAction atomically and resumes its run at the continuation step. A
// wrong token is ErrInvalidToken; an action already resolved or expired is ErrConflict; an
// escalated action answered by someone MayAnswerEscalated refuses is ErrEscalated; an answer
// that does not fit the action is ErrInvalidInput. It returns the completed action, the
// resumed run and a fresh resume token for the run's next PendingAction.
func (s *Store) Respond(ctx context.Context, r Response) (PendingAction, FlowRun, string, error) {
	var (
		action PendingAction
		run    FlowRun
		token  string
	)
	err := s.inTxNotify(ctx, func() []string { return runTopics(run, true) }, func(tx *sql.Tx) error {
		old, a, hash, err := s.lockRunWithAction(ctx, tx, r.WorkspaceID, r.RunID, r.ActionID)
		if err != nil {
			return err
		}
		now := s.now()
		if err := checkResponse(r, a, hash, now); err != nil {
			return err
		}
		// The run is locked, and an escalation locks it first too: what is read here holds
		// until this transaction commits.
		if err := mayAnswerEscalated(ctx, tx, a, r.MayAnswerEscalated); err != nil {
			return err
		}
		res, err := responseResolution(r, a)
		if err != nil {
			return err
		}
		next, err := s.resolveTx(ctx, tx, &a, old, res, now)
		if err != nil {
			return err
		}
		events := next.events
		var newHash string
		token, newHash = NewResumeToken()
		if r.Lease != nil && next.run.State == StateRunning {
			next.run.LeaseOwner, next.run.LeaseExpiresAt = r.Lease.Owner, r.Lease.Until.UTC().Truncate(time.Millisecond)
		}
		// The fresh token's digest is written with the run, in its one UPDATE.
		if run, err = s.writeRun(ctx, tx, old, next.run, now, `lease_expires_at = ?, resume_token_hash = ?`,
			[]any{ms(next.run.LeaseExpiresAt), newHash}, ` AND version = ?`, old.Version); err != nil {
			return err
		}
		action = a
		return s.appendEvents(ctx, tx, run, now, events...)
	})
	return action, run, token, err
}

// checkResponse refuses r when its token does not match the action's (hash) or the action is no
// longer open at now.
func checkResponse(r Response, a PendingAction, hash string, now time.Time) error {
	switch {
	case !r.SkipToken && !tokenMatches(r.Token, hash):
		return fmt.Errorf("the resume token does not match the pending action: %w", ErrInvalidToken)
	case a.Status != ActionCreated:
		return fmt.Errorf("the pending action is already %s: %w", a.Status, ErrConflict)
	case !now.Before(a.ExpiresAt):
		return fmt.Errorf("the pending action expired at %s: %w", a.ExpiresAt.Format(time.RFC3339), ErrConflict)
	}
	return nil
}

// responseResolution is how r's answer resolves the open action a; ErrInvalidInput when it does
// not fit a.
func responseResolution(r Response, a PendingAction) (resolution, error) {
	value, err := checkAnswer(a, r.Answer)
	if err != nil {
		return resolution{}, err
	}
	var approved *bool
	if a.Kind == KindApproval {
		approved = r.Answer.Approved
	}
	return resolution{status: ActionCompleted, resolution: ResolutionAnswered, by: r.PrincipalID, value: value, approved: approved,
		reason: r.Answer.Reason, told: Event{Type: EventPendingActionResolved, Step: a.Step, Reason: "pending action " + a.ID}}, nil
}

// PreparedResponse is an answer checked against its action and run as they were read, not
// written yet: RespondApplied writes it with the first transition of the resumed run.
type PreparedResponse struct {
	// Action is the action as the answer resolves it; Run the run it resumes, Running and leased
	// to the response's Lease, at the version read.
	Action PendingAction
	Run    FlowRun
	// Token is the fresh resume token of the run's next action, handed to the answerer only;
	// hash is what is stored.
	Token string
	hash  string
	// old is the run as read; events tell the answer and the resumption.
	old    FlowRun
	events []Event
}

// PrepareResponse reads the run and the action r answers and checks the answer as Respond does,
// without writing anything or locking: RespondApplied writes it later only if neither changed
// meanwhile. Its errors are Respond's. ok is false, with no error, when the answer is one that
// only Respond gives: without a Lease, to an escalated action (who may answer it is read in
// the answer's transaction), to an approval that may decide a tool call (the step reads the
// decision from the store when it resumes), or of a run that is not waiting on it
// (Paused: the run stays so).
func (s *Store) PrepareResponse(ctx context.Context, r Response) (p PreparedResponse, ok bool, err error) {
	if r.Lease == nil {
		return p, false, nil
	}
	old, a, hash, err := scanRunWithAction(s.queryRow(ctx, runWithActionQuery, r.RunID, r.WorkspaceID, r.ActionID))
	if err != nil {
		return p, false, err
	}
	now := s.now()
	if err := checkResponse(r, a, hash, now); err != nil {
		return p, false, err
	}
	if !a.EscalatedAt.IsZero() || (a.Kind == KindApproval && a.Budget == nil) || old.State != StateActionRequired {
		return p, false, nil
	}
	res, err := responseResolution(r, a)
	if err != nil {
		return p, false, err
	}
	if err := res.apply(&a, now); err != nil {
		return p, false, err
	}
	next, err := resolvedRun(a, old, res, false, nil)
	if err != nil {
		return p, false, err
	}
	next.run.LeaseOwner, next.run.LeaseExpiresAt = r.Lease.Owner, r.Lease.Until.UTC().Truncate(time.Millisecond)
	// Each event says the run's state as the answer left it, whatever the run's first
	// transition, committed with them, leaves it.
	for i := range next.events {
		if next.events[i].State == "" {
			next.events[i].State = next.run.State
		}
	}
	p = PreparedResponse{Action: a, Run: next.run, old: old, events: next.events}
	p.Token, p.hash = NewResumeToken()
	return p, true, nil
}

// RespondApplied writes a prepared answer together with the first transition t of the run it
// resumes, which owner holds (the answer's Lease), in one transaction and one commit: the action
// resolved, the run as t leaves it with the fresh token's digest, the answer's events and t's,
// and what the Observer projects of them. The action is resolved only while it is open at the
// version read and the run only while it is at the version read, so that an answer racing an
// expiry, an escalation, a reissued token or another answer resolves the action once; a
// changed one is ErrStale and nothing is written (Respond then tells the answerer what became
// of the action). Until it commits nothing of the answer exists, so the answerer is
// acknowledged only after; a crash before loses an answer nobody was told was taken, and the
// steps t records ran only in the process (they made no call outside it: the executor commits
// before any). It returns the action and the run as committed.
func (s *Store) RespondApplied(ctx context.Context, p PreparedResponse, owner string, t Transition) (PendingAction, FlowRun, error) {
	var out FlowRun
	if p.Run.LeaseOwner != owner || owner == "" {
		return p.Action, out, fmt.Errorf("run %s is leased to %q: %w", p.Run.ID, p.Run.LeaseOwner, ErrLeaseLost)
	}
	err := s.inTxNotify(ctx, func() []string { return runTopics(out, true) }, func(tx *sql.Tx) error {
		now := s.now()
		next, events, err := transitioned(p.Run, t)
		if err != nil {
			return err
		}
		// The run first, as every writer of it locks it before its action (an expiry, a
		// reminder, Respond): never the other way round.
		out, err = s.writeRun(ctx, tx, p.old, next, now, `lease_expires_at = ?, resume_token_hash = ?`,
			[]any{ms(next.LeaseExpiresAt), p.hash}, ` AND version = ?`, p.old.Version)
		if err != nil {
			return err
		}
		if err := s.writeResolved(ctx, tx, p.Action, ErrStale); err != nil {
			return err
		}
		if t.Suspend != nil {
			if err := s.suspend(ctx, tx, out, *t.Suspend, now, p.hash, &events); err != nil {
				return err
			}
		}
		if len(t.Usage) > 0 {
			if events, err = s.recordUsage(ctx, tx, out, t.Usage, events, now, t.UsageFresh, t.Prior); err != nil {
				return err
			}
		}
		return s.appendEvents(ctx, tx, out, now, append(append([]Event{}, p.events...), events...)...)
	})
	if err != nil {
		return p.Action, out, err
	}
	s.settled.keep(out)
	return p.Action, out, nil
}

// mayAnswerEscalated refuses an escalated action a, with ErrEscalated, unless may (read in tx)
// says the caller is one of those it was escalated to; nil may refuses it.
func mayAnswerEscalated(ctx context.Context, tx *sql.Tx, a PendingAction, may func(context.Context, *sql.Tx) (bool, error)) error {
	if a.EscalatedAt.IsZero() {
		return nil
	}
	ok := false
	if may != nil {
		var err error
		if ok, err = may(ctx, tx); err != nil {
			return err
		}
	}
	if !ok {
		return fmt.Errorf("nobody answered this question in time and it was escalated to the workspace's Owners and Admins: only they may answer it now: %w", ErrEscalated)
	}
	return nil
}

// resolution is how an open PendingAction ends: answered by a person, or expired into its
// fallback.
type resolution struct {
	// status is ActionCompleted or ActionExpired; resolution one of Resolution*.
	status, resolution string
	// by is who answered (ExpiryDecider on expiry); value the answer recorded, approved and
	// reason an approval's decision.
	by       string
	value    any
	approved *bool
	reason   string
	// told is the event that tells the action's end (resolved or expired).
	told Event
}

// resolved is a run's next state after its action was resolved, with the events that tell it.
type resolved struct {
	run    FlowRun
	events []Event
}

// resolveTx ends the open action a of run old (locked in tx) exactly once: the update is
// conditional on the action's version and open status, so of an answer and an expiry that race
// one wins and the other finds the action resolved (ErrConflict). The run goes on at the
// continuation step with the answer (resolvedRun); an approval of a tool call decides the call.
func (s *Store) resolveTx(ctx context.Context, tx *sql.Tx, a *PendingAction, old FlowRun, r resolution, now time.Time) (resolved, error) {
	var (
		toolEvents []Event
		toolCall   bool
	)
	if a.Kind == KindApproval && r.approved != nil && a.Budget == nil {
		// An approval either decides a tool call that a model asked for (the step goes on
		// with the decision) or answers a step that asks before it runs.
		decided, err := s.decideToolCall(ctx, tx, *a, r.by, *r.approved, r.reason)
		switch {
		case err == nil:
			toolCall, toolEvents = true, []Event{decided}
		case !errors.Is(err, ErrNotFound):
			return resolved{}, err
		}
	}
	if err := r.apply(a, now); err != nil {
		return resolved{}, err
	}
	if err := s.writeResolved(ctx, tx, *a, ErrConflict); err != nil {
		return resolved{}, err
	}
	return resolvedRun(*a, old, r, toolCall, toolEvents)
}

// apply sets the open action a as r resolves it at now, at its next version.
func (r resolution) apply(a *PendingAction, now time.Time) error {
	answer, err := json.Marshal(r.value)
	if err != nil {
		return err
	}
	a.Status, a.Resolution, a.Version, a.AnsweredBy, a.Answer, a.AnsweredAt = r.status, r.resolution, a.Version+1, r.by, answer, fromMS(ms(now))
	return nil
}

// writeResolved writes the action a as a resolution left it (apply) over the open action at the
// version before; changed is the error when it is no longer that (resolved concurrently).
func (s *Store) writeResolved(ctx context.Context, tx *sql.Tx, a PendingAction, changed error) error {
	res, err := s.txExec(ctx, tx, `UPDATE pending_actions SET status = ?, resolution = ?, remind_at = 0, version = version + 1,
		answered_by = ?, answer = ?, answered_at = ? WHERE id = ? AND version = ? AND status = ?`,
		a.Status, a.Resolution, a.AnsweredBy, string(a.Answer), ms(a.AnsweredAt), a.ID, a.Version-1, ActionCreated)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(err, fmt.Errorf("the pending action was resolved concurrently: %w", changed))
	}
	return nil
}

// resolvedRun is run old going on at the continuation step of its action a, resolved by r: an
// approval of a tool call (toolCall, decided by toolEvents) lets the step find the decision; a
// step that asked before it runs sees the answer; an Agent that asked completes with it.
func resolvedRun(a PendingAction, old FlowRun, r resolution, toolCall bool, toolEvents []Event) (resolved, error) {
	data, err := old.DecodeData()
	if err != nil {
		return resolved{}, err
	}
	switch {
	case a.Budget != nil:
		// The Agent step finds the decision on the budget before its next model call: approved,
		// the run goes on past that budget for the rest of its period; rejected, the step fails.
		if data.Budgets == nil {
			data.Budgets = map[string]BudgetDecision{}
		}
		d := BudgetDecision{By: r.by, Reason: r.reason}
		if r.approved != nil {
			d.Approved = *r.approved
		}
		data.Budgets[a.Budget.Key] = d
	case toolCall:
		// The Agent step finds the decision on its tool call when it runs again.
	case a.ContinuationStep == a.Step:
		// A step that asked before it runs sees the answer when it runs.
		if data.Answers == nil {
			data.Answers = map[string]any{}
		}
		data.Answers[a.Step] = r.value
	default:
		// An Agent that requested input completes with the answer as its output.
		output := map[string]any{"action": actionOfKind(a.Kind), "answer": r.value}
		data.Steps[a.Step], data.Current = output, output
	}
	next := old
	if next.Data, err = json.Marshal(data); err != nil {
		return resolved{}, err
	}
	next.CurrentStep, next.StepStarted, next.Attempt = a.ContinuationStep, false, 1
	told, left := r.told, a
	told.Action = &left
	events := append([]Event{told}, toolEvents...)
	switch old.State {
	case StateActionRequired:
		next.State = StateRunning
		events = append(events, Event{Type: EventRunResumed, Step: a.ContinuationStep, State: StateRunning})
	case StatePaused:
		next.PausedFrom = StateRunning
	}
	return resolved{run: next, events: events}, nil
}

// actionOfKind is the functional action that asks for input of kind.
func actionOfKind(kind string) string {
	switch kind {
	case KindChoice:
		return "requestChoice"
	case KindConfirmation:
		return "requestConfirmation"
	}
	return "requestInput"
}

// Pause stops a Pending, Running or ActionRequired run until Resume. A worker executing it
// notices at its next transition and drops it; a PendingAction stays answerable.
func (s *Store) Pause(ctx context.Context, workspaceID, runID string) (FlowRun, error) {
	return s.change(ctx, workspaceID, runID, func(old FlowRun, next *FlowRun) ([]Event, error) {
		switch old.State {
		case StatePending, StateRunning, StateActionRequired:
		default:
			return nil, fmt.Errorf("a %s run cannot be paused: %w", old.State, ErrConflict)
		}
		next.State, next.PausedFrom = StatePaused, old.State
		if old.State == StatePending {
			next.PausedFrom = StateRunning
		}
		next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
		return []Event{{Type: EventRunPaused, Step: old.CurrentStep}}, nil
	})
}

// Resume continues a paused run where it stopped.
func (s *Store) Resume(ctx context.Context, workspaceID, runID string) (FlowRun, error) {
	return s.change(ctx, workspaceID, runID, func(old FlowRun, next *FlowRun) ([]Event, error) {
		if old.State != StatePaused {
			return nil, fmt.Errorf("a %s run cannot be resumed; only a Paused one: %w", old.State, ErrConflict)
		}
		next.State, next.PausedFrom = old.PausedFrom, ""
		if next.State == "" {
			next.State = StateRunning
		}
		return []Event{{Type: EventRunResumed, Step: old.CurrentStep}}, nil
	})
}

// Cancel ends a run that is not terminal; its open PendingAction is cancelled with it.
func (s *Store) Cancel(ctx context.Context, workspaceID, runID, reason string) (FlowRun, error) {
	return s.change(ctx, workspaceID, runID, cancel(reason))
}

// CancelTx is Cancel in a transaction of InTx, which announces the change once it committed: a
// Trigger cancels the Work of earlier occurrences in the transaction that submits a new one.
func (s *Store) CancelTx(ctx context.Context, tx *sql.Tx, workspaceID, runID, reason string) (FlowRun, error) {
	run, err := s.changeTx(ctx, tx, workspaceID, runID, cancel(reason))
	if err == nil {
		s.announce(tx, runTopics(run, true)...)
	}
	return run, err
}

func cancel(reason string) func(old FlowRun, next *FlowRun) ([]Event, error) {
	return func(old FlowRun, next *FlowRun) ([]Event, error) {
		if Terminal(old.State) {
			return nil, fmt.Errorf("the run is already %s: %w", old.State, ErrConflict)
		}
		next.State, next.PausedFrom, next.Reason = StateCancelled, "", reason
		next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
		return []Event{{Type: EventRunCancelled, Step: old.CurrentStep, Reason: reason}}, nil
	}
}

// change applies a transition that a caller (not a worker) makes, in one transaction.
func (s *Store) change(ctx context.Context, workspaceID, runID string, fn func(old FlowRun, next *FlowRun) ([]Event, error)) (FlowRun, error) {
	var out FlowRun
	err := s.inTxNotify(ctx, func() []string { return runTopics(out, true) }, func(tx *sql.Tx) error {
		var err error
		out, err = s.changeTx(ctx, tx, workspaceID, runID, fn)
		return err
	})
	return out, err
}

func (s *Store) changeTx(ctx context.Context, tx *sql.Tx, workspaceID, runID string, fn func(old FlowRun, next *FlowRun) ([]Event, error)) (FlowRun, error) {
	old, err := s.lockRun(ctx, tx, runID, workspaceID)
	if err != nil {
		return FlowRun{}, err
	}
	next := old
	events, err := fn(old, &next)
	if err != nil {
		return FlowRun{}, err
	}
	now := s.now()
	if Terminal(next.State) {
		if _, err := s.txExec(ctx, tx, `UPDATE pending_actions SET status = ?, version = version + 1
			WHERE run_id = ? AND status = ?`, ActionCancelled, runID, ActionCreated); err != nil {
			return FlowRun{}, err
		}
	}
	out, err := s.saveRun(ctx, tx, old, next, now)
	if err != nil {
		return FlowRun{}, err
	}
	return out, s.appendEvents(ctx, tx, out, now, events...)
}

// Delete removes a terminal run with its history and PendingActions, atomically, when version is
// its current version. A run that is not terminal is ErrConflict; another version ErrStale.
func (s *Store) Delete(ctx context.Context, workspaceID, runID string, version int64) error {
	return s.inTxNotify(ctx, func() []string { return []string{RunTopic(runID), WorkspaceTopic(workspaceID)} }, func(tx *sql.Tx) error {
		run, err := s.lockRun(ctx, tx, runID, workspaceID)
		if err != nil {
			return err
		}
		if run.Version != version {
			return fmt.Errorf("the run is at version %d: %w", run.Version, ErrStale)
		}
		if !Terminal(run.State) {
			return fmt.Errorf("a %s run cannot be deleted; only Completed, Failed or Cancelled ones: %w", run.State, ErrConflict)
		}
		// Events and actions go with the run (ON DELETE CASCADE); deleting them first keeps the
		// statement order explicit on both dialects.
		for _, q := range []string{`DELETE FROM pending_actions WHERE run_id = ?`, `DELETE FROM flow_run_events WHERE run_id = ?`,
			`DELETE FROM flow_run_tool_calls WHERE run_id = ?`,
			`DELETE FROM flow_runs WHERE id = ?`} {
			if _, err := s.txExec(ctx, tx, q, runID); err != nil {
				return err
			}
		}
		if d, ok := s.Observer.(DeleteObserver); ok {
			return d.ObserveDeleted(ctx, tx, run)
		}
		return nil
	})
}

// maxDuePerSweep bounds the actions one sweep of expiries or reminders reads; the next sweep
// takes the rest.
const maxDuePerSweep = 256

// dueActions are the ids and runs of at most maxDuePerSweep open actions whose column is due.
func (s *Store) dueActions(ctx context.Context, where string, args ...any) ([][2]string, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT id, run_id FROM pending_actions WHERE status = ? AND `+where+
		` ORDER BY id LIMIT `+fmt.Sprint(maxDuePerSweep)), append([]any{ActionCreated}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list [][2]string
	for rows.Next() {
		var d [2]string
		if err := rows.Scan(&d[0], &d[1]); err != nil {
			return nil, err
		}
		list = append(list, d)
	}
	return list, rows.Err()
}

// ExpirePendingActions turns the open actions past their expiry into their declared fallback:
// fail the run (the default: a run cannot wait for an answer that can no longer come), reject
// (an approval is rejected, a confirmation answered false, and the run goes on), proceed with
// the declared default answer, or escalate (once: the action waits as long again for the
// workspace's Owners and Admins, then fails). Each outcome is one transaction that locks the run
// first, as an answer does, and changes the action only while it is still open at the version
// read, so an answer and an expiry that race resolve it once. It returns how many expired.
func (s *Store) ExpirePendingActions(ctx context.Context) (int, error) {
	list, err := s.dueActions(ctx, `expires_at <= ?`, ms(s.now()))
	if err != nil {
		return 0, err
	}
	expired := 0
	for _, d := range list {
		var changed FlowRun
		err := s.inTxNotify(ctx, func() []string { return runTopics(changed, true) }, func(tx *sql.Tx) error {
			old, err := s.lockRun(ctx, tx, d[1], "")
			if err != nil {
				return err
			}
			changed = old
			a, _, err := scanAction(s.txQueryRow(ctx, tx, `SELECT `+actionColumns+`, token_hash FROM pending_actions WHERE id = ?`, d[0]))
			if err != nil {
				return err
			}
			now := s.now()
			if a.Status != ActionCreated || now.Before(a.ExpiresAt) {
				return nil // answered, cancelled or escalated meanwhile
			}
			expired++
			changed, err = s.expireTx(ctx, tx, &a, old, now)
			return err
		})
		if err != nil {
			return expired, err
		}
	}
	return expired, nil
}

// expireTx turns the expired action a of run old into its fallback.
func (s *Store) expireTx(ctx context.Context, tx *sql.Tx, a *PendingAction, old FlowRun, now time.Time) (FlowRun, error) {
	var (
		fallback      string
		defaultAnswer sql.NullString
		afterMS       int64
	)
	if err := s.txQueryRow(ctx, tx, `SELECT on_expiry, expiry_default, expires_after_ms FROM pending_actions WHERE id = ?`, a.ID).
		Scan(&fallback, &defaultAnswer, &afterMS); err != nil {
		return old, err
	}
	told := func(what string) Event {
		return Event{Type: EventPendingActionExpired, Step: a.Step, Reason: "pending action " + a.ID + ": " + what}
	}
	if Terminal(old.State) {
		fallback = FallbackFail
	}
	var answer *Answer
	switch fallback {
	case FallbackEscalate:
		if !a.EscalatedAt.IsZero() {
			break // escalated once already: nobody answered, the run fails
		}
		after := time.Duration(afterMS) * time.Millisecond
		if after <= 0 {
			after = DefaultActionTTL
		}
		// The Owners and Admins are reminded once before this second expiry too (a quarter of
		// the wait, at most an hour: the declared lead is not kept), after which the run fails.
		res, err := s.txExec(ctx, tx, `UPDATE pending_actions SET expires_at = ?, escalated_at = ?, remind_at = ?, version = version + 1
			WHERE id = ? AND version = ? AND status = ?`, ms(now.Add(after)), ms(now), ms(now.Add(after-reminderLead(after, 0))),
			a.ID, a.Version, ActionCreated)
		if err != nil {
			return old, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return old, errors.Join(err, fmt.Errorf("the pending action was resolved concurrently: %w", ErrConflict))
		}
		return old, s.appendEvents(ctx, tx, old, now, Event{Type: EventPendingActionEscalated, Step: a.Step,
			Reason: fmt.Sprintf("pending action %s: nobody answered in time; it waits until %s for the workspace's Owners and Admins",
				a.ID, now.Add(after).UTC().Format(time.RFC3339))})
	case FallbackReject:
		no, reason := false, "nobody decided before the question expired"
		switch a.Kind {
		case KindApproval:
			answer = &Answer{Approved: &no, Reason: reason}
		case KindConfirmation:
			answer = &Answer{Confirmed: &no}
		}
	case FallbackProceed:
		answer = defaultAnswerOf(a.Kind, defaultAnswer.String)
	}
	if answer != nil {
		value, err := checkAnswer(*a, *answer)
		if err == nil {
			r := resolution{status: ActionExpired, resolution: ResolutionProceeded, by: ExpiryDecider, value: value, approved: answer.Approved,
				reason: answer.Reason, told: told("nobody answered in time; proceeded with the declared default answer")}
			if fallback == FallbackReject {
				r.resolution, r.told = ResolutionRejected, told("nobody answered in time; rejected")
			}
			next, err := s.resolveTx(ctx, tx, a, old, r, now)
			if err != nil {
				return old, err
			}
			run, err := s.saveRun(ctx, tx, old, next.run, now)
			if err != nil {
				return old, err
			}
			return run, s.appendEvents(ctx, tx, run, now, next.events...)
		}
		// A default that no longer answers the question (checked at admission) fails the run.
	}
	res, err := s.txExec(ctx, tx, `UPDATE pending_actions SET status = ?, resolution = ?, remind_at = 0, version = version + 1
		WHERE id = ? AND version = ? AND status = ?`, ActionExpired, ResolutionFailed, a.ID, a.Version, ActionCreated)
	if err != nil {
		return old, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return old, errors.Join(err, fmt.Errorf("the pending action was resolved concurrently: %w", ErrConflict))
	}
	if Terminal(old.State) {
		return old, nil
	}
	next := old
	next.State, next.PausedFrom, next.Reason = StateFailed, "", "the pending action expired before it was answered"
	next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
	run, err := s.saveRun(ctx, tx, old, next, now)
	if err != nil {
		return old, err
	}
	return run, s.appendEvents(ctx, tx, run, now, told("nobody answered in time; the run fails"),
		Event{Type: EventRunFailed, Step: old.CurrentStep, Reason: next.Reason})
}

// defaultAnswerOf is the answer a declared default (JSON) gives a question of kind; nil when it
// gives none.
func defaultAnswerOf(kind, raw string) *Answer {
	var v any
	if raw == "" || json.Unmarshal([]byte(raw), &v) != nil {
		return nil
	}
	switch x := v.(type) {
	case string:
		if kind == KindText || kind == KindChoice {
			return &Answer{Value: &x}
		}
	case bool:
		switch kind {
		case KindConfirmation:
			return &Answer{Confirmed: &x}
		case KindApproval:
			return &Answer{Approved: &x, Reason: "nobody decided before the question expired; the declared default applies"}
		}
	}
	return nil
}

// RemindPendingActions tells, once, about each open action whose expiry is near: an event of its
// run (which the Workplace turns into a reminder notification and an activity of the Task). It
// returns how many were reminded.
func (s *Store) RemindPendingActions(ctx context.Context) (int, error) {
	now := ms(s.now())
	list, err := s.dueActions(ctx, `remind_at > 0 AND remind_at <= ? AND expires_at > ?`, now, now)
	if err != nil {
		return 0, err
	}
	reminded := 0
	for _, d := range list {
		var old FlowRun
		// Run by the announcing transaction, so that what the Observer writes for the reminder
		// (the Workplace's notification and its outbox) commits and wakes its subscribers.
		err := s.inTxNotify(ctx, func() []string { return runTopics(old, false) }, func(tx *sql.Tx) error {
			var err error
			old, err = s.lockRun(ctx, tx, d[1], "")
			if err != nil {
				return err
			}
			var expiresAt int64
			if err := s.txQueryRow(ctx, tx, `SELECT expires_at FROM pending_actions WHERE id = ?`, d[0]).Scan(&expiresAt); err != nil {
				return err
			}
			res, err := s.txExec(ctx, tx, `UPDATE pending_actions SET remind_at = 0 WHERE id = ? AND status = ? AND remind_at > 0`,
				d[0], ActionCreated)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return err // answered or reminded meanwhile
			}
			reminded++
			step := old.CurrentStep
			return s.appendEvents(ctx, tx, old, s.now(), Event{Type: EventPendingActionReminded, Step: step,
				Reason: fmt.Sprintf("pending action %s: nobody answered yet; it expires at %s", d[0], fromMS(expiresAt).Format(time.RFC3339))})
		})
		if err != nil {
			return reminded, err
		}
	}
	return reminded, nil
}

// MaxReissuesPerMinute bounds how many fresh resume tokens one pending action is given in a
// minute: enough for a person's tabs and devices, too few to grind at a question.
const MaxReissuesPerMinute = 5

// ErrTooManyReissues refuses a reissue over MaxReissuesPerMinute.
var ErrTooManyReissues = errors.New("too many resume tokens reissued")

// Reissue asks for a fresh resume token for an open PendingAction of a run of the workspace.
type Reissue struct {
	WorkspaceID string
	RunID       string
	ActionID    string
	// Record, when set, writes the durable record of the reissue in its transaction (who, which
	// action, when; never the token).
	Record func(tx *sql.Tx) error
	// MayAnswerEscalated is Response.MayAnswerEscalated: a token is not given for an escalated
	// action to someone who may not answer it (it would only stop the token of one who may).
	MayAnswerEscalated func(ctx context.Context, tx *sql.Tx) (bool, error)
}

// ReissueResumeToken gives an open PendingAction a fresh single-use resume token: its stored hash
// is replaced in one UPDATE guarded by the action's version, so the token given before stops
// answering it, and the raw token is returned only here. An action no longer open is
// ErrConflict; more than MaxReissuesPerMinute in a minute ErrTooManyReissues.
func (s *Store) ReissueResumeToken(ctx context.Context, r Reissue) (PendingAction, string, error) {
	var (
		action PendingAction
		token  string
	)
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		var window int64
		var reissues int
		a, _, err := scanAction(s.txQueryRow(ctx, tx, `SELECT `+actionColumns+`, token_hash FROM pending_actions
			WHERE id = ? AND run_id = ? AND workspace_id = ?`, r.ActionID, r.RunID, r.WorkspaceID))
		if err != nil {
			return err
		}
		if err := s.txQueryRow(ctx, tx, `SELECT reissue_window_at, reissues FROM pending_actions WHERE id = ?`, a.ID).Scan(&window, &reissues); err != nil {
			return err
		}
		now := s.now()
		switch {
		case a.Status != ActionCreated:
			return fmt.Errorf("the pending action is already %s: %w", a.Status, ErrConflict)
		case !now.Before(a.ExpiresAt):
			return fmt.Errorf("the pending action expired at %s: %w", a.ExpiresAt.Format(time.RFC3339), ErrConflict)
		}
		// An escalation committed after this read changes the action's version: the guarded
		// UPDATE below then finds it changed.
		if err := mayAnswerEscalated(ctx, tx, a, r.MayAnswerEscalated); err != nil {
			return err
		}
		if now.Sub(fromMS(window)) >= time.Minute {
			window, reissues = ms(now), 0
		}
		if reissues >= MaxReissuesPerMinute {
			return fmt.Errorf("the pending action was given %d resume tokens in a minute; try again later: %w", reissues, ErrTooManyReissues)
		}
		var hash string
		token, hash = NewResumeToken()
		res, err := s.txExec(ctx, tx, `UPDATE pending_actions SET token_hash = ?, reissue_window_at = ?, reissues = ?, version = version + 1
			WHERE id = ? AND version = ? AND status = ?`, hash, window, reissues+1, a.ID, a.Version, ActionCreated)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(err, fmt.Errorf("the pending action changed concurrently: %w", ErrConflict))
		}
		a.Version++
		action = a
		if r.Record != nil {
			return r.Record(tx)
		}
		return nil
	})
	if err != nil {
		return PendingAction{}, "", err
	}
	return action, token, nil
}

// SQL is the SQL store the Work store writes to (for records that commit with its changes).
func (s *Store) SQL() *store.Store { return s.db }
