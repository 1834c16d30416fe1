package workapi

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	platformv1 "platform.dev/platform/apis/platform/v1"
	workv1 "platform.dev/platform/apis/work/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
)

// reader runs the SQL reads of the views and counts them, so that tests and metrics see what
// lists and watches cost the store.
type reader struct {
	db      *store.Store
	queries atomic.Int64
}

func (r *reader) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	r.queries.Add(1)
	return r.db.DB().QueryContext(ctx, r.db.Rebind(q), args...)
}

func (r *reader) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	r.queries.Add(1)
	return r.db.DB().QueryRowContext(ctx, r.db.Rebind(q), args...)
}

func fromMS(v int64) metav1.Time {
	if v == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.UnixMilli(v).UTC())
}

// page is what one list query asks: the workspace, the rows after a name (names are UUIDv7,
// time-ordered: newest first, so a page boundary never moves as rows change), at most limit rows,
// and the equalities a selector pushes down to SQL.
type page struct {
	workspaceID string
	namespace   string
	// principal is the caller's Principal, for the kinds a caller sees only their own of.
	principal string
	after     string
	limit     int
	equal     map[string]string
}

// query finishes q, a SELECT ending in its WHERE clause, with the page: an equality for each
// field selector the kind has a column for (columns: field -> column), the position after which
// the page starts, newest id first, and the page's size. Fields are taken in a fixed order, so
// that one selection is always one statement text.
func (p page) query(q string, args []any, columns map[string]string, id string) (string, []any) {
	for _, field := range slices.Sorted(maps.Keys(columns)) {
		if v, ok := p.equal[field]; ok {
			q += ` AND ` + columns[field] + ` = ?`
			args = append(args, v)
		}
	}
	if p.after != "" {
		q += ` AND ` + id + ` < ?`
		args = append(args, p.after)
	}
	return q + ` ORDER BY ` + id + ` DESC LIMIT ?`, append(args, p.limit)
}

// kindReads are the reads of one kind.
type kindReads interface {
	get(ctx context.Context, r *reader, p page, name string) (runtime.Object, error)
	list(ctx context.Context, r *reader, p page) ([]runtime.Object, error)
}

