package workplace

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/work"
)

// Generic labels of a participant's turn; the Entry's step display name replaces the preparing
// one when the Flow gives it.
const (
	PreparingLabel = "Preparing"
	PreparedLabel  = "Prepared"
)

// taskState is the Task state of a run state.
func taskState(runState string) string {
	switch runState {
	case work.StateRunning:
		return TaskRunning
	case work.StateActionRequired:
		return TaskActionRequired
	case work.StatePaused:
		return TaskPaused
	case work.StateCompleted:
		return TaskCompleted
	case work.StateFailed:
		return TaskFailed
	case work.StateCancelled:
		return TaskCancelled
	}
	return TaskPending
}

// conversation is what the projection of one transition needs to know about the run's place.
type conversation struct {
	run         *work.FlowRun
	interaction *Interaction
	task        *Task
	steps       map[string]platformv1.FlowStep
	// answered is set once the transition answered a question: its resumption is no news.
	answered bool
	// milestones counts the Task's milestones of this transition not yet written: they are
	// written with its state, in one statement (syncTaskState).
	milestones int
	// events are the transition's events, next the index of the one being projected.
	events []work.Event
	next   int
	// prepaid counts the milestones still to come in this transition that the Task's insert
	// wrote already (materializeTask): a Task created by the transition that completes its turns
	// (a WorkItem submitted and run in one commit) takes them in its INSERT, not in an UPDATE
	// after.
	prepaid int
	// activities are the Task's activities of this transition not yet written (writeActivities).
	activities []Activity
}

