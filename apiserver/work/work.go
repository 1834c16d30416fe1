package work

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"platform.dev/platform/apiserver/notify"
	"platform.dev/platform/apiserver/store"
)

// States of a FlowRun. Completed, Failed and Cancelled are terminal.
const (
	StatePending        = "Pending"
	StateRunning        = "Running"
	StateActionRequired = "ActionRequired"
	StatePaused         = "Paused"
	StateCompleted      = "Completed"
	StateFailed         = "Failed"
	StateCancelled      = "Cancelled"
)

// Terminal reports whether a run in state can no longer change.
func Terminal(state string) bool {
	return state == StateCompleted || state == StateFailed || state == StateCancelled
}

// Kinds of PendingAction. An approval decides a tool call that requires one (or answers a step
// that asks before it runs); file is reserved: the model holds it, no step creates it yet.
const (
	KindText         = "text"
	KindChoice       = "choice"
	KindConfirmation = "confirmation"
	KindFile         = "file"
	KindApproval     = "approval"
)

// Statuses of a PendingAction.
const (
	ActionCreated   = "created"
	ActionCompleted = "completed"
	ActionExpired   = "expired"
	ActionCancelled = "cancelled"
)

// Event types of a run's history.
const (
	EventRunCreated    = "RunCreated"
	EventRunStarted    = "RunStarted"
	EventStepStarted   = "StepStarted"
	EventStepCompleted = "StepCompleted"
	EventStepRetried   = "StepRetried"
	// EventStepRestarted: a worker took over a step that a stopped worker had started; the step
	// runs again under the same attempt (and so the same idempotency key).
	EventStepRestarted         = "StepRestarted"
	EventPendingActionCreated  = "PendingActionCreated"
	EventPendingActionResolved = "PendingActionResolved"
	EventPendingActionExpired  = "PendingActionExpired"
	// EventPendingActionEscalated: nobody answered in time and the action, declared to
	// escalate, waits again for the workspace's Owners and Admins (once).
	EventPendingActionEscalated = "PendingActionEscalated"
	// EventPendingActionReminded: the action's expiry is near and nobody answered yet.
	EventPendingActionReminded = "PendingActionReminded"
	EventRunPaused             = "RunPaused"
	EventRunResumed            = "RunResumed"
	EventRunCompleted          = "RunCompleted"
	EventRunFailed             = "RunFailed"
	EventRunCancelled          = "RunCancelled"
)

// Errors; callers test them with errors.Is. The wrapping error's message is for people.
var (
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrStale        = errors.New("stale version")
	ErrInvalidToken = errors.New("invalid resume token")
	ErrInvalidInput = errors.New("invalid input")
	ErrLeaseLost    = errors.New("lease lost")
	// ErrEscalated refuses an answer to an action escalated to the workspace's Owners and Admins
	// from anyone else.
	ErrEscalated = errors.New("escalated to the workspace's Owners and Admins")
)

// What a PendingAction turns into when nobody answers it before it expires.
const (
	// FallbackFail fails the run (the default).
	FallbackFail = "fail"
	// FallbackReject answers no: an approval is rejected, a confirmation answered false.
	FallbackReject = "reject"
	// FallbackProceed answers with the declared default.
	FallbackProceed = "proceed"
	// FallbackEscalate waits once more, as long again, for the workspace's Owners and Admins;
	// then fails the run.
	FallbackEscalate = "escalate"
)

// How a PendingAction ended: answered by a person, or expired into its fallback.
const (
	ResolutionAnswered  = "answered"
	ResolutionFailed    = "failed"
	ResolutionRejected  = "rejected"
	ResolutionProceeded = "proceeded"
)

// DefaultActionTTL is how long a PendingAction can be answered when the step sets no expiry.
const DefaultActionTTL = 24 * time.Hour

// Context is the resolved management context a run executes in.
type Context struct {
	TenantID    string
	WorkspaceID string
	// Namespace is the workspace's kube namespace, where its Flows and Agents live.
	Namespace   string
	PrincipalID string
}