// setLabel sets a label when value is a valid label value; another one (too long, or a Pack's
// Entry, namespace/name) is only a field.
func setLabel(m *metav1.ObjectMeta, key, value string) {
	if value == "" || len(validation.IsValidLabelValue(value)) > 0 {
		return
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[key] = value
}

// entryOf is how an object names its Entry: its name for the workspace's own Entries (resource
// namespace default), "publisher.name/name" for an Entry a Pack installed. Work rows belong to
// the workspace, not to a resource namespace (they are listed in the workspace's own namespace):
// this is how a Pack's Work is told apart.
func entryOf(resourceNamespace, name string) string {
	if name == "" || resourceNamespace == "" || resourceNamespace == string(platformv1.DefaultResourceNamespace) {
		return name
	}
	return resourceNamespace + "/" + name
}

// entryColumns are the selectable fields of a kind that names its Entry, with the Entry's
// resource namespace and name columns: a selection of status.entry=ns/name is pushed down as both
// (a bare name as the name only: the selector then leaves out the Pack's Entries of that name).
func entryColumns(p page, columns map[string]string, namespaceColumn string) page {
	v, ok := p.equal["status.entry"]
	if !ok {
		return p
	}
	equal := maps.Clone(p.equal)
	if rns, name, qualified := strings.Cut(v, "/"); qualified {
		equal["status.entry"], equal["status.entryNamespace"] = name, rns
		columns["status.entryNamespace"] = namespaceColumn
	}
	p.equal = equal
	return p
}

// ---- Tasks ----

type taskReads struct{}

const taskSelect = `SELECT t.id, t.interaction_id, t.title, t.state, t.visible, t.current_run_id, t.reason, t.milestones, t.version,
	t.created_at, t.updated_at, t.ended_at, COALESCE(i.entry_namespace, ''), COALESCE(i.entry_name, ''),
	COALESCE((SELECT o.namespace || '/' || o.name FROM trigger_occurrences o WHERE o.work_task_id = t.id ORDER BY o.fired_at LIMIT 1), '')
	FROM work_tasks t LEFT JOIN interactions i ON i.id = t.interaction_id`

func scanTaskRow(rows interface{ Scan(...any) error }, ns string) (*workv1.Task, string, error) {
	var (
		t                               workv1.Task
		interaction                     sql.NullString
		visible, milestones             int64
		runID, entryNS, entryName, trig string
		createdAt, updatedAt, endedAt   int64
	)
	if err := rows.Scan(&t.Name, &interaction, &t.Status.Title, &t.Status.State, &visible, &runID, &t.Status.Reason, &milestones,
		&t.Status.Version, &createdAt, &updatedAt, &endedAt, &entryNS, &entryName, &trig); err != nil {
		return nil, "", err
	}
	t.Namespace = ns
	t.UID = uidOf("Task", t.Name)
	t.CreationTimestamp = fromMS(createdAt)
	t.Status.Interaction = interaction.String
	t.Status.Visible = visible != 0
	t.Status.Milestones = int32(milestones)
	t.Status.UpdatedAt = fromMS(updatedAt)
	if endedAt != 0 {
		e := fromMS(endedAt)
		t.Status.EndedAt = &e
	}
	t.Status.Entry = entryOf(entryNS, entryName)
	if _, name, ok := strings.Cut(trig, "/"); ok {
		t.Status.Trigger = name
	}
	setLabel(&t.ObjectMeta, workv1.LabelState, t.Status.State)
	setLabel(&t.ObjectMeta, workv1.LabelEntry, t.Status.Entry)
	setLabel(&t.ObjectMeta, workv1.LabelTrigger, t.Status.Trigger)
	return &t, runID, nil
}

func (taskReads) get(ctx context.Context, r *reader, p page, name string) (runtime.Object, error) {
	t, runID, err := scanTaskRow(r.queryRow(ctx, taskSelect+` WHERE t.id = ? AND t.workspace_id = ?`, name, p.workspaceID), p.namespace)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apierrors.NewNotFound(workv1.Resource("tasks"), name)
	}
	if err != nil {
		return nil, err
	}
	if err := taskQuestions(ctx, r, t, runID); err != nil {
		return nil, err
	}
	used, err := usageOf(ctx, r, work.TasksUsageQuery(1), p.workspaceID, []string{t.Name})
	if err != nil {
		return nil, err
	}
	t.Status.Usage = used[t.Name]
	return t, nil
}