// Observe projects one run transition onto the Workplace, in the transition's transaction, so
// that a conversation, its Task and their notifications are never ahead of or behind the run:
// the answer or question of the run in its conversation, the Task's state, its turn activities,
// its Results and the notifications of what needs attention. A run that belongs to no
// conversation is an autonomous Task's (a WorkItem submitted through the Work API or by a
// Trigger).
func (s *Store) Observe(ctx context.Context, tx *sql.Tx, run work.FlowRun, events []work.Event) error {
	created := slices.ContainsFunc(events, func(e work.Event) bool { return e.Type == work.EventRunCreated })
	if err := s.emitRun(ctx, tx, run, created, false); err != nil {
		return err
	}
	c := &conversation{run: &run, events: events}
	if run.InteractionID != "" {
		i, err := s.interactionTx(ctx, tx, run.InteractionID)
		if errors.Is(err, ErrNotFound) {
			return nil // deleted with its workspace's data; the run ends on its own
		}
		if err != nil {
			return err
		}
		c.interaction = &i
	}
	// A WorkItem that is its own Task and was submitted in this transaction has no Task yet
	// (a Task and the WorkItem of its id are created and deleted together, and the WorkItem's
	// insert just succeeded): there is nothing to read.
	if !created || run.WorkTaskID != run.WorkItemID {
		t, err := s.taskTx(ctx, tx, run.WorkTaskID)
		switch {
		case err == nil:
			c.task = &t
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	if c.task == nil && c.interaction != nil &&
		TaskReferenceVisible(platformv1.TaskDisplay(c.interaction.TaskDisplay), TaskFacts{Observed: s.now().Sub(c.interaction.CreatedAt)}) {
		// Work observed for a while is durable: it becomes a Task before this transition is told.
		if err := s.materializeTask(ctx, tx, c, ""); err != nil {
			return err
		}
	}
	for i, e := range events {
		c.next = i
		if err := s.project(ctx, tx, c, e); err != nil {
			return fmt.Errorf("workplace projection of %s: %w", e.Type, err)
		}
	}
	if c.task != nil {
		if err := s.writeActivities(ctx, tx, c); err != nil {
			return err
		}
		if err := s.syncTaskState(ctx, tx, c); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) project(ctx context.Context, tx *sql.Tx, c *conversation, e work.Event) error {
	run := c.run
	switch e.Type {
	case work.EventRunCreated:
		if c.interaction == nil {
			return s.materializeTask(ctx, tx, c, "")
		}
		if err := s.touchInteraction(ctx, tx, c, InteractionActive); err != nil {
			return err
		}
		if c.interaction.TaskDisplay == string(platformv1.TaskVisible) || c.task != nil {
			return s.materializeTask(ctx, tx, c, "")
		}
	case work.EventStepStarted, work.EventStepCompleted:
		step, ok := c.step(e.Step)
		if !ok || step.Type != platformv1.AgentStep || c.task == nil && c.interaction == nil {
			return nil
		}
		a := Activity{Kind: ActivityTurn, RunID: run.ID, Step: e.Step, Label: PreparingLabel, Phase: PhaseStarted}
		if step.DisplayName != "" {
			a.Label = step.DisplayName
		}
		if e.Type == work.EventStepCompleted {
			a.Label, a.Phase = PreparedLabel, PhaseCompleted
		}
		if c.participantsVisible() && step.Agent != nil {
			a.Participant = string(step.Agent.Name)
		}
		if e.Type == work.EventStepCompleted {
			if err := s.countMilestone(ctx, tx, c); err != nil {
				return err
			}
		}
		return s.activity(ctx, tx, c, a)
	case work.EventPendingActionCreated:
		action, err := s.openAction(ctx, tx, run.ID)
		if err != nil || action == nil {
			return err
		}
		if c.interaction != nil {
			if err := s.materializeTask(ctx, tx, c, ""); err != nil {
				return err
			}
			payload, _ := json.Marshal(map[string]any{"pendingActionId": action.ID, "kind": action.Kind, "options": action.Options})
			if err := s.say(ctx, tx, c, RolePlatform, MessageQuestion, action.Prompt, payload); err != nil {
				return err
			}
		}
		if err := s.activity(ctx, tx, c, Activity{Kind: ActivityQuestion, Phase: PhaseWaiting, Label: action.Prompt, RunID: run.ID, Step: e.Step}); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, run.WorkspaceID, "", EventPendingActionCreated, c.actionPayload(action)); err != nil {
			return err
		}
		return s.notifyAbout(ctx, tx, c, NotifyQuestion, true, action.ID)
	case work.EventPendingActionExpired:
		if err := s.resolveQuestions(ctx, tx, c, ResolutionExpired); err != nil {
			return err
		}
		action, err := s.actionByEvent(ctx, tx, e)
		if err != nil || action == nil {
			return err
		}
		label := ExpiredLabel(action)
		if c.interaction != nil && action.Resolution != work.ResolutionFailed {
			// The run goes on with an answer nobody gave: the conversation says so, not as the
			// person's message.
			payload, _ := json.Marshal(map[string]any{"pendingActionId": action.ID, "kind": action.Kind, "value": json.RawMessage(action.Answer),
				"resolution": action.Resolution})
			if err := s.say(ctx, tx, c, RoleSystem, MessageAnswer, label, payload); err != nil {
				return err
			}
		}
		return s.activity(ctx, tx, c, Activity{Kind: ActivityQuestion, Phase: PhaseExpired, Label: label, RunID: run.ID, Step: e.Step})
	case work.EventPendingActionReminded:
		action, err := s.actionByEvent(ctx, tx, e)
		if err != nil || action == nil {
			return err
		}
		if err := s.activity(ctx, tx, c, Activity{Kind: ActivityQuestion, Phase: PhaseReminded,
			Label: "Reminder: nobody answered yet; the question expires at " + action.ExpiresAt.Format(time.RFC3339), RunID: run.ID, Step: e.Step}); err != nil {
			return err
		}
		if !action.EscalatedAt.IsZero() {
			// An escalated question is reminded to those it now waits for.
			return s.notifyAdmins(ctx, tx, c, action.ID, ReminderPrefix)
		}
		return s.notifyAbout(ctx, tx, c, NotifyQuestion, true, action.ID, ReminderPrefix)
	case work.EventPendingActionEscalated:
		action, err := s.actionByEvent(ctx, tx, e)
		if err != nil || action == nil {
			return err
		}
		if err := s.activity(ctx, tx, c, Activity{Kind: ActivityQuestion, Phase: PhaseEscalated,
			Label: "Nobody answered in time: the question now waits for the workspace's Owners and Admins until " +
				action.ExpiresAt.Format(time.RFC3339), RunID: run.ID, Step: e.Step}); err != nil {
			return err
		}
		// The question is addressed anew, to other people: every page of the workspace that shows
		// it, or counts what its reader may answer, reads it again (escalated tells that it is not
		// a new question), and so does every notification already about it.
		payload := c.actionPayload(action)
		payload["escalated"] = true
		if err := s.emit(ctx, tx, run.WorkspaceID, "", EventPendingActionCreated, payload); err != nil {
			return err
		}
		if err := s.questionNotificationsChanged(ctx, tx, c, action.ID); err != nil {
			return err
		}
		return s.notifyAdmins(ctx, tx, c, action.ID)
	case work.EventToolCallRefused:
		// The model is told in the call's result; the Task shows why the approved call did
		// not run.
		return s.activity(ctx, tx, c, Activity{Kind: ActivityRun, Phase: PhaseRefused, Label: "An approved tool call was not made: " + e.Reason,
			RunID: run.ID, Step: e.Step})
	case work.EventPendingActionResolved:
		c.answered = true
		action, err := s.actionOf(ctx, tx, e)
		if err != nil || action == nil {
			return err
		}
		if c.interaction != nil {
			payload, _ := json.Marshal(map[string]any{"pendingActionId": action.ID, "kind": action.Kind, "value": json.RawMessage(action.Answer)})
			if err := s.say(ctx, tx, c, RoleUser, MessageAnswer, AnswerText(action), payload); err != nil {
				return err
			}
		}
		if err := s.emit(ctx, tx, run.WorkspaceID, "", EventPendingActionResolved, c.actionPayload(action)); err != nil {
			return err
		}
		if err := s.resolveQuestions(ctx, tx, c, ResolutionAnswered); err != nil {
			return err
		}
		return s.activity(ctx, tx, c, Activity{Kind: ActivityQuestion, Phase: PhaseAnswered, Label: action.Prompt, RunID: run.ID, Step: e.Step})
	case work.EventRunPaused:
		if err := s.materializeTask(ctx, tx, c, ""); err != nil {
			return err
		}
		return s.activity(ctx, tx, c, Activity{Kind: ActivityRun, Phase: PhasePaused, Label: "Paused", RunID: run.ID})
	case work.EventRunResumed:
		if c.answered {
			// Going on after an answer is the answer's progress, already told.
			return nil
		}
		return s.activity(ctx, tx, c, Activity{Kind: ActivityRun, Phase: PhaseResumed, Label: "Resumed", RunID: run.ID})
	case work.EventRunCompleted:
		return s.completed(ctx, tx, c)
	case work.EventRunFailed:
		if err := s.materializeTask(ctx, tx, c, ""); err != nil {
			return err
		}
		if err := s.say(ctx, tx, c, RoleSystem, MessageError, run.Reason, nil); err != nil {
			return err
		}
		if err := s.activity(ctx, tx, c, Activity{Kind: ActivityRun, Phase: PhaseFailed, Label: "Failed", RunID: run.ID}); err != nil {
			return err
		}
		if err := s.resolveQuestions(ctx, tx, c, ResolutionClosed); err != nil {
			return err
		}
		if err := s.notifyAbout(ctx, tx, c, NotifyFailed, true, ""); err != nil {
			return err
		}
		return s.ended(ctx, tx, c)
	case work.EventRunCancelled:
		if err := s.say(ctx, tx, c, RoleSystem, MessageCancelled, "The work was cancelled", nil); err != nil {
			return err
		}
		if err := s.activity(ctx, tx, c, Activity{Kind: ActivityRun, Phase: PhaseCancelled, Label: "Cancelled", RunID: run.ID}); err != nil {
			return err
		}
		if err := s.resolveQuestions(ctx, tx, c, ResolutionClosed); err != nil {
			return err
		}
		return s.ended(ctx, tx, c)
	}
	return nil
}

// RunOutput is what an Output step records: the output of the step before it (for an Agent step,
// its functional action) and the Flow's closing message.
type RunOutput struct {
	Output  any    `json:"output"`
	Message string `json:"message,omitempty"`
}

// AgentAnswer is an Agent step's output: the functional action and its text.
type AgentAnswer struct {
	Action string `json:"action"`
	Text   string `json:"text,omitempty"`
	Title  string `json:"title,omitempty"`
}

// FunctionalAction reads the functional action of a completed run's result: the last agent's
// action (respond, showResult, createTask) and its text, else respond with the Flow's message.
func FunctionalAction(result json.RawMessage) (action, text, title string) {
	var out RunOutput
	if err := json.Unmarshal(result, &out); err != nil {
		return "respond", "", ""
	}
	if m, ok := out.Output.(map[string]any); ok {
		if a, _ := m["action"].(string); a != "" {
			t, _ := m["text"].(string)
			ti, _ := m["title"].(string)
			return a, t, ti
		}
	}
	if out.Message != "" {
		return "respond", out.Message, ""
	}
	if s, ok := out.Output.(string); ok {
		return "respond", s, ""
	}
	return "respond", "", ""
}

// closingMessage is the message of the Output step that ended a run, if any.
func closingMessage(result json.RawMessage) string {
	var out RunOutput
	_ = json.Unmarshal(result, &out)
	return out.Message
}

// deliverablesOf reads the deliverables a completed run's result declares, and returns the
// result as Tasks and conversations show it: the deliverables named without their storage keys
// (the artifacts carry them; downloads go through the Task's artifact routes).
func deliverablesOf(result json.RawMessage) ([]executor.StoredDeliverable, json.RawMessage) {
	var out struct {
		Output struct {
			Deliverables []executor.StoredDeliverable `json:"deliverables"`
		} `json:"output"`
	}
	if err := json.Unmarshal(result, &out); err != nil || len(out.Output.Deliverables) == 0 {
		return nil, result
	}
	var shown map[string]any
	if err := json.Unmarshal(result, &shown); err != nil {
		return out.Output.Deliverables, result
	}
	if output, ok := shown["output"].(map[string]any); ok {
		names := make([]map[string]any, 0, len(out.Output.Deliverables))
		for _, d := range out.Output.Deliverables {
			names = append(names, map[string]any{"name": d.Name, "mediaType": d.MediaType, "length": d.Length})
		}
		output["deliverables"] = names
	}
	payload, err := json.Marshal(shown)
	if err != nil {
		return out.Output.Deliverables, result
	}
	return out.Output.Deliverables, payload
}

// completed projects the end of a run that completed: its answer in the conversation (none for
// createTask: Task creation adds no synthetic assistant message), its durable Result on the
// Task, and the Task's end.
func (s *Store) completed(ctx context.Context, tx *sql.Tx, c *conversation) error {
	run := c.run
	action, text, title := FunctionalAction(run.Result)
	deliverables, payload := deliverablesOf(run.Result)
	// A declared deliverable is durable: its Task holds it even when the work would otherwise
	// have been an immediate reply.
	if action == "createTask" || len(deliverables) > 0 {
		if err := s.materializeTask(ctx, tx, c, title); err != nil {
			return err
		}
	}
	reply := text
	if action == "createTask" {
		// The Task is no message of its own; the Flow's closing message, when it has one, ends
		// the conversation.
		reply = closingMessage(run.Result)
	}
	if c.interaction != nil && reply != "" {
		if err := s.say(ctx, tx, c, RolePlatform, MessageReply, reply, nil); err != nil {
			return err
		}
	}
	if c.task != nil {
		resultID := newID()
		if _, err := tx.ExecContext(store.Pipelined(ctx), s.q(`INSERT INTO task_results (id, task_id, run_id, seq, action, text, payload, created_at)
			SELECT ?, ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ? FROM task_results WHERE task_id = ?`),
			resultID, c.task.ID, run.ID, action, text, nullJSON(payload), ms(s.now()), c.task.ID); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, run.WorkspaceID, "", EventTaskResultAdded, map[string]any{"taskId": c.task.ID, "resultId": resultID}); err != nil {
			return err
		}
		for _, d := range deliverables {
			artifactID := newID()
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO task_artifacts (`+artifactColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
				artifactID, c.task.ID, run.WorkspaceID, resultID, d.Name, d.MediaType, d.Length, d.StorageKey, ms(s.now())); err != nil {
				return err
			}
			if err := s.emit(ctx, tx, run.WorkspaceID, "", EventTaskArtifactAdded, map[string]any{"taskId": c.task.ID, "artifactId": artifactID}); err != nil {
				return err
			}
		}
		if c.interaction != nil && c.interaction.ResultsDisplay == string(platformv1.ResultsVisible) {
			if err := s.say(ctx, tx, c, RolePlatform, MessageResult, text, payload); err != nil {
				return err
			}
		}
		if err := s.activity(ctx, tx, c, Activity{Kind: ActivityRun, Phase: PhaseCompleted, Label: "Completed", RunID: run.ID}); err != nil {
			return err
		}
		if err := s.notifyAbout(ctx, tx, c, NotifyCompleted, false, ""); err != nil {
			return err
		}
	}
	return s.ended(ctx, tx, c)
}

// ended moves the conversation to Idle when its run ends, unless a follow-up accepted while it
// worked starts the next one now.
func (s *Store) ended(ctx context.Context, tx *sql.Tx, c *conversation) error {
	if c.interaction == nil || c.interaction.CurrentRunID != c.run.ID {
		return nil
	}
	// A follow-up's run continues the Task: its activities come after this run's.
	if err := s.writeActivities(ctx, tx, c); err != nil {
		return err
	}
	started, err := s.startQueuedFollowUp(ctx, tx, c)
	if err != nil || started {
		return err
	}
	return s.touchInteraction(ctx, tx, c, InteractionIdle)
}

// materializeTask makes the run's work a public Task (once): for an autonomous run at once, for a
// conversation's when the work asks for one, or when the presentation rules say it is
// actionable, interrupted, durable or substantial.
func (s *Store) materializeTask(ctx context.Context, tx *sql.Tx, c *conversation, title string) error {
	if c.task != nil {
		return s.retitle(ctx, tx, c.task, title)
	}
	run := c.run
	now := s.now()
	t := Task{ID: run.WorkTaskID, TenantID: run.TenantID, WorkspaceID: run.WorkspaceID, PrincipalID: run.PrincipalID,
		State: taskState(run.State), Visible: true, CurrentRunID: run.ID, Reason: run.Reason, Version: 1, CreatedAt: now, UpdatedAt: now}
	if TaskTerminal(t.State) {
		// Work that ended in the transition that made it a Task (submitted and run to its end in
		// one commit) is a Task that ended then.
		t.EndedAt = now
	}
	// The milestones this transition will count from here on are written with the Task.
	c.prepaid = c.milestonesFrom(c.next)
	fallback := ""
	if c.interaction != nil {
		t.InteractionID = c.interaction.ID
		t.Visible = c.interaction.TaskDisplay != string(platformv1.TaskHidden)
		fallback = c.interaction.Title
	}
	// The Task takes its first WorkItem's title, else its conversation's: both name the request's
	// subject, which a title the work gives keeps.
	if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO work_tasks (id, tenant_id, workspace_id, principal_id, interaction_id, title, state,
		visible, current_run_id, reason, milestones, version, created_at, updated_at, ended_at)
		VALUES (?, ?, ?, ?, ?, COALESCE(NULLIF((SELECT title FROM work_items WHERE id = ?), ''), ?), ?, ?, ?, ?, ?, 1, ?, ?, ?)
		RETURNING title`),
		t.ID, t.TenantID, t.WorkspaceID, t.PrincipalID, nullString(t.InteractionID), run.WorkTaskID, fallback, t.State, boolInt(t.Visible),
		t.CurrentRunID, t.Reason, c.prepaid, ms(now), ms(now), ms(t.EndedAt)).Scan(&t.Title); err != nil {
		return err
	}
	if err := s.retitle(ctx, tx, &t, title); err != nil {
		return err
	}
	c.task = &t
	if err := s.emit(ctx, tx, t.WorkspaceID, "", EventTaskCreated, map[string]any{"taskId": t.ID, "interactionId": t.InteractionID,
		"state": t.State, "version": t.Version}); err != nil {
		return err
	}
	if c.interaction != nil {
		c.interaction.LastTaskID = t.ID
		return s.updateInteraction(ctx, tx, c.interaction.ID, `last_task_id = ?, version = version + 1, updated_at = ?`, t.ID, ms(now))
	}
	return nil
}

// retitle gives a Task the title its work chose, with the subject it was named after.
func (s *Store) retitle(ctx context.Context, tx *sql.Tx, t *Task, given string) error {
	title := KeepSubject(given, t.Title)
	if title == t.Title {
		return nil
	}
	t.Title = title
	_, err := tx.ExecContext(store.Pipelined(ctx), s.q(`UPDATE work_tasks SET title = ? WHERE id = ?`), title, t.ID)
	return err
}

// syncTaskState keeps the Task's state, current run and reason with its latest run, and writes
// the milestones the transition counted.
func (s *Store) syncTaskState(ctx context.Context, tx *sql.Tx, c *conversation) error {
	t, run := c.task, c.run
	milestones := c.milestones
	c.milestones = 0
	countOnly := func() error {
		if milestones == 0 {
			return nil
		}
		_, err := tx.ExecContext(store.Pipelined(ctx), s.q(`UPDATE work_tasks SET milestones = milestones + ? WHERE id = ?`), milestones, t.ID)
		return err
	}
	state := taskState(run.State)
	if t.CurrentRunID == run.ID && t.State == state && t.Reason == run.Reason {
		return countOnly()
	}
	if t.CurrentRunID != run.ID && t.CurrentRunID != "" {
		// Only the latest run of a Task speaks for it: an older one cannot change it.
		var latest int64
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM flow_runs WHERE id = ? AND created_at > ?`), t.CurrentRunID, ms(run.CreatedAt)).Scan(&latest); err != nil {
			return err
		}
		if latest > 0 {
			return countOnly()
		}
	}
	ended := int64(0)
	if TaskTerminal(state) {
		ended = ms(s.now())
	}
	t.State, t.CurrentRunID, t.Reason = state, run.ID, run.Reason
	if _, err := tx.ExecContext(store.Pipelined(ctx), s.q(`UPDATE work_tasks SET state = ?, current_run_id = ?, reason = ?, ended_at = ?, milestones = milestones + ?,
		version = version + 1, updated_at = ? WHERE id = ?`), state, run.ID, run.Reason, ended, milestones, ms(s.now()), t.ID); err != nil {
		return err
	}
	t.Version++
	return s.emit(ctx, tx, t.WorkspaceID, "", EventTaskStatusChanged, map[string]any{"taskId": t.ID, "state": state, "version": t.Version})
}

func (s *Store) countMilestone(ctx context.Context, tx *sql.Tx, c *conversation) error {
	if c.task == nil {
		// Two finished turns of participants make the work substantial: it becomes a Task then.
		turns, err := s.finishedTurns(ctx, tx, c)
		if err != nil {
			return err
		}
		if !TaskReferenceVisible(platformv1.TaskDisplay(c.interaction.TaskDisplay), TaskFacts{Milestones: turns}) {
			return nil
		}
		if err := s.materializeTask(ctx, tx, c, ""); err != nil {
			return err
		}
	}
	c.task.Milestones++
	if c.prepaid > 0 {
		c.prepaid-- // written with the Task
		return nil
	}
	c.milestones++
	return nil
}

// milestonesFrom counts the milestones that the transition's events from index i on make once
// the work is a Task: its Agent steps that complete (project counts each).
func (c *conversation) milestonesFrom(i int) int {
	n := 0
	for _, e := range c.events[min(i, len(c.events)):] {
		if e.Type != work.EventStepCompleted {
			continue
		}
		if step, ok := c.step(e.Step); ok && step.Type == platformv1.AgentStep {
			n++
		}
	}
	return n
}

// finishedTurns counts the Agent steps of the run's work that completed (this run's steps are
// described by its pinned Flow; a continuation's earlier runs counted when they ran).
func (s *Store) finishedTurns(ctx context.Context, tx *sql.Tx, c *conversation) (int, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT step FROM flow_run_events WHERE run_id = ? AND type = ?`), c.run.ID, work.EventStepCompleted)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	turns := 0
	for rows.Next() {
		var step string
		if err := rows.Scan(&step); err != nil {
			return 0, err
		}
		if st, ok := c.step(step); ok && st.Type == platformv1.AgentStep {
			turns++
		}
	}
	return turns, rows.Err()
}

// activity adds an activity to the run's Task, if it has one. The activities of a transition are
// written together, in one statement, at its end (writeActivities).
func (s *Store) activity(ctx context.Context, tx *sql.Tx, c *conversation, a Activity) error {
	if c.task == nil {
		return nil
	}
	a.TaskID = c.task.ID
	if a.CreatedAt.IsZero() {
		a.CreatedAt = s.now()
	}
	c.activities = append(c.activities, a)
	return nil
}

// writeActivities writes the activities the transition added so far.
func (s *Store) writeActivities(ctx context.Context, tx *sql.Tx, c *conversation) error {
	list := c.activities
	c.activities = nil
	if len(list) == 0 {
		return nil
	}
	return s.appendActivities(ctx, tx, c.task.WorkspaceID, list)
}

// say adds a message to the run's conversation, if it has one.
func (s *Store) say(ctx context.Context, tx *sql.Tx, c *conversation, role, kind, text string, payload json.RawMessage) error {
	if c.interaction == nil {
		return nil
	}
	if err := s.touchInteraction(ctx, tx, c, c.interaction.State); err != nil {
		return err
	}
	return s.appendMessage(ctx, tx, &Message{InteractionID: c.interaction.ID, Role: role, Kind: kind, Text: text, Payload: payload, RunID: c.run.ID})
}

// touchInteraction sets the conversation's state and bumps its version.
func (s *Store) touchInteraction(ctx context.Context, tx *sql.Tx, c *conversation, state string) error {
	i := c.interaction
	if i.State == InteractionClosed {
		state = InteractionClosed
	}
	i.State = state
	return s.updateInteraction(ctx, tx, i.ID, `state = ?, version = version + 1, updated_at = ?`, state, ms(s.now()))
}

// notifyAbout notifies the run's Principal, when the work is a Task or a conversation; a
// question's notification names its pending action (actionID), so that it follows it.
func (s *Store) notifyAbout(ctx context.Context, tx *sql.Tx, c *conversation, kind string, attention bool, actionID string, prefix ...string) error {
	if c.task == nil {
		return nil
	}
	title := c.task.Title
	switch kind {
	case NotifyQuestion:
		title = strings.Join(prefix, "") + QuestionWaiting + title
	case NotifyCompleted:
		title = "Completed: " + title
	case NotifyFailed:
		title = "Failed: " + title
	}
	n := Notification{WorkspaceID: c.run.WorkspaceID, PrincipalID: c.run.PrincipalID, Kind: kind, Attention: attention, Title: truncate(title, 256),
		TaskID: c.task.ID, RunID: c.run.ID, PendingActionID: actionID}
	if c.interaction != nil {
		n.InteractionID = c.interaction.ID
	}
	return s.notify(ctx, tx, n)
}

// QuestionWaiting starts the title of a question's notification.
const QuestionWaiting = "A question is waiting: "

// ReminderPrefix and EscalatedPrefix start the titles of a question's reminder and of its
// escalation to the workspace's Owners and Admins.
const (
	ReminderPrefix  = "Reminder: "
	EscalatedPrefix = "Escalated: "
)

// EscalatedAwayPrefix starts the title of the notification of an escalated question held by
// someone it no longer waits for: news that it went to the workspace's administrators, not a
// question to answer.
const EscalatedAwayPrefix = "Nobody answered in time, so the question went to the workspace's administrators: "

// EscalatedAwayTitle is the news title of a question's notification (its question's, a
// reminder's or an escalation's, by its stored title) for someone the escalated question no
// longer waits for.
func EscalatedAwayTitle(title string) string {
	rest, _ := strings.CutPrefix(title, ReminderPrefix)
	rest, _ = strings.CutPrefix(rest, EscalatedPrefix)
	if rest, ok := strings.CutPrefix(rest, QuestionWaiting); ok {
		return truncate(EscalatedAwayPrefix+rest, 256)
	}
	return title
}

// maxEscalationRecipients bounds the Owners and Admins an escalated question notifies.
const maxEscalationRecipients = 50

// notifyAdmins re-addresses an escalated question to the Owners and Admins of the run's
// workspace (and of its tenant): each is notified, with the question to answer (its title after
// prefix: a reminder's).
func (s *Store) notifyAdmins(ctx context.Context, tx *sql.Tx, c *conversation, actionID string, prefix ...string) error {
	if c.task == nil {
		return nil
	}
	rows, err := tx.QueryContext(ctx, s.q(`SELECT DISTINCT m.principal_id FROM memberships m JOIN principals p ON p.id = m.principal_id
		WHERE p.status = 'Active' AND m.role IN ('Owner', 'Admin') AND
		((m.scope_kind = 'workspace' AND m.scope_id = ?) OR (m.scope_kind = 'tenant' AND m.scope_id = ?)) ORDER BY m.principal_id LIMIT ?`),
		c.run.WorkspaceID, c.run.TenantID, maxEscalationRecipients)
	if err != nil {
		return err
	}
	var principals []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		principals = append(principals, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range principals {
		n := Notification{WorkspaceID: c.run.WorkspaceID, PrincipalID: p, Kind: NotifyQuestion, Attention: true,
			Title: truncate(strings.Join(prefix, "")+EscalatedPrefix+QuestionWaiting+c.task.Title, 256), TaskID: c.task.ID, RunID: c.run.ID, PendingActionID: actionID}
		if c.interaction != nil {
			n.InteractionID = c.interaction.ID
		}
		if err := s.notify(ctx, tx, n); err != nil {
			return err
		}
	}
	return nil
}

// questionNotificationsChanged tells the recipients of the open notifications of the run's
// question actionID (its question, its reminder) that what they show changed once it escalated:
// each one's version moves on and NotificationUpdated reaches its recipient's pages. Those of an
// Owner or Admin of the workspace (or of its tenant) or a Platform administrator, who may still
// answer, keep asking for it; anyone else's turn to news (EscalatedAwayTitle): no longer
// attention, nothing to answer. Each keeps whether it was read, because what it now says is news
// its reader has not seen, except a reminder whose question's own notification is unread as
// well: that one is marked read, so that one piece of news is counted once.
func (s *Store) questionNotificationsChanged(ctx context.Context, tx *sql.Tx, c *conversation, actionID string) error {
	title := EscalatedAwayPrefix
	if c.task != nil {
		title = truncate(EscalatedAwayPrefix+c.task.Title, 256)
	}
	lock := ""
	if s.db.Dialect() == store.Postgres {
		lock = " FOR UPDATE"
	}
	// One statement decides and writes: due reads each notification as it was (locked on
	// PostgreSQL, so that a mark-as-read committed meanwhile is seen and none is counted twice),
	// plan what becomes of it.
	rows, err := tx.QueryContext(ctx, s.q(`WITH due AS MATERIALIZED (SELECT id, principal_id, read_at,
			CASE WHEN title LIKE '`+ReminderPrefix+`%' THEN 1 ELSE 0 END AS reminder,
			CASE WHEN EXISTS (SELECT 1 FROM platform_administrators g WHERE g.principal_id = notifications.principal_id) OR
				EXISTS (SELECT 1 FROM memberships m WHERE m.principal_id = notifications.principal_id AND m.role IN ('Owner', 'Admin') AND
					((m.scope_kind = 'workspace' AND m.scope_id = ?) OR (m.scope_kind = 'tenant' AND m.scope_id = ?)))
				THEN 0 ELSE 1 END AS away
		FROM notifications WHERE run_id = ? AND kind = '`+NotifyQuestion+`' AND pending_action_id = ? AND resolved_at = 0`+lock+`),
	plan AS MATERIALIZED (SELECT d.id, d.away, CASE WHEN d.away = 1 AND d.reminder = 1 AND d.read_at = 0 AND EXISTS (
			SELECT 1 FROM due q WHERE q.principal_id = d.principal_id AND q.reminder = 0 AND q.read_at = 0) THEN 1 ELSE 0 END AS mark
		FROM due d)
	UPDATE notifications SET version = version + 1,
		attention = CASE WHEN id IN (SELECT id FROM plan WHERE away = 1) THEN 0 ELSE attention END,
		title = CASE WHEN id IN (SELECT id FROM plan WHERE away = 1) THEN ? ELSE title END,
		read_at = CASE WHEN id IN (SELECT id FROM plan WHERE mark = 1) THEN ? ELSE read_at END
	WHERE id IN (SELECT id FROM plan)
	RETURNING id, principal_id, version, (SELECT p.away FROM plan p WHERE p.id = notifications.id),
		(SELECT p.mark FROM plan p WHERE p.id = notifications.id)`),
		c.run.WorkspaceID, c.run.TenantID, c.run.ID, actionID, title, ms(s.now()))
	if err != nil {
		return err
	}
	type changed struct {
		id, principalID string
		version         int64
		away, marked    bool
	}
	var list []changed
	for rows.Next() {
		var (
			n          changed
			away, mark int64
		)
		if err := rows.Scan(&n.id, &n.principalID, &n.version, &away, &mark); err != nil {
			rows.Close()
			return err
		}
		n.away, n.marked = away == 1, mark == 1
		list = append(list, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, n := range list {
		payload := map[string]any{"notificationId": n.id, "version": n.version}
		if n.away {
			payload["attention"] = false
		}
		if n.marked {
			payload["read"] = true
		}
		if err := s.emit(ctx, tx, c.run.WorkspaceID, n.principalID, EventNotificationUpdated, payload); err != nil {
			return err
		}
		if n.marked {
			if err := s.unreadChanged(ctx, tx, c.run.WorkspaceID, n.principalID, -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// ExpiredLabel says what became of a question nobody answered in time.
func ExpiredLabel(a *work.PendingAction) string {
	switch a.Resolution {
	case work.ResolutionRejected:
		return "Nobody answered in time: rejected"
	case work.ResolutionProceeded:
		return "Nobody answered in time: went on with the default answer (" + AnswerText(a) + ")"
	}
	return "Nobody answered in time: the question expired"
}

// actionByEvent is the pending action an event names ("pending action <id>: ...").
func (s *Store) actionByEvent(ctx context.Context, tx *sql.Tx, e work.Event) (*work.PendingAction, error) {
	if e.Action != nil {
		return e.Action, nil // as the event's transaction left it
	}
	rest, ok := strings.CutPrefix(e.Reason, "pending action ")
	if !ok {
		return nil, nil
	}
	id, _, _ := strings.Cut(rest, ":")
	actions, err := s.actionsTx(ctx, tx, `id = ? AND run_id = ?`, id, e.RunID)
	if err != nil || len(actions) == 0 {
		return nil, err
	}
	return &actions[0], nil
}

// How a question's notification was resolved.
const (
	ResolutionAnswered = "answered"
	ResolutionExpired  = "expired"
	ResolutionClosed   = "closed"
)

// resolveQuestions resolves the notifications of the run's questions that no longer wait (the
// question was answered, expired, or closed with its run): each one no longer needs attention and
// is read, so that neither the list nor the unread count keeps asking for an answer nobody can give.
func (s *Store) resolveQuestions(ctx context.Context, tx *sql.Tx, c *conversation, resolution string) error {
	// One statement finds and resolves them: the CTE keeps each one's read_at from before the
	// update, which tells whether it was unread (the update's own row has it set already).
	// PostgreSQL locks them as it reads them, so a mark-as-read committed meanwhile is seen.
	lock := ""
	if s.db.Dialect() == store.Postgres {
		lock = " FOR UPDATE"
	}
	// The kind is written into the statement, not bound: the partial index notifications_run
	// holds question notifications only, and a plan that depends on a bound value is planned
	// again at every execution on SQLite (about a quarter of a millisecond here) and not at all
	// on PostgreSQL's generic plan, which reads every notification instead.
	now := ms(s.now())
	rows, err := tx.QueryContext(ctx, s.q(`WITH due AS MATERIALIZED (SELECT id, read_at FROM notifications
		WHERE run_id = ? AND kind = '`+NotifyQuestion+`' AND resolved_at = 0 AND NOT EXISTS (
			SELECT 1 FROM pending_actions p WHERE p.id = notifications.pending_action_id AND p.status = ?)`+lock+`)
		UPDATE notifications SET resolved_at = ?, resolution = ?, attention = 0,
			read_at = CASE WHEN read_at = 0 THEN ? ELSE read_at END, version = version + 1
		WHERE id IN (SELECT id FROM due)
		RETURNING id, principal_id, version, (SELECT d.read_at FROM due d WHERE d.id = notifications.id)`),
		c.run.ID, work.ActionCreated, now, resolution, now)
	if err != nil {
		return err
	}
	type resolved struct {
		id, principalID string
		version         int64
		unread          bool
	}
	var list []resolved
	for rows.Next() {
		var (
			r      resolved
			readAt int64
		)
		if err := rows.Scan(&r.id, &r.principalID, &r.version, &readAt); err != nil {
			rows.Close()
			return err
		}
		r.unread = readAt == 0
		list = append(list, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range list {
		if err := s.emit(ctx, tx, c.run.WorkspaceID, r.principalID, EventNotificationUpdated,
			map[string]any{"notificationId": r.id, "resolved": true, "read": true, "version": r.version}); err != nil {
			return err
		}
		if r.unread {
			if err := s.unreadChanged(ctx, tx, c.run.WorkspaceID, r.principalID, -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// actionPayload identifies a pending action for the real-time hub: never its token or hash.
func (c *conversation) actionPayload(a *work.PendingAction) map[string]any {
	p := map[string]any{"pendingActionId": a.ID, "kind": a.Kind}
	if c.interaction != nil {
		p["interactionId"] = c.interaction.ID
	}
	if c.task != nil {
		p["taskId"] = c.task.ID
	}
	return p
}

func (c *conversation) participantsVisible() bool {
	return c.interaction != nil && c.interaction.Participants == string(platformv1.ParticipantsVisible)
}

// step is a step of the run's pinned Flow.
func (c *conversation) step(name string) (platformv1.FlowStep, bool) {
	if c.steps == nil {
		c.steps = executor.PinnedSteps(c.run.Snapshot)
	}
	step, ok := c.steps[name]
	return step, ok
}

// openAction is the run's open pending action.
func (s *Store) openAction(ctx context.Context, tx *sql.Tx, runID string) (*work.PendingAction, error) {
	actions, err := s.actionsTx(ctx, tx, `run_id = ? AND status = ?`, runID, work.ActionCreated)
	if err != nil || len(actions) == 0 {
		return nil, err
	}
	return &actions[0], nil
}

// actionOf is the pending action an event names ("pending action <id>"), else the run's most
// recently answered one.
func (s *Store) actionOf(ctx context.Context, tx *sql.Tx, e work.Event) (*work.PendingAction, error) {
	if e.Action != nil {
		return e.Action, nil // as the event's transaction left it
	}
	actions, err := s.actionsTx(ctx, tx, `run_id = ? AND status = ? ORDER BY answered_at DESC`, e.RunID, work.ActionCompleted)
	if err != nil || len(actions) == 0 {
		return nil, err
	}
	return &actions[0], nil
}

func (s *Store) actionsTx(ctx context.Context, tx *sql.Tx, where string, args ...any) ([]work.PendingAction, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT id, kind, prompt, options, answer, resolution, expires_at, escalated_at FROM pending_actions WHERE `+where), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []work.PendingAction
	for rows.Next() {
		var (
			a               work.PendingAction
			options, answer sql.NullString
		)
		var expiresAt, escalatedAt int64
		if err := rows.Scan(&a.ID, &a.Kind, &a.Prompt, &options, &answer, &a.Resolution, &expiresAt, &escalatedAt); err != nil {
			return nil, err
		}
		a.ExpiresAt, a.EscalatedAt = fromMS(expiresAt), fromMS(escalatedAt)
		if options.Valid {
			_ = json.Unmarshal([]byte(options.String), &a.Options)
		}
		if answer.Valid {
			a.Answer = json.RawMessage(answer.String)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AnswerText is how a person's answer reads in the conversation: a choice's label, yes or no, the
// text given, a file's name, an approval with its reason.
func AnswerText(a *work.PendingAction) string {
	var v any
	_ = json.Unmarshal(a.Answer, &v)
	switch a.Kind {
	case work.KindChoice:
		value, _ := v.(string)
		for _, o := range a.Options {
			if o.Value == value && o.Label != "" {
				return o.Label
			}
		}
		return value
	case work.KindConfirmation:
		if b, _ := v.(bool); b {
			return "Yes"
		}
		return "No"
	case work.KindFile:
		if m, ok := v.(map[string]any); ok {
			name, _ := m["name"].(string)
			return "Sent " + name
		}
	case work.KindApproval:
		if m, ok := v.(map[string]any); ok {
			approved, _ := m["approved"].(bool)
			reason, _ := m["reason"].(string)
			text := "Rejected"
			if approved {
				text = "Approved"
			}
			if reason != "" {
				text += ": " + reason
			}
			return text
		}
	}
	if s, ok := v.(string); ok {
		return s
	}
	return string(a.Answer)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
