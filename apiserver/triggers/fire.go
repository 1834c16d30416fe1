package triggers

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/internal/resourcenamespace"
)

// Firing is one occurrence to decide.
type Firing struct {
	Kind platformv1.OccurrenceKind
	// ScheduledAt is the scheduled instant; for Run now, when it was asked.
	ScheduledAt time.Time
	// PrincipalID is who a Manual occurrence fires as (the caller of Run now); a Scheduled one
	// fires as the Trigger's owner.
	PrincipalID string
	// Key identifies a Manual occurrence, so that a retried Run now submits once; a fresh one
	// when empty.
	Key string
	// Note says what the misfire policy did, when it did something; it leads the message.
	Note string
}

// Fire decides the occurrence f of Trigger t, at most once whatever the replica, restart or
// retry: it returns the occurrence as recorded, and fired false when it had been decided before
// and nothing happened now. A Scheduled occurrence fires as the Trigger's owner, whose
// authorization is evaluated now and fails closed; the target Flow resolves in the Trigger's own
// workspace; the concurrency policy applies; the Work is an autonomous Task (no Entry, no
// Interaction). What prevents a submission is recorded as a Failed occurrence with its reason.
func (s *Service) Fire(ctx context.Context, t *platformv1.Trigger, f Firing) (o Occurrence, fired bool, err error) {
	o = Occurrence{
		TriggerUID: string(t.UID), Namespace: t.Namespace, Name: t.Name, Generation: t.Generation, Kind: f.Kind,
		ScheduledAt: f.ScheduledAt.UTC().Truncate(time.Millisecond), FiredAt: s.now(), Outcome: platformv1.OccurrenceSubmitted,
	}
	switch f.Kind {
	case platformv1.ScheduledOccurrence:
		o.ID = ScheduledOccurrenceID(o.TriggerUID, o.ScheduledAt)
		o.PrincipalID = t.Annotations[platformv1.TriggerOwnerAnnotation]
	case platformv1.ManualOccurrence:
		key := f.Key
		if key == "" {
			key = uuid.NewString()
		}
		o.ID, o.PrincipalID = ManualOccurrenceID(o.TriggerUID, key), f.PrincipalID
	default:
		return o, false, fmt.Errorf("trigger occurrence: unknown kind %q", f.Kind)
	}
	if existing, err := s.occurrence(ctx, s.DB.DB(), o.ID); err == nil {
		return existing, false, nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		return o, false, err
	}
	sub, err := s.prepare(ctx, t, &o)
	if err != nil {
		return o, false, err
	}
	if f.Note != "" {
		o.Message = strings.TrimSpace(f.Note + " " + o.Message)
	}
	var inserted bool
	err = s.Work.InTx(ctx, func(tx *sql.Tx) error {
		if inserted, err = s.insert(ctx, tx, o); err != nil || !inserted {
			return err
		}
		if o.Outcome == platformv1.OccurrenceSubmitted {
			if err := s.submit(ctx, tx, t, &o, sub, f.Kind == platformv1.ManualOccurrence); err != nil {
				return err
			}
		}
		if f.Kind == platformv1.ScheduledOccurrence {
			if err := s.advance(ctx, tx, o.TriggerUID, o.ScheduledAt); err != nil {
				return err
			}
		}
		return s.prune(ctx, tx, o.TriggerUID)
	})
	if err != nil {
		return o, false, fmt.Errorf("trigger %s/%s: occurrence %s: %w", t.Namespace, t.Name, o.ID, err)
	}
	if !inserted {
		existing, err := s.occurrence(ctx, s.DB.DB(), o.ID)
		return existing, false, err
	}
	return o, true, nil
}

