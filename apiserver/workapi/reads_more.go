package workapi

import (
	"context"
	"database/sql"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	workv1 "platform.dev/platform/apis/work/v1"
)

// rowReads are the reads of a kind that is one row of one table: get by id, list in id order with
// the selector's equalities pushed down to columns.
type rowReads struct {
	plural string
	// from is the SELECT of the kind's columns; workspace and id name the columns of the
	// workspace and the id.
	from, workspace, id string
	// columns maps selectable fields to columns.
	columns map[string]string
	// principal, when set, is the column of the Principal a row belongs to: a caller sees only
	// their own rows, and a caller that is no Principal none.
	principal string
	scan      func(row interface{ Scan(...any) error }, ns string) (runtime.Object, error)
}

func (k rowReads) where(p page) (string, []any) {
	q := ` WHERE ` + k.workspace + ` = ?`
	args := []any{p.workspaceID}
	if k.principal != "" {
		q += ` AND ` + k.principal + ` = ?`
		args = append(args, p.principal)
	}
	return q, args
}

func (k rowReads) get(ctx context.Context, r *reader, p page, name string) (runtime.Object, error) {
	if k.principal != "" && p.principal == "" {
		return nil, apierrors.NewNotFound(workv1.Resource(k.plural), name)
	}
	q, args := k.where(p)
	obj, err := k.scan(r.queryRow(ctx, k.from+q+` AND `+k.id+` = ?`, append(args, name)...), p.namespace)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apierrors.NewNotFound(workv1.Resource(k.plural), name)
	}
	return obj, err
}

func (k rowReads) list(ctx context.Context, r *reader, p page) ([]runtime.Object, error) {
	if k.principal != "" && p.principal == "" {
		return nil, nil
	}
	where, args := k.where(p)
	q, args := p.query(k.from+where, args, k.columns, k.id)
	rows, err := r.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []runtime.Object
	for rows.Next() {
		obj, err := k.scan(rows, p.namespace)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, rows.Err()
}

func optionalTime(ms int64) *metav1.Time {
	if ms == 0 {
		return nil
	}
	t := fromMS(ms)
	return &t
}

var pendingActionReads = rowReads{plural: "pendingactions",
	from: `SELECT id, kind, prompt, status, step, task_id, COALESCE(interaction_id, ''), run_id, expires_at, answered_at, version,
		created_at FROM pending_actions`,
	workspace: "workspace_id", id: "id",
	columns: map[string]string{"metadata.name": "id", "status.state": "status", "status.task": "task_id",
		"status.interaction": "interaction_id", "status.flowRun": "run_id"},
	scan: func(row interface{ Scan(...any) error }, ns string) (runtime.Object, error) {
		var (
			a                          workv1.PendingAction
			expires, answered, created int64
		)
		if err := row.Scan(&a.Name, &a.Status.Kind, &a.Status.Prompt, &a.Status.State, &a.Status.Step, &a.Status.Task,
			&a.Status.Interaction, &a.Status.FlowRun, &expires, &answered, &a.Status.Version, &created); err != nil {
			return nil, err
		}
		a.Namespace, a.UID, a.CreationTimestamp = ns, uidOf("PendingAction", a.Name), fromMS(created)
		a.Status.ExpiresAt, a.Status.AnsweredAt = optionalTime(expires), optionalTime(answered)
		setLabel(&a.ObjectMeta, workv1.LabelState, a.Status.State)
		return &a, nil
	}}

var workItemReads = rowReads{plural: "workitems",
	from: `SELECT id, type, title, flow_name, flow_version, status, reason, work_task_id, COALESCE(interaction_id, ''), flow_run_id,
		created_at, updated_at FROM work_items`,
	workspace: "workspace_id", id: "id",
	columns: map[string]string{"metadata.name": "id", "status.state": "status", "status.flow": "flow_name",
		"status.task": "work_task_id", "status.interaction": "interaction_id"},
	scan: func(row interface{ Scan(...any) error }, ns string) (runtime.Object, error) {
		var (
			w                workv1.WorkItem
			created, updated int64
		)
		if err := row.Scan(&w.Name, &w.Status.Type, &w.Status.Title, &w.Status.Flow, &w.Status.FlowVersion, &w.Status.State,
			&w.Status.Reason, &w.Status.Task, &w.Status.Interaction, &w.Status.FlowRun, &created, &updated); err != nil {
			return nil, err
		}
		w.Namespace, w.UID, w.CreationTimestamp = ns, uidOf("WorkItem", w.Name), fromMS(created)
		w.Status.UpdatedAt = fromMS(updated)
		setLabel(&w.ObjectMeta, workv1.LabelState, w.Status.State)
		return &w, nil
	}}

var notificationReads = rowReads{plural: "notifications",
	from: `SELECT id, kind, title, attention, read_at, resolution, COALESCE(task_id, ''), COALESCE(interaction_id, ''),
		pending_action_id, created_at FROM notifications`,
	workspace: "workspace_id", id: "id", principal: "principal_id",
	columns: map[string]string{"metadata.name": "id", "status.kind": "kind"},
	scan: func(row interface{ Scan(...any) error }, ns string) (runtime.Object, error) {
		var (
			n                          workv1.Notification
			attention, readAt, created int64
		)
		if err := row.Scan(&n.Name, &n.Status.Kind, &n.Status.Title, &attention, &readAt, &n.Status.Resolution, &n.Status.Task,
			&n.Status.Interaction, &n.Status.PendingAction, &created); err != nil {
			return nil, err
		}
		n.Namespace, n.UID, n.CreationTimestamp = ns, uidOf("Notification", n.Name), fromMS(created)
		n.Status.Attention, n.Status.Read = attention != 0, readAt != 0
		return &n, nil
	}}

var triggerOccurrenceReads = rowReads{plural: "triggeroccurrences",
	from: `SELECT id, name, kind, outcome, reason, message, scheduled_at, fired_at, COALESCE(work_item_id, ''), COALESCE(work_task_id, ''),
		COALESCE(flow_run_id, '') FROM trigger_occurrences`,
	workspace: "workspace_id", id: "id",
	columns: map[string]string{"metadata.name": "id", "status.trigger": "name", "status.outcome": "outcome"},
	scan: func(row interface{ Scan(...any) error }, ns string) (runtime.Object, error) {
		var (
			o                workv1.TriggerOccurrence
			scheduled, fired int64
		)
		if err := row.Scan(&o.Name, &o.Status.Trigger, &o.Status.Kind, &o.Status.Outcome, &o.Status.Reason, &o.Status.Message,
			&scheduled, &fired, &o.Status.WorkItem, &o.Status.Task, &o.Status.FlowRun); err != nil {
			return nil, err
		}
		o.Namespace, o.UID, o.CreationTimestamp = ns, uidOf("TriggerOccurrence", o.Name), fromMS(fired)
		o.Status.ScheduledAt, o.Status.FiredAt = fromMS(scheduled), fromMS(fired)
		setLabel(&o.ObjectMeta, workv1.LabelTrigger, o.Status.Trigger)
		return &o, nil
	}}
