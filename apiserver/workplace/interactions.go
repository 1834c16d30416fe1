package workplace

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/work"
)

// WorkStore is what the Workplace needs of the Work plane: its transactions, in which a
// conversation's records are written with the runs they start, and submissions inside them.
type WorkStore interface {
	// InTx runs fn in one transaction of the Work store, whose changes it announces once
	// committed.
	InTx(ctx context.Context, fn func(*sql.Tx) error) error
	// SubmitTx creates a WorkItem and its FlowRun in the caller's transaction; the token answers
	// the run's first pending action.
	SubmitTx(ctx context.Context, tx *sql.Tx, sub work.Submission) (work.WorkItem, work.FlowRun, string, error)
	// CancelTx cancels a run that is not terminal in the caller's transaction, as a person's
	// cancel does: an interrupting follow-up replaces the run in progress.
	CancelTx(ctx context.Context, tx *sql.Tx, workspaceID, runID, reason string) (work.FlowRun, error)
}

// Opening is a submission of a published Entry: where it runs and what was submitted.
type Opening struct {
	work.Context
	EntryNamespace  string
	EntryName       string
	EntryGeneration int64
	// Title is the Entry's display name; the conversation and its Task are named after it and
	// the request's subject.
	Title          string
	TaskDisplay    string
	Participants   string
	ResultsDisplay string
	// FollowUpPolicy is the Entry's follow-up policy; Enqueue when empty.
	FollowUpPolicy string
	// Target is the exact Flow version the Entry pins; Continuation the one follow-ups start.
	Target       FlowTarget
	Continuation FlowTarget
	// Submitted is the exact JSON the caller sent.
	Submitted json.RawMessage
	Submission
	// Submit, when set, writes the conversation's first run: a worker of this process reserved
	// for it (work.Reservation.Submit) runs it at once and writes the conversation with what the
	// run did before its first call outside the process, in one commit. The store's Submit when
	// nil: the run waits for any worker.
	Submit func(ctx context.Context, sub work.Submission) (work.Submitted, error)
	// Unread returns the conversation as Open inserted it, with its current run, instead of
	// reading it back after the commit: for a caller that reads it once its run settled.
	Unread bool
}

// RunInput is the input of a conversation's run: the Entry's field values by name, the
// person's message as "message", and for a follow-up the continuation context as "context".
// Flows read them as input.<field>, input.message and input.context; an Agent step without a
// prompt sends the message.
func RunInput(message string, fields map[string]any, context *ContinuationContext) map[string]any {
	input := make(map[string]any, len(fields)+2)
	for k, v := range fields {
		input[k] = v
	}
	input["message"] = message
	if context != nil {
		// The continuation context holds recent functional messages and Result and artifact
		// references only: no storage entity, runtime internal, provider, model, prompt or trace.
		input["context"] = context
	}
	return input
}

// ContinuationContext is what a follow-up run knows of the conversation so far.
type ContinuationContext struct {
	Messages  []ContextMessage `json:"messages"`
	Results   []ContextResult  `json:"results,omitempty"`
	Artifacts []ContextRef     `json:"artifacts,omitempty"`
}

// ContextMessage is a functional message of the conversation.
type ContextMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// ContextResult is a Result of the conversation's Task.
type ContextResult struct {
	ID   string `json:"id"`
	Text string `json:"text,omitempty"`
}

// ContextRef is an artifact of the conversation's Task, by reference.
type ContextRef struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MediaType string `json:"mediaType"`
}

// contextMessages is how many recent messages a continuation context holds.
const contextMessages = 20