// prepare evaluates what the occurrence needs before its transaction: the Principal's
// authorization and the target Flow. A refusal makes o Failed with its reason; an error is the
// store's or the kube API's, and nothing is recorded.
func (s *Service) prepare(ctx context.Context, t *platformv1.Trigger, o *Occurrence) (work.Submission, error) {
	fail := func(reason, message string) (work.Submission, error) {
		o.Outcome, o.Reason, o.Message = platformv1.OccurrenceFailed, reason, message
		return work.Submission{}, nil
	}
	if o.PrincipalID == "" {
		return fail(platformv1.OwnerMissingReason, "the Trigger has no owner (annotation "+platformv1.TriggerOwnerAnnotation+
			"): it was written by a caller that is no Principal; apply it with a Principal's token (a personal access token) or through the service API")
	}
	workspace, err := resourcenamespace.WorkspaceOfName(ctx, s.Kube, t.Namespace)
	if err != nil {
		return work.Submission{}, err
	}
	wc, err := s.Access(ctx, o.PrincipalID, workspace)
	switch {
	case errors.Is(err, ErrNotAuthorized):
		return fail(platformv1.NotAuthorizedReason, fmt.Sprintf("Principal %s may not execute runs in workspace %s: %s", o.PrincipalID, workspace,
			strings.TrimSuffix(err.Error(), ": "+ErrNotAuthorized.Error())))
	case err != nil:
		return work.Submission{}, err
	}
	o.WorkspaceID = wc.WorkspaceID
	ref := t.Definition.Target.Flow
	if ref == nil {
		return fail(platformv1.FlowNotFoundReason, "the target names no Flow")
	}
	o.FlowNamespace, o.FlowName = string(ref.Namespace), string(ref.Name)
	if o.FlowNamespace == "" {
		o.FlowNamespace = string(platformv1.DefaultResourceNamespace)
	}
	ns, err := resourcenamespace.Resolve(ctx, s.Kube, t.Namespace, ref.Namespace)
	switch {
	case errors.Is(err, resourcenamespace.ErrNotFound):
		return fail(platformv1.FlowNotFoundReason, fmt.Sprintf("resource namespace %s does not exist in the workspace", o.FlowNamespace))
	case err != nil:
		return work.Submission{}, err
	}
	version, err := executor.KubeResolver{Client: s.Kube}.ResolveReference(ctx, ns, string(ref.Name), string(ref.Version))
	switch {
	case errors.Is(err, executor.ErrFlowNotFound):
		reason := platformv1.FlowNotFoundReason
		if ref.Version != "" {
			reason = platformv1.FlowVersionNotFoundReason
		}
		return fail(reason, err.Error())
	case errors.Is(err, executor.ErrFlowDisabled):
		return fail(platformv1.FlowDisabledReason, err.Error())
	case errors.Is(err, executor.ErrNoActiveVersion):
		return fail(platformv1.NoActiveVersionReason, err.Error())
	case err != nil:
		return work.Submission{}, err
	}
	o.FlowVersion = version
	input := map[string]any{}
	if raw := t.Definition.Target.Input; raw != nil && len(raw.Raw) > 0 {
		if err := json.Unmarshal(raw.Raw, &input); err != nil {
			return fail(platformv1.InvalidDefinitionReason, "definition.target.input is not a JSON object")
		}
	}
	title := t.Definition.DisplayName
	if title == "" {
		title = t.Name
	}
	wc.Namespace, wc.PrincipalID = ns, o.PrincipalID
	return work.Submission{
		ID: WorkItemID(o.ID), Context: wc, Type: WorkType, Title: title,
		Instruction: fmt.Sprintf("%s occurrence of Trigger %s at %s", o.Kind, t.Name, o.ScheduledAt.Format(time.RFC3339)),
		FlowName:    string(ref.Name), FlowVersion: version, Input: input,
	}, nil
}