func (taskReads) list(ctx context.Context, r *reader, p page) ([]runtime.Object, error) {
	columns := map[string]string{"status.state": "t.state", "metadata.name": "t.id", "status.entry": "i.entry_name", "status.interaction": "t.interaction_id"}
	q, args := entryColumns(p, columns, "i.entry_namespace").query(taskSelect+` WHERE t.workspace_id = ?`, []any{p.workspaceID}, columns, "t.id")
	rows, err := r.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var (
		out  []runtime.Object
		runs []string
	)
	for rows.Next() {
		t, runID, err := scanTaskRow(rows, p.namespace)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, t)
		runs = append(runs, runID)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, obj := range out {
		if err := taskQuestions(ctx, r, obj.(*workv1.Task), runs[i]); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	ids := make([]string, 0, len(out))
	for _, obj := range out {
		ids = append(ids, obj.(*workv1.Task).Name)
	}
	// The page's usage in one statement, however many Tasks it holds.
	used, err := usageOf(ctx, r, work.TasksUsageQuery(len(ids)), p.workspaceID, ids)
	if err != nil {
		return nil, err
	}
	for _, obj := range out {
		t := obj.(*workv1.Task)
		t.Status.Usage = used[t.Name]
	}
	return out, nil
}

// taskQuestions fills what a Task waits on: the open questions of its run when it needs an
// action (one query, only for those Tasks), "resume" when it is paused.
func taskQuestions(ctx context.Context, r *reader, t *workv1.Task, runID string) error {
	switch t.Status.State {
	case workplace.TaskPaused:
		t.Status.WaitingOn = "resume"
		return nil
	case workplace.TaskActionRequired:
	default:
		return nil
	}
	actions, err := openActions(ctx, r, `run_id = ?`, runID)
	if err != nil {
		return err
	}
	t.Status.PendingActions = actions
	if len(actions) > 0 {
		t.Status.WaitingOn = actions[0].Prompt
		if t.Status.WaitingOn == "" {
			t.Status.WaitingOn = actions[0].Kind
		}
	}
	return nil
}

// maxShownActions bounds the open questions an object shows.
const maxShownActions = 10

// openActions lists open PendingActions: id, kind, prompt and expiry, never the token's hash.
func openActions(ctx context.Context, r *reader, where string, arg string) ([]workv1.PendingActionSummary, error) {
	rows, err := r.query(ctx, `SELECT id, kind, prompt, expires_at FROM pending_actions WHERE `+where+` AND status = ?
		ORDER BY created_at LIMIT ?`, arg, work.ActionCreated, maxShownActions)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []workv1.PendingActionSummary
	for rows.Next() {
		var (
			a       workv1.PendingActionSummary
			expires int64
		)
		if err := rows.Scan(&a.ID, &a.Kind, &a.Prompt, &expires); err != nil {
			return nil, err
		}
		if expires != 0 {
			e := fromMS(expires)
			a.ExpiresAt = &e
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ---- Interactions ----

type interactionReads struct{}

const interactionSelect = `SELECT id, entry_namespace, entry_name, title, state, last_task_id, version, created_at, updated_at FROM interactions`

func scanInteractionRow(row interface{ Scan(...any) error }, ns string) (*workv1.Interaction, error) {
	var (
		i                    workv1.Interaction
		entryNS              string
		lastTask             sql.NullString
		createdAt, updatedAt int64
	)
	if err := row.Scan(&i.Name, &entryNS, &i.Status.Entry, &i.Status.Title, &i.Status.State, &lastTask, &i.Status.Version,
		&createdAt, &updatedAt); err != nil {
		return nil, err
	}
	i.Status.Entry = entryOf(entryNS, i.Status.Entry)
	i.Namespace = ns
	i.UID = uidOf("Interaction", i.Name)
	i.CreationTimestamp = fromMS(createdAt)
	i.Status.Task = lastTask.String
	i.Status.UpdatedAt = fromMS(updatedAt)
	setLabel(&i.ObjectMeta, workv1.LabelState, i.Status.State)
	setLabel(&i.ObjectMeta, workv1.LabelEntry, i.Status.Entry)
	return &i, nil
}

func (interactionReads) get(ctx context.Context, r *reader, p page, name string) (runtime.Object, error) {
	i, err := scanInteractionRow(r.queryRow(ctx, interactionSelect+` WHERE id = ? AND workspace_id = ?`, name, p.workspaceID), p.namespace)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apierrors.NewNotFound(workv1.Resource("interactions"), name)
	}
	if err != nil {
		return nil, err
	}
	return i, interactionDetails(ctx, r, i)
}

func (interactionReads) list(ctx context.Context, r *reader, p page) ([]runtime.Object, error) {
	columns := map[string]string{"status.state": "state", "metadata.name": "id", "status.entry": "entry_name"}
	q, args := entryColumns(p, columns, "entry_namespace").query(interactionSelect+` WHERE workspace_id = ?`, []any{p.workspaceID}, columns, "id")
	rows, err := r.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var out []runtime.Object
	for rows.Next() {
		i, err := scanInteractionRow(rows, p.namespace)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, i)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, obj := range out {
		if err := interactionDetails(ctx, r, obj.(*workv1.Interaction)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// interactionDetails adds the conversation's most recent messages (bounded) and open questions.
func interactionDetails(ctx context.Context, r *reader, i *workv1.Interaction) error {
	rows, err := r.query(ctx, `SELECT seq, role, kind, text, created_at FROM interaction_messages WHERE interaction_id = ?
		ORDER BY seq DESC LIMIT ?`, i.Name, workv1.MaxInteractionMessages)
	if err != nil {
		return err
	}
	var msgs []workv1.InteractionMessage
	for rows.Next() {
		var (
			m  workv1.InteractionMessage
			at int64
		)
		if err := rows.Scan(&m.Seq, &m.Role, &m.Kind, &m.Text, &at); err != nil {
			rows.Close()
			return err
		}
		m.CreatedAt = fromMS(at)
		msgs = append(msgs, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for a, b := 0, len(msgs)-1; a < b; a, b = a+1, b-1 {
		msgs[a], msgs[b] = msgs[b], msgs[a]
	}
	i.Status.Messages = msgs
	if i.Status.State == workplace.InteractionClosed {
		return nil
	}
	i.Status.PendingActions, err = openActions(ctx, r, `interaction_id = ?`, i.Name)
	return err
}

// ---- FlowRuns ----

type flowRunReads struct{}

const flowRunSelect = `SELECT id, COALESCE(interaction_id, ''), work_task_id, COALESCE(parent_flow_run_id, ''), flow_name, flow_version,
	state, current_step, reason, version, created_at, updated_at FROM flow_runs`

func scanFlowRunRow(row interface{ Scan(...any) error }, ns string) (*workv1.FlowRun, error) {
	var (
		f                    workv1.FlowRun
		createdAt, updatedAt int64
	)
	if err := row.Scan(&f.Name, &f.Status.Interaction, &f.Status.Task, &f.Status.ParentFlowRun, &f.Status.Flow, &f.Status.FlowVersion,
		&f.Status.State, &f.Status.CurrentStep, &f.Status.Reason, &f.Status.Version, &createdAt, &updatedAt); err != nil {
		return nil, err
	}
	f.Namespace = ns
	f.UID = uidOf("FlowRun", f.Name)
	f.CreationTimestamp = fromMS(createdAt)
	f.Status.UpdatedAt = fromMS(updatedAt)
	setLabel(&f.ObjectMeta, workv1.LabelState, f.Status.State)
	return &f, nil
}

func (flowRunReads) get(ctx context.Context, r *reader, p page, name string) (runtime.Object, error) {
	f, err := scanFlowRunRow(r.queryRow(ctx, flowRunSelect+` WHERE id = ? AND workspace_id = ?`, name, p.workspaceID), p.namespace)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apierrors.NewNotFound(workv1.Resource("flowruns"), name)
	}
	if err != nil {
		return nil, err
	}
	used, err := usageOf(ctx, r, work.RunsUsageQuery(1), p.workspaceID, []string{f.Name})
	if err != nil {
		return nil, err
	}
	f.Status.Usage = used[f.Name]
	return f, nil
}

func (flowRunReads) list(ctx context.Context, r *reader, p page) ([]runtime.Object, error) {
	q, args := p.query(flowRunSelect+` WHERE workspace_id = ?`, []any{p.workspaceID}, map[string]string{"status.state": "state", "metadata.name": "id",
		"status.flow": "flow_name", "status.task": "work_task_id", "status.interaction": "interaction_id"}, "id")
	rows, err := r.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var (
		out []runtime.Object
		ids []string
	)
	for rows.Next() {
		f, err := scanFlowRunRow(rows, p.namespace)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, f)
		ids = append(ids, f.Name)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return out, err
	}
	// The page's usage in one statement, however many runs it holds.
	used, err := usageOf(ctx, r, work.RunsUsageQuery(len(ids)), p.workspaceID, ids)
	if err != nil {
		return nil, err
	}
	for _, obj := range out {
		f := obj.(*workv1.FlowRun)
		f.Status.Usage = used[f.Name]
	}
	return out, nil
}

// usageOf runs q, a usage query of the Work store by key (work.RunsUsageQuery,
// work.TasksUsageQuery) over the workspace's keys, and answers the usage of each key; a key
// without model calls has the zero usage.
func usageOf(ctx context.Context, r *reader, q, workspaceID string, keys []string) (map[string]*workv1.ModelUsage, error) {
	args := make([]any, 0, len(keys)+1)
	args = append(args, workspaceID)
	for _, k := range keys {
		args = append(args, k)
	}
	rows, err := r.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	sums := map[string][]work.CurrencySum{}
	for rows.Next() {
		var key string
		c, err := work.ScanCurrencySum(rows, &key)
		if err != nil {
			return nil, err
		}
		sums[key] = append(sums[key], c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]*workv1.ModelUsage, len(keys))
	for _, k := range keys {
		u := work.UsageOf(sums[k])
		v := &workv1.ModelUsage{ModelCalls: u.ModelCalls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
		if u.Cost != nil {
			v.Cost = &workv1.Money{Amount: u.Cost.Amount, Currency: u.Cost.Currency}
		}
		for _, c := range u.Costs {
			v.Costs = append(v.Costs, workv1.Money{Amount: c.Amount, Currency: c.Currency})
		}
		out[k] = v
	}
	return out, nil
}