// Open opens an Interaction from a published Entry: in one transaction, the conversation with
// the exact submitted JSON, its first User message, and the WorkItem and FlowRun of its first run
// on the pinned Flow version (with what that run did before its first outside call, when
// o.Submit is a reserved worker's). The returned resume token answers the run's first pending
// action.
func (s *Store) Open(ctx context.Context, o Opening) (Interaction, work.Submitted, error) {
	now := s.now()
	// The conversation is named after what was asked, not only the Entry: two reports on two
	// subjects read apart in Recent conversations.
	title := titleOf(o.Title, o.Text)
	i := Interaction{
		ID: newID(), TenantID: o.TenantID, WorkspaceID: o.WorkspaceID, Namespace: o.Namespace, PrincipalID: o.PrincipalID,
		EntryNamespace: o.EntryNamespace, EntryName: o.EntryName, EntryGeneration: o.EntryGeneration, Title: title,
		TaskDisplay: o.TaskDisplay, Participants: o.Participants, ResultsDisplay: o.ResultsDisplay, Target: o.Target,
		Continuation: o.Continuation, Submitted: o.Submitted, State: InteractionActive, Version: 1, CreatedAt: now, UpdatedAt: now,
		FollowUpPolicy: firstNonEmpty(o.FollowUpPolicy, string(platformv1.FollowUpEnqueue)),
	}
	input := RunInput(o.Text, o.Values, nil)
	sub := work.Submission{Context: o.Context, InteractionID: i.ID, Type: "interaction", Title: title,
		Instruction: o.Text, FlowName: o.Target.Flow, FlowVersion: o.Target.Version, Input: input}
	sub.Namespace = o.Target.Namespace
	// The conversation is written in the transaction of its first run, before it, already naming
	// the run: nothing of it exists until its run does.
	sub.Prelude = func(ctx context.Context, tx *sql.Tx, run work.FlowRun) error {
		opened := i
		opened.CurrentRunID = run.ID
		if _, err := tx.ExecContext(store.Pipelined(ctx), s.q(`INSERT INTO interactions (`+interactionColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			opened.ID, opened.TenantID, opened.WorkspaceID, opened.Namespace, opened.PrincipalID, opened.EntryNamespace, opened.EntryName,
			opened.EntryGeneration, opened.Title, opened.TaskDisplay, opened.Participants, opened.ResultsDisplay, opened.Target.Namespace,
			opened.Target.Flow, opened.Target.Version, opened.Continuation.Namespace, opened.Continuation.Flow, opened.Continuation.Version,
			string(opened.Submitted), opened.State, opened.CurrentRunID, nil, opened.Version, ms(now), ms(now), opened.FollowUpPolicy); err != nil {
			return err
		}
		// The conversation was inserted just now: its first message needs nothing read.
		if err := s.insertMessage(ctx, tx, &Message{InteractionID: opened.ID, Role: RoleUser, Kind: MessageText, Text: o.Text},
			opened.WorkspaceID, opened.State, opened.Version); err != nil {
			return err
		}
		// Nothing changed the row since its insert: the run's projection takes it as it is
		// (and forgets it: LoadAndDelete).
		s.openedIn.Store(tx, opened)
		return nil
	}
	submit := o.Submit
	if submit == nil {
		submit = func(ctx context.Context, sub work.Submission) (out work.Submitted, err error) {
			err = s.Work.InTx(ctx, func(tx *sql.Tx) (err error) {
				out.Item, out.Run, out.Token, err = s.Work.SubmitTx(ctx, tx, sub)
				return err
			})
			return out, err
		}
	}
	submitted, err := submit(ctx, sub)
	// What a transaction that failed before the projection left of the conversation goes too.
	s.openedIn.Range(func(tx, opened any) bool {
		if opened.(Interaction).ID == i.ID {
			s.openedIn.Delete(tx)
		}
		return true
	})
	if err != nil {
		return Interaction{}, work.Submitted{}, err
	}
	if o.Unread {
		i.CurrentRunID = submitted.Run.ID
		return i, submitted, nil
	}
	i, err = s.Interaction(ctx, i.WorkspaceID, i.ID)
	return i, submitted, err
}

func (s *Store) setCurrentRun(ctx context.Context, tx *sql.Tx, interactionID, runID string) error {
	return s.updateInteraction(ctx, tx, interactionID, `current_run_id = ?, version = version + 1, updated_at = ?`, runID, ms(s.now()))
}

// titleOf is the title of a conversation's work: the Entry's name and the request's beginning,
// its subject.
func titleOf(title, text string) string {
	text = subjectOf(text)
	if text == "" {
		return truncate(title, 256)
	}
	if title == "" {
		return truncate(text, 256)
	}
	return truncate(title+": "+text, 256)
}

// subjectOf is the beginning of a request that names it: its first line, up to 80 characters.
func subjectOf(text string) string {
	text, _, _ = strings.Cut(strings.TrimSpace(text), "\n")
	text = strings.TrimSpace(text)
	if runes := []rune(text); len(runes) > 80 {
		text = string(runes[:80]) + "…"
	}
	return text
}

// KeepSubject is the title of a Task that the work titled given while it was named current
// ("<name>: <subject>"): the work may retitle it, never drop its subject. A given title that
// already names the subject, or that current already contains, is taken as it is.
func KeepSubject(given, current string) string {
	given = strings.TrimSpace(given)
	if given == "" {
		return current
	}
	if current == "" || strings.Contains(strings.ToLower(current), strings.ToLower(given)) {
		return truncate(firstNonEmpty(current, given), 256)
	}
	subject := current
	if _, after, ok := strings.Cut(current, ": "); ok {
		subject = after
	}
	if strings.Contains(strings.ToLower(given), strings.ToLower(strings.TrimSuffix(subject, "…"))) {
		return truncate(given, 256)
	}
	return truncate(given+": "+subject, 256)
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// FollowUp is what a follow-up message did.
type FollowUp struct {
	Message     Message
	Interaction Interaction
	// Run is the continuation's run when it started at once; nil when it waits for the run in
	// progress to end.
	Run   *work.FlowRun
	Token string
}

// ErrBlocked: the conversation waits for an answer to its question; a message is refused until
// it is answered.
var ErrBlocked = errors.New("a question is waiting for an answer")

// ErrFollowUpRejected: the Entry's follow-up policy is Reject and the conversation's work is still
// in progress; nothing was recorded.
var ErrFollowUpRejected = errors.New("the work in progress must end before this conversation takes another message")

// InterruptReason is the reason of a run that an interrupting follow-up cancelled.
const InterruptReason = "interrupted by a follow-up message"

// SendFollowUp accepts a follow-up message. While a question of the conversation waits for an
// answer it is refused (ErrBlocked): the question blocks the composer. While the previous run is
// still working, the Entry's follow-up policy decides: Enqueue records the message and its
// continuation starts when that run ends; Reject refuses it (ErrFollowUpRejected); Interrupt
// cancels that run and starts the continuation now. Else it
// starts now: a new run on the continuation target whose ParentFlowRunId is the terminal
// predecessor, on the same public Task, with the continuation context; the earlier run is never
// reopened.
func (s *Store) SendFollowUp(ctx context.Context, workspaceID, principalID, interactionID, text string) (FollowUp, error) {
	var out FollowUp
	err := s.Work.InTx(ctx, func(tx *sql.Tx) error {
		// The update locks the conversation's row first: one writer of a conversation at a time.
		res, err := tx.ExecContext(ctx, s.q(`UPDATE interactions SET version = version + 1, updated_at = ? WHERE id = ? AND workspace_id = ?`),
			ms(s.now()), interactionID, workspaceID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("interaction: %w", ErrNotFound)
		}
		i, err := s.interactionTx(ctx, tx, interactionID)
		if err != nil {
			return err
		}
		if i.State == InteractionClosed {
			return fmt.Errorf("the conversation is closed: %w", ErrConflict)
		}
		predecessor, err := s.runStateTx(ctx, tx, i.CurrentRunID)
		if err != nil {
			return err
		}
		if predecessor == work.StateActionRequired {
			return ErrBlocked
		}
		out.Message = Message{InteractionID: i.ID, Role: RoleUser, Kind: MessageText, Text: text}
		if predecessor != "" && !work.Terminal(predecessor) {
			switch platformv1.FollowUpPolicy(i.FollowUpPolicy) {
			case platformv1.FollowUpReject:
				return ErrFollowUpRejected
			case platformv1.FollowUpInterrupt:
				// The run in progress is cancelled as a person's cancel does (its projection tells
				// the conversation and closes its questions), then this message starts the next
				// one with the cancelled run as its terminal predecessor.
				if _, err := s.Work.CancelTx(ctx, tx, workspaceID, i.CurrentRunID, InterruptReason); err != nil {
					return err
				}
				if i, err = s.interactionTx(ctx, tx, interactionID); err != nil {
					return err
				}
			default:
				// The run in progress ends first; the projection of its end starts this one.
				out.Message.Pending = true
				return s.appendMessage(ctx, tx, &out.Message)
			}
		}
		if err := s.appendMessage(ctx, tx, &out.Message); err != nil {
			return err
		}
		run, token, err := s.startContinuation(ctx, tx, &i, principalID, text, out.Message.ID)
		if err != nil {
			return err
		}
		out.Run, out.Token = &run, token
		return nil
	})
	if err != nil {
		return out, err
	}
	out.Interaction, err = s.Interaction(ctx, workspaceID, interactionID)
	return out, err
}

// runStateTx is the state of a run, "" when there is none.
func (s *Store) runStateTx(ctx context.Context, tx *sql.Tx, runID string) (string, error) {
	if runID == "" {
		return "", nil
	}
	var state string
	err := tx.QueryRowContext(ctx, s.q(`SELECT state FROM flow_runs WHERE id = ?`), runID).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return state, err
}

// startContinuation starts the run of a follow-up: on the conversation's continuation target,
// with the continuation context, on the public Task of the conversation (a child WorkItem
// projected onto it), recording the terminal predecessor as its ParentFlowRunId.
func (s *Store) startContinuation(ctx context.Context, tx *sql.Tx, i *Interaction, principalID, text, messageID string) (work.FlowRun, string, error) {
	context, err := s.continuationContext(ctx, tx, i)
	if err != nil {
		return work.FlowRun{}, "", err
	}
	var parent, task string
	if i.CurrentRunID != "" {
		if err := tx.QueryRowContext(ctx, s.q(`SELECT id, work_task_id FROM flow_runs WHERE id = ?`), i.CurrentRunID).Scan(&parent, &task); err != nil &&
			!errors.Is(err, sql.ErrNoRows) {
			return work.FlowRun{}, "", err
		}
	}
	if i.LastTaskID != "" {
		task = i.LastTaskID
	}
	var fields map[string]any
	var submitted struct {
		Input map[string]any `json:"input"`
	}
	if json.Unmarshal(i.Submitted, &submitted) == nil {
		fields = submitted.Input
	}
	sub := work.Submission{
		Context:       work.Context{TenantID: i.TenantID, WorkspaceID: i.WorkspaceID, Namespace: i.Continuation.Namespace, PrincipalID: principalID},
		InteractionID: i.ID, WorkTaskID: task, ParentFlowRunID: parent, TriggerMessageID: messageID,
		Type: "interaction", Title: i.Title, Instruction: text,
		FlowName: i.Continuation.Flow, FlowVersion: i.Continuation.Version,
		Input: RunInput(text, fields, &context),
	}
	_, run, token, err := s.Work.SubmitTx(ctx, tx, sub)
	if err != nil {
		return run, "", err
	}
	i.CurrentRunID = run.ID
	return run, token, s.setCurrentRun(ctx, tx, i.ID, run.ID)
}

// startQueuedFollowUp starts, when the conversation's run ended, the oldest follow-up accepted
// while it worked; true when there was one.
func (s *Store) startQueuedFollowUp(ctx context.Context, tx *sql.Tx, c *conversation) (bool, error) {
	var m Message
	err := tx.QueryRowContext(ctx, s.q(`SELECT id, text FROM interaction_messages WHERE interaction_id = ? AND pending = 1 ORDER BY seq LIMIT 1`),
		c.interaction.ID).Scan(&m.ID, &m.Text)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE interaction_messages SET pending = 0 WHERE id = ?`), m.ID); err != nil {
		return false, err
	}
	_, _, err = s.startContinuation(ctx, tx, c.interaction, c.run.PrincipalID, m.Text, m.ID)
	return err == nil, err
}

// continuationContext is what a follow-up knows of the conversation: its recent functional
// messages, and the Results and artifacts of its Task by reference.
func (s *Store) continuationContext(ctx context.Context, tx *sql.Tx, i *Interaction) (ContinuationContext, error) {
	out := ContinuationContext{Messages: []ContextMessage{}}
	messages, err := s.recentMessages(ctx, tx, i.ID, contextMessages)
	if err != nil {
		return out, err
	}
	for _, m := range messages {
		if m.Pending || m.Text == "" {
			continue
		}
		out.Messages = append(out.Messages, ContextMessage{Role: m.Role, Text: m.Text})
	}
	if i.LastTaskID == "" {
		return out, nil
	}
	rows, err := tx.QueryContext(ctx, s.q(`SELECT id, text FROM task_results WHERE task_id = ? ORDER BY seq DESC LIMIT 10`), i.LastTaskID)
	if err != nil {
		return out, err
	}
	for rows.Next() {
		var r ContextResult
		if err := rows.Scan(&r.ID, &r.Text); err != nil {
			rows.Close()
			return out, err
		}
		out.Results = append(out.Results, r)
	}
	rows.Close()
	rows, err = tx.QueryContext(ctx, s.q(`SELECT id, name, media_type FROM task_artifacts WHERE task_id = ? ORDER BY created_at DESC LIMIT 10`), i.LastTaskID)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var a ContextRef
		if err := rows.Scan(&a.ID, &a.Name, &a.MediaType); err != nil {
			return out, err
		}
		out.Artifacts = append(out.Artifacts, a)
	}
	return out, rows.Err()
}

// EntryOfInteraction is the Entry a conversation was opened from: its resource namespace and
// name (the executor's usage and budgets name the Entry of a run by it). A conversation that is
// gone names none.
func (s *Store) EntryOfInteraction(ctx context.Context, workspaceID, id string) (resourceNamespace, name string, err error) {
	err = s.db.DB().QueryRowContext(ctx, s.q(`SELECT entry_namespace, entry_name FROM interactions WHERE id = ? AND workspace_id = ?`),
		id, workspaceID).Scan(&resourceNamespace, &name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return resourceNamespace, name, err
}