// submit applies the concurrency policy and submits the Work, in the occurrence's transaction. A
// Manual occurrence (Run now) is an explicit request: it submits whatever else is active.
func (s *Service) submit(ctx context.Context, tx *sql.Tx, t *platformv1.Trigger, o *Occurrence, sub work.Submission, manual bool) error {
	policy := t.Definition.ConcurrencyPolicy
	if policy == "" {
		policy = platformv1.SkipConcurrency
	}
	if !manual && policy != platformv1.AllowConcurrency {
		active, err := s.activeWork(ctx, tx, o.TriggerUID, o.ID)
		if err != nil {
			return err
		}
		if len(active) > 0 && policy == platformv1.SkipConcurrency {
			o.Outcome, o.Reason = platformv1.OccurrenceSkipped, platformv1.ConcurrencySkippedReason
			o.Message = strings.TrimSpace(o.Message + " " + fmt.Sprintf("the Work of occurrence %s (WorkItem %s) is still %s",
				active[0].occurrenceID, active[0].workItemID, active[0].status))
			return s.update(ctx, tx, o)
		}
		for _, a := range active {
			if _, err := s.Work.CancelTx(ctx, tx, a.workspaceID, a.flowRunID, "replaced by occurrence "+o.ID+" of Trigger "+t.Name); err != nil &&
				!errors.Is(err, work.ErrConflict) {
				return err
			}
		}
	}
	item, run, _, err := s.Work.SubmitTx(ctx, tx, sub)
	if err != nil {
		return err
	}
	o.WorkItemID, o.WorkTaskID, o.FlowRunID = item.ID, item.WorkTaskID, run.ID
	return s.update(ctx, tx, o)
}

func (s *Service) update(ctx context.Context, tx *sql.Tx, o *Occurrence) error {
	_, err := tx.ExecContext(ctx, s.q(`UPDATE trigger_occurrences SET outcome = ?, reason = ?, message = ?, work_item_id = ?, work_task_id = ?,
		flow_run_id = ? WHERE id = ?`), o.Outcome, o.Reason, truncate(o.Message, 1024), nullString(o.WorkItemID), nullString(o.WorkTaskID),
		nullString(o.FlowRunID), o.ID)
	return err
}

// activeWorkItem is the still active Work of an earlier occurrence.
type activeWorkItem struct {
	occurrenceID, workItemID, flowRunID, workspaceID, status string
}

func (s *Service) activeWork(ctx context.Context, tx *sql.Tx, uid, except string) ([]activeWorkItem, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT o.id, w.id, w.flow_run_id, w.workspace_id, w.status FROM trigger_occurrences o
		JOIN work_items w ON w.id = o.work_item_id
		WHERE o.trigger_uid = ? AND o.id <> ? AND w.status NOT IN (?, ?, ?) ORDER BY o.fired_at DESC`),
		uid, except, work.StateCompleted, work.StateFailed, work.StateCancelled)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []activeWorkItem
	for rows.Next() {
		var a activeWorkItem
		if err := rows.Scan(&a.occurrenceID, &a.workItemID, &a.flowRunID, &a.workspaceID, &a.status); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Miss records, once, that the misfire policy submitted none of the instants up to latest: one
// Missed occurrence stands for all of them, and the cursor moves past them.
func (s *Service) Miss(ctx context.Context, t *platformv1.Trigger, latest time.Time, message string) (Occurrence, bool, error) {
	o := Occurrence{
		ID: ScheduledOccurrenceID(string(t.UID), latest), TriggerUID: string(t.UID), Namespace: t.Namespace, Name: t.Name,
		Generation: t.Generation, Kind: platformv1.ScheduledOccurrence, ScheduledAt: latest.UTC().Truncate(time.Millisecond), FiredAt: s.now(),
		Outcome: platformv1.OccurrenceMissed, Reason: platformv1.MisfireReason, Message: message,
	}
	var inserted bool
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		var err error
		if inserted, err = s.insert(ctx, tx, o); err != nil || !inserted {
			return err
		}
		if err := s.advance(ctx, tx, o.TriggerUID, o.ScheduledAt); err != nil {
			return err
		}
		return s.prune(ctx, tx, o.TriggerUID)
	})
	if err != nil {
		return o, false, fmt.Errorf("trigger %s/%s: missed occurrence: %w", t.Namespace, t.Name, err)
	}
	if !inserted {
		existing, err := s.occurrence(ctx, s.DB.DB(), o.ID)
		return existing, false, err
	}
	return o, true, nil
}