// WorkItem is a submitted piece of work and the state of the run that executes it.
type WorkItem struct {
	ID string
	Context
	InteractionID string
	// WorkTaskID is the public Task the WorkItem is projected onto: itself unless it continues
	// another Task. The WorkItem's own ID is the WorkExecutionID of the correlation chain.
	WorkTaskID  string
	Type        string
	Title       string
	Instruction string
	FlowName    string
	FlowVersion string
	// FlowDraft is set when the WorkItem runs the Flow's draft (FlowVersion is then empty).
	FlowDraft bool
	FlowRunID string
	Status    string
	Result    json.RawMessage
	Reason    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// FlowRun is one durable execution of a Flow version.
type FlowRun struct {
	ID         string
	WorkItemID string
	Context
	InteractionID   string
	WorkTaskID      string
	ParentFlowRunID string
	// TriggerMessageID is the conversation message that started a continuation run.
	TriggerMessageID string
	FlowName         string
	FlowVersion      string
	// FlowDraft is set for a Draft Run: it executes the Flow's draft at FlowRevision (the Flow's
	// resourceVersion) and FlowGeneration, whose snapshot and digest it keeps from submission.
	FlowDraft      bool
	FlowRevision   string
	FlowGeneration int64
	FlowDigest     string
	// Snapshot is the pinned Flow definition (JSON): nil before the first execution, except for
	// a Draft Run, which holds it from submission.
	Snapshot json.RawMessage
	// Agents are the pinned agent revisions (JSON), nil before the first execution.
	Agents      json.RawMessage
	State       string
	PausedFrom  string
	CurrentStep string
	StepStarted bool
	Attempt     int
	// Data is the run's working data (RunData as JSON).
	Data           json.RawMessage
	Result         json.RawMessage
	Reason         string
	LeaseOwner     string
	LeaseExpiresAt time.Time
	Version        int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// WorkExecutionID is the WorkItem that executes the run, in the words of the correlation chain.
func (r *FlowRun) WorkExecutionID() string { return r.WorkItemID }

// Pinned reports whether the run has pinned its Flow snapshot and agents. The agents decide: a
// Draft Run holds its snapshot from submission but pins its agents at first execution.
func (r *FlowRun) Pinned() bool { return len(r.Agents) > 0 }

// RunData is what flows through a run: the submitted input, each completed step's output, the
// current data, and the answers of step suspensions.
type RunData struct {
	Input   any            `json:"input"`
	Steps   map[string]any `json:"steps"`
	Current any            `json:"current"`
	Answers map[string]any `json:"answers,omitempty"`
	// Budgets are the decisions on continuing past a budget, by the budget's key in its period
	// (usage.Limit.Key).
	Budgets map[string]BudgetDecision `json:"budgets,omitempty"`
}

// DecodeData reads the run's working data.
func (r *FlowRun) DecodeData() (RunData, error) {
	var d RunData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return d, fmt.Errorf("run %s data: %w", r.ID, err)
	}
	if d.Steps == nil {
		d.Steps = map[string]any{}
	}
	return d, nil
}

// Event is one entry of a run's history. It says what happened; it never holds inputs, outputs,
// prompts or tokens.
type Event struct {
	RunID   string
	Seq     int64
	Type    string
	Step    string
	Attempt int
	State   string
	Reason  string
	// The correlation ids of the event's run, copied onto it when it is appended.
	InteractionID   string
	WorkTaskID      string
	WorkExecutionID string
	// RuntimeExecutionID is the idempotency key of the Agent step attempt the event is about.
	RuntimeExecutionID string
	// Usage, on the event that records an Agent step's model calls (its completion, failure or
	// retry, or the tool calls a model asked for), is the usage of the step's calls so far.
	Usage     *ModelUsage
	CreatedAt time.Time
	// Action, on an event the store's own transaction tells about a pending action (resolved,
	// expired), is the action as that transaction left it, for the Observer to project without
	// reading it back; it is not stored (nil on events read from the store).
	Action *PendingAction
}

// Option is one answer a choice offers.
type Option struct {
	Value string `json:"value"`
	Label string `json:"label,omitempty"`
}

// PendingAction is a durable suspension of a run waiting for a person.
type PendingAction struct {
	ID               string
	WorkspaceID      string
	InteractionID    string
	RunID            string
	Step             string
	Kind             string
	Prompt           string
	Options          []Option
	Status           string
	ExpiresAt        time.Time
	ContinuationStep string
	Version          int64
	AnsweredBy       string
	Answer           json.RawMessage
	AnsweredAt       time.Time
	CreatedAt        time.Time
	// OnExpiry is its fallback (Fallback*); Resolution how it ended (Resolution*), empty while
	// open; EscalatedAt when it was re-addressed to the workspace's Owners and Admins.
	OnExpiry    string
	Resolution  string
	EscalatedAt time.Time
	// Call is the exact tool call an approval decides, as the approver sees it.
	Call *ApprovalCall
	// Budget is the budget an approval to continue past one is about.
	Budget *BudgetCrossing
}

// Observer projects the run transitions the store commits onto another plane (the Workplace's
// conversations and Tasks), in the transaction of each transition: what it writes commits or
// fails with the transition.
type Observer interface {
	Observe(ctx context.Context, tx *sql.Tx, run FlowRun, events []Event) error
}

// DeleteObserver is an Observer that also sees, in its transaction, the deletion of a run.
type DeleteObserver interface {
	ObserveDeleted(ctx context.Context, tx *sql.Tx, run FlowRun) error
}

// Store reads and writes the Work plane.
type Store struct {
	// Observer, when set, sees every run transition in its transaction.
	Observer Observer
	db       *store.Store
	// Clock is the time source; time.Now when nil. Tests inject it.
	Clock func() time.Time

	changes *notify.Hub
	// announced holds, per transaction of announcing, the topics to announce once it commits and
	// the writes deferred to its end.
	announced sync.Map
	// settled keeps the runs this process's transitions last left settled, for WaitSettled.
	settled settledRuns
}

// New returns the Work store over s, with a hub of its own for the changes it commits.
func New(s *store.Store) *Store { return &Store{db: s, changes: notify.New(notify.Options{})} }

func (s *Store) now() time.Time {
	if s.Clock != nil {
		return s.Clock()
	}
	return time.Now()
}

func (s *Store) q(query string) string { return s.db.Rebind(query) }

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

// newID is time-ordered (UUIDv7): new rows land at the end of the id indexes instead of on a
// random page of them, so a commit writes fewer pages.
func newID() string { return uuid.Must(uuid.NewV7()).String() }

// NewResumeToken returns a fresh single-use resume token and the SHA-256 digest that is stored
// in its place.
func NewResumeToken() (token, hash string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	token = "prt_" + base64.RawURLEncoding.EncodeToString(b)
	return token, hashToken(token)
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func tokenMatches(token, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(hashToken(token)), []byte(hash)) == 1
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullJSON(b json.RawMessage) sql.NullString {
	return sql.NullString{String: string(b), Valid: len(b) > 0}
}

// Submission is a WorkItem to create with the FlowRun that executes it.
type Submission struct {
	// ID is the WorkItem's id; a fresh one when empty. A submitter that must never submit the
	// same work twice (a Trigger's occurrence) derives it, so that the store's key refuses a
	// second submission.
	ID string
	Context
	InteractionID string
	// WorkTaskID is the public Task the work continues; empty makes the WorkItem its own Task.
	WorkTaskID      string
	ParentFlowRunID string
	// TriggerMessageID is the conversation message that started a continuation.
	TriggerMessageID string
	Type             string
	Title            string
	Instruction      string
	// FlowName and FlowVersion are the exact Flow version the run executes.
	FlowName    string
	FlowVersion string
	// Draft, instead of FlowVersion, runs the Flow's draft as it was read at submission.
	Draft *DraftFlow
	// Input is the run's submitted input.
	Input any
	// Lease, when set, commits the run already leased to a worker of this process that starts it
	// at once (Reservation), instead of leaving it for any worker to claim.
	Lease *Lease
	// Prelude, when set, writes first, in the transaction that writes the submission, what the
	// submission belongs to (the conversation an Entry opens and its first message), so that
	// they commit together; run is the FlowRun as it is about to be written (its id known). It
	// runs again if that transaction is tried again.
	Prelude func(ctx context.Context, tx *sql.Tx, run FlowRun) error
}

// Lease is who owns a run's execution and until when.
type Lease struct {
	Owner string
	Until time.Time
}

// Reservation is an executor's worker taken for a run about to be submitted with its Lease:
// Start hands the worker the committed run, Cancel gives the worker back when the submission
// failed, Submit hands the worker the submission itself to write with its run's first
// transition. Each reservation ends with one of them.
type Reservation interface {
	Lease() Lease
	// Start executes run, committed leased to the reservation, at once; the returned func waits
	// for the worker to settle it, as Submitted.Settled does.
	Start(run FlowRun) func(ctx context.Context, timeout time.Duration) (FlowRun, bool)
	Cancel()
	Submit(ctx context.Context, sub Submission) (Submitted, error)
	// Respond hands the worker an answer (its Lease set to the reservation's): the answer is
	// committed with the resumed run's first transition, and the worker goes on executing it.
	Respond(ctx context.Context, r Response) (Responded, error)
}

// Responded is an answer as a reserved worker committed it (Reservation.Respond): what
// Store.Respond returns, and what waits for the worker to settle the run (nil when no worker of
// this process executes it).
type Responded struct {
	Action  PendingAction
	Run     FlowRun
	Token   string
	Settled func(ctx context.Context, timeout time.Duration) (run FlowRun, ok bool)
}

// Submitted is a submission as a reserved worker committed it (Reservation.Submit).
type Submitted struct {
	Item  WorkItem
	Run   FlowRun
	Token string
	// Settled waits up to timeout for the worker to leave the run neither Pending nor Running,
	// and returns the run as the worker committed it then; ok is false when the worker stopped
	// short of that or the time ran out (the store has the run as it is).
	Settled func(ctx context.Context, timeout time.Duration) (run FlowRun, ok bool)
}

// DraftFlow is the exact draft revision a Draft Run keeps.
type DraftFlow struct {
	Revision   string
	Generation int64
	Digest     string
	Snapshot   json.RawMessage
}

// Submit creates the WorkItem and its Pending FlowRun in one transaction. The returned resume
// token answers the run's first PendingAction; only its digest is stored.
func (s *Store) Submit(ctx context.Context, sub Submission) (item WorkItem, run FlowRun, token string, err error) {
	// A submission is the store's own short transaction: it may share its commit with others.
	err = s.announcing(ctx, s.db.GroupInTx, func(tx *sql.Tx) error {
		item, run, token, err = s.SubmitTx(ctx, tx, sub)
		return err
	})
	return item, run, token, err
}

// InTx runs fn in one transaction of the store: what other planes write with the runs they
// start (a conversation and its first message) commits or fails with them. The runs fn submits
// (SubmitTx) are announced once it committed.
func (s *Store) InTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.announcing(ctx, s.db.InTx, fn)
}

// SubmitTx creates the WorkItem and its Pending FlowRun in the caller's transaction (see Submit).
func (s *Store) SubmitTx(ctx context.Context, tx *sql.Tx, sub Submission) (WorkItem, FlowRun, string, error) {
	p, err := s.Prepare(sub)
	if err != nil {
		return WorkItem{}, FlowRun{}, "", err
	}
	if err := p.writePrelude(ctx, tx, p.Run); err != nil {
		return WorkItem{}, FlowRun{}, "", err
	}
	if err := s.insertSubmission(ctx, tx, p.Item, p.Run, p.hash); err != nil {
		return WorkItem{}, FlowRun{}, "", fmt.Errorf("work: submit: %w", err)
	}
	if err := s.appendEvents(ctx, tx, p.Run, p.Run.CreatedAt, Event{Type: EventRunCreated}); err != nil {
		return WorkItem{}, FlowRun{}, "", fmt.Errorf("work: submit: %w", err)
	}
	s.announce(tx, RunTopic(p.Run.ID), WorkspaceTopic(p.Run.WorkspaceID))
	if sub.Lease == nil {
		s.announce(tx, RunnableTopic) // a leased run is started by its owner, nobody claims it
	}
	return p.Item, p.Run, p.Token, nil
}

// Prepared is a submission checked and given its ids and resume token, not written yet: Submit
// writes it as it is, SubmitApplied with its run's first transition.
type Prepared struct {
	Item WorkItem
	// Run is the FlowRun as submitted: Pending, leased when the submission was.
	Run FlowRun
	// Token is the raw resume token, handed to the submitter only; hash is what is stored.
	Token string
	hash  string
	// prelude is the submission's Prelude.
	prelude func(ctx context.Context, tx *sql.Tx, run FlowRun) error
}

// Prepare checks a submission and makes its WorkItem and FlowRun, without writing them.
func (s *Store) Prepare(sub Submission) (Prepared, error) {
	if sub.WorkspaceID == "" || sub.PrincipalID == "" || sub.Namespace == "" {
		return Prepared{}, errors.New("work: a submission needs a resolved workspace and principal")
	}
	data, err := json.Marshal(RunData{Input: sub.Input, Steps: map[string]any{}, Current: sub.Input})
	if err != nil {
		return Prepared{}, fmt.Errorf("work: submitted input: %w", err)
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	token, hash := NewResumeToken()
	id := sub.ID
	if id == "" {
		id = newID()
	}
	item := WorkItem{
		ID: id, Context: sub.Context, InteractionID: sub.InteractionID, WorkTaskID: sub.WorkTaskID, Type: sub.Type, Title: sub.Title,
		Instruction: sub.Instruction, FlowName: sub.FlowName, FlowVersion: sub.FlowVersion, FlowDraft: sub.Draft != nil, Status: StatePending,
		CreatedAt: now, UpdatedAt: now,
	}
	if item.WorkTaskID == "" {
		item.WorkTaskID = item.ID
	}
	run := FlowRun{
		ID: newID(), WorkItemID: item.ID, Context: sub.Context, InteractionID: sub.InteractionID, WorkTaskID: item.WorkTaskID,
		ParentFlowRunID: sub.ParentFlowRunID, FlowName: sub.FlowName, FlowVersion: sub.FlowVersion, State: StatePending, Attempt: 1, Data: data,
		Version: 1, CreatedAt: now, UpdatedAt: now,
	}
	if d := sub.Draft; d != nil {
		if len(d.Snapshot) == 0 || d.Digest == "" || d.Revision == "" {
			return Prepared{}, errors.New("work: a draft submission needs the draft's revision, digest and snapshot")
		}
		run.FlowVersion, item.FlowVersion = "", ""
		run.FlowDraft, run.FlowRevision, run.FlowGeneration, run.FlowDigest, run.Snapshot = true, d.Revision, d.Generation, d.Digest, d.Snapshot
	}
	item.FlowRunID, run.TriggerMessageID = run.ID, sub.TriggerMessageID
	if sub.Lease != nil {
		run.LeaseOwner, run.LeaseExpiresAt = sub.Lease.Owner, sub.Lease.Until.UTC().Truncate(time.Millisecond)
	}
	return Prepared{Item: item, Run: run, Token: token, hash: hash, prelude: sub.Prelude}, nil
}

// writePrelude writes what the submission p belongs to (Submission.Prelude), before it, in tx;
// run is the FlowRun as it is about to be written.
func (p Prepared) writePrelude(ctx context.Context, tx *sql.Tx, run FlowRun) error {
	if p.prelude == nil {
		return nil
	}
	return p.prelude(ctx, tx, run)
}

// insertSubmission writes a WorkItem and its FlowRun as they are.
func (s *Store) insertSubmission(ctx context.Context, tx *sql.Tx, item WorkItem, run FlowRun, hash string) error {
	// The submission reads nothing back: it goes with the transaction's next statement.
	ctx = store.Pipelined(ctx)
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO work_items (id, tenant_id, workspace_id, namespace, principal_id,
		interaction_id, work_task_id, type, title, instruction, flow_name, flow_version, flow_draft, flow_run_id, status, result, reason,
		trigger_message_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		item.ID, item.TenantID, item.WorkspaceID, item.Namespace, item.PrincipalID, nullString(item.InteractionID), item.WorkTaskID,
		item.Type, item.Title, item.Instruction, item.FlowName, item.FlowVersion, boolInt(item.FlowDraft), item.FlowRunID, item.Status,
		nullJSON(item.Result), item.Reason, run.TriggerMessageID, ms(item.CreatedAt), ms(item.UpdatedAt)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO flow_runs (id, work_item_id, tenant_id, workspace_id, namespace,
		principal_id, interaction_id, work_task_id, parent_flow_run_id, flow_name, flow_version, flow_draft, flow_revision,
		flow_generation, flow_digest, flow_snapshot, agents, state, current_step, step_started, attempt, data, result, reason,
		resume_token_hash, trigger_message_id, version, lease_owner, lease_expires_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		run.ID, run.WorkItemID, run.TenantID, run.WorkspaceID, run.Namespace, run.PrincipalID, nullString(run.InteractionID),
		run.WorkTaskID, nullString(run.ParentFlowRunID), run.FlowName, run.FlowVersion, boolInt(run.FlowDraft), run.FlowRevision,
		run.FlowGeneration, run.FlowDigest, nullJSON(run.Snapshot), nullJSON(run.Agents), run.State, run.CurrentStep, boolInt(run.StepStarted),
		run.Attempt, string(run.Data), nullJSON(run.Result), run.Reason, hash, run.TriggerMessageID, run.Version,
		run.LeaseOwner, ms(run.LeaseExpiresAt), ms(run.CreatedAt), ms(run.UpdatedAt))
	return err
}

// appendEvents records events of run, which the caller saved in the same transaction as it is
// now (the update of its row serializes writers of one run), numbered after the run's last
// event, in one statement.
func (s *Store) appendEvents(ctx context.Context, tx *sql.Tx, run FlowRun, now time.Time, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	// The run's correlation ids are copied from its row, so no caller can get them wrong. The
	// numbers are the run's last plus each event's place: the SELECT is read whole before the
	// INSERT writes (SQLite stages it when it reads the table it writes; PostgreSQL reads its
	// snapshot). The run's row and its last number are read once, not once per event.
	var query strings.Builder
	query.WriteString(`INSERT INTO flow_run_events (run_id, seq, type, step, attempt, state, reason, interaction_id, work_task_id,
		work_execution_id, runtime_execution_id, usage, created_at)
		SELECT r.id, r.last + e.column1, e.column2, e.column3,
		e.column4, e.column5, e.column6, COALESCE(r.interaction_id, ''), r.work_task_id, r.work_item_id, e.column7, e.column8, ?
		FROM (SELECT id, interaction_id, work_task_id, work_item_id,
			(SELECT COALESCE(MAX(seq), 0) FROM flow_run_events WHERE run_id = ?) AS last FROM flow_runs WHERE id = ?) AS r
		CROSS JOIN (VALUES `)
	args := make([]any, 0, 3+8*len(events))
	args = append(args, ms(now), run.ID, run.ID)
	for i, e := range events {
		if i > 0 {
			query.WriteString(", ")
		}
		// Typed, so that PostgreSQL does not take the parameters of a VALUES list for text.
		query.WriteString(`(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT))`)
		if e.State == "" {
			e.State = run.State
		}
		args = append(args, i+1, e.Type, e.Step, e.Attempt, e.State, e.Reason, e.RuntimeExecutionID, usageJSON(e.Usage))
	}
	query.WriteString(`) AS e`)
	if _, err := s.txExec(store.Pipelined(ctx), tx, query.String(), args...); err != nil {
		return err
	}
	if s.Observer == nil {
		return nil
	}
	observed := make([]Event, len(events))
	for i, e := range events {
		e.RunID = run.ID
		observed[i] = e
	}
	return s.Observer.Observe(ctx, tx, run, observed)
}

const workItemColumns = `id, tenant_id, workspace_id, namespace, principal_id, interaction_id, work_task_id, type, title, instruction,
	flow_name, flow_version, flow_draft, flow_run_id, status, result, reason, created_at, updated_at`

type scanner interface{ Scan(...any) error }

func scanWorkItem(row scanner) (WorkItem, error) {
	var (
		w                    WorkItem
		interaction, result  sql.NullString
		createdAt, updatedAt int64
		draft                int64
	)
	err := row.Scan(&w.ID, &w.TenantID, &w.WorkspaceID, &w.Namespace, &w.PrincipalID, &interaction, &w.WorkTaskID, &w.Type, &w.Title,
		&w.Instruction, &w.FlowName, &w.FlowVersion, &draft, &w.FlowRunID, &w.Status, &result, &w.Reason, &createdAt, &updatedAt)
	w.FlowDraft = draft != 0
	if errors.Is(err, sql.ErrNoRows) {
		return w, fmt.Errorf("work item: %w", ErrNotFound)
	}
	w.InteractionID = interaction.String
	if result.Valid {
		w.Result = json.RawMessage(result.String)
	}
	w.CreatedAt, w.UpdatedAt = fromMS(createdAt), fromMS(updatedAt)
	return w, err
}

// WorkItem reads a WorkItem of the workspace; another workspace's is not found.
func (s *Store) WorkItem(ctx context.Context, workspaceID, id string) (WorkItem, error) {
	return scanWorkItem(s.queryRow(ctx, `SELECT `+workItemColumns+` FROM work_items WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

const runColumns = `id, work_item_id, tenant_id, workspace_id, namespace, principal_id, interaction_id, work_task_id, parent_flow_run_id, trigger_message_id,
	flow_name, flow_version, flow_draft, flow_revision, flow_generation, flow_digest, flow_snapshot, agents, state, paused_from, current_step, step_started, attempt,
	data, result, reason, lease_owner, lease_expires_at, version, created_at, updated_at`

func scanRun(row scanner) (FlowRun, error) {
	var (
		r                                             FlowRun
		interaction, parent, snapshot, agents, result sql.NullString
		stepStarted, draft                            int64
		data                                          string
		lease, createdAt, updatedAt                   int64
	)
	err := row.Scan(&r.ID, &r.WorkItemID, &r.TenantID, &r.WorkspaceID, &r.Namespace, &r.PrincipalID, &interaction, &r.WorkTaskID, &parent, &r.TriggerMessageID,
		&r.FlowName, &r.FlowVersion, &draft, &r.FlowRevision, &r.FlowGeneration, &r.FlowDigest, &snapshot, &agents, &r.State, &r.PausedFrom, &r.CurrentStep, &stepStarted,
		&r.Attempt, &data, &result, &r.Reason, &r.LeaseOwner, &lease, &r.Version, &createdAt, &updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("flow run: %w", ErrNotFound)
	}
	r.InteractionID, r.ParentFlowRunID = interaction.String, parent.String
	if snapshot.Valid {
		r.Snapshot = json.RawMessage(snapshot.String)
	}
	if agents.Valid {
		r.Agents = json.RawMessage(agents.String)
	}
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	r.Data = json.RawMessage(data)
	r.StepStarted, r.FlowDraft = stepStarted != 0, draft != 0
	r.LeaseExpiresAt, r.CreatedAt, r.UpdatedAt = fromMS(lease), fromMS(createdAt), fromMS(updatedAt)
	return r, err
}

// Run reads a FlowRun of the workspace; another workspace's is not found.
func (s *Store) Run(ctx context.Context, workspaceID, id string) (FlowRun, error) {
	return scanRun(s.queryRow(ctx, `SELECT `+runColumns+` FROM flow_runs WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

// RunByID reads a FlowRun whatever its workspace, for the executor.
func (s *Store) RunByID(ctx context.Context, id string) (FlowRun, error) {
	return scanRun(s.queryRow(ctx, `SELECT `+runColumns+` FROM flow_runs WHERE id = ?`, id))
}

// Events lists a run's history after seq (0 for all), oldest first.
func (s *Store) Events(ctx context.Context, runID string, afterSeq int64) ([]Event, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT run_id, seq, type, step, attempt, state, reason, interaction_id,
		work_task_id, work_execution_id, runtime_execution_id, usage, created_at FROM flow_run_events WHERE run_id = ? AND seq > ? ORDER BY seq`), runID, afterSeq)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var (
			e    Event
			at   int64
			used sql.NullString
		)
		if err := rows.Scan(&e.RunID, &e.Seq, &e.Type, &e.Step, &e.Attempt, &e.State, &e.Reason, &e.InteractionID, &e.WorkTaskID,
			&e.WorkExecutionID, &e.RuntimeExecutionID, &used, &at); err != nil {
			return nil, err
		}
		if used.Valid {
			e.Usage = &ModelUsage{}
			if json.Unmarshal([]byte(used.String), e.Usage) != nil {
				e.Usage = nil
			}
		}
		e.CreatedAt = fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

const actionColumns = `id, workspace_id, interaction_id, run_id, step, kind, prompt, options, status, expires_at,
	continuation_step, version, answered_by, answer, answered_at, created_at, on_expiry, resolution, escalated_at, tool_call, budget`

func scanAction(row scanner) (PendingAction, string, error) {
	var (
		a                                             PendingAction
		interaction, options, answer, call, budget    sql.NullString
		expiresAt, answeredAt, createdAt, escalatedAt int64
		tokenHash                                     string
	)
	err := row.Scan(&a.ID, &a.WorkspaceID, &interaction, &a.RunID, &a.Step, &a.Kind, &a.Prompt, &options, &a.Status,
		&expiresAt, &a.ContinuationStep, &a.Version, &a.AnsweredBy, &answer, &answeredAt, &createdAt, &a.OnExpiry, &a.Resolution,
		&escalatedAt, &call, &budget, &tokenHash)
	if errors.Is(err, sql.ErrNoRows) {
		return a, "", fmt.Errorf("pending action: %w", ErrNotFound)
	}
	if err != nil {
		return a, "", err
	}
	a.InteractionID = interaction.String
	if options.Valid {
		if err := json.Unmarshal([]byte(options.String), &a.Options); err != nil {
			return a, "", err
		}
	}
	if answer.Valid {
		a.Answer = json.RawMessage(answer.String)
	}
	if call.Valid {
		a.Call = &ApprovalCall{}
		if err := json.Unmarshal([]byte(call.String), a.Call); err != nil {
			return a, "", err
		}
	}
	if budget.Valid {
		a.Budget = &BudgetCrossing{}
		if err := json.Unmarshal([]byte(budget.String), a.Budget); err != nil {
			return a, "", err
		}
	}
	a.ExpiresAt, a.AnsweredAt, a.CreatedAt, a.EscalatedAt = fromMS(expiresAt), fromMS(answeredAt), fromMS(createdAt), fromMS(escalatedAt)
	return a, tokenHash, nil
}

// PendingActions lists a run's actions, newest first.
func (s *Store) PendingActions(ctx context.Context, runID string) ([]PendingAction, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT `+actionColumns+`, token_hash FROM pending_actions
		WHERE run_id = ? ORDER BY created_at DESC, id`), runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PendingAction
	for rows.Next() {
		a, _, err := scanAction(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// OpenPendingAction is the run's action waiting for an answer, or nil.
func (s *Store) OpenPendingAction(ctx context.Context, runID string) (*PendingAction, error) {
	a, _, err := scanAction(s.queryRow(ctx, `SELECT `+actionColumns+`, token_hash FROM pending_actions
		WHERE run_id = ? AND status = ?`, runID, ActionCreated))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// Dialect is the SQL dialect of the store (for diagnostics and tests).
func (s *Store) Dialect() string { return s.db.Dialect() }
