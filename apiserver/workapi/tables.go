package workapi

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	workv1 "platform.dev/platform/apis/work/v1"
)

func metaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("work kind without object meta: %T", obj))
	}
	return m
}

// tableConvertor prints the columns kubectl shows for a kind.
type tableConvertor struct {
	columns []metav1.TableColumnDefinition
	cells   func(obj runtime.Object) []any
}

func (c tableConvertor) ConvertToTable(_ context.Context, object runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: c.columns}
	if m, err := meta.ListAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
	} else if m, err := meta.CommonAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	var items []runtime.Object
	if meta.IsListType(object) {
		var err error
		if items, err = meta.ExtractList(object); err != nil {
			return nil, err
		}
	} else {
		items = []runtime.Object{object}
	}
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		table.Rows = append(table.Rows, metav1.TableRow{Cells: c.cells(item), Object: runtime.RawExtension{Object: item}})
	}
	return table, nil
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// short keeps a cell readable: a long title or question is cut.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "The object's id"}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: "Time since it was created"}
)

var taskTable = tableConvertor{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Title", Type: "string", Description: "The Task's title"},
		{Name: "State", Type: "string", Description: "pending, running, paused, action-required, completed, failed or cancelled"},
		{Name: "Waiting-On", Type: "string", Description: "The question it waits on, or resume when paused"},
		{Name: "Entry", Type: "string", Priority: 1, Description: "The Entry the work was submitted through"},
		{Name: "Trigger", Type: "string", Priority: 1, Description: "The Trigger that submitted the work"},
		ageColumn},
	cells: func(obj runtime.Object) []any {
		t := obj.(*workv1.Task)
		return []any{t.Name, short(t.Status.Title, 40), t.Status.State, short(t.Status.WaitingOn, 40), t.Status.Entry, t.Status.Trigger, age(t.CreationTimestamp)}
	},
}

var interactionTable = tableConvertor{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Title", Type: "string", Description: "The conversation's title"},
		{Name: "State", Type: "string", Description: "Active, Idle or Closed"},
		{Name: "Entry", Type: "string", Description: "The Entry it was opened from"},
		{Name: "Messages", Type: "integer", Description: "Its recent messages (at most 20)"},
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it works on"},
		ageColumn},
	cells: func(obj runtime.Object) []any {
		i := obj.(*workv1.Interaction)
		return []any{i.Name, short(i.Status.Title, 40), i.Status.State, i.Status.Entry, int64(len(i.Status.Messages)), i.Status.Task, age(i.CreationTimestamp)}
	},
}

var flowRunTable = tableConvertor{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Flow", Type: "string", Description: "The Flow it executes"},
		{Name: "Version", Type: "string", Description: "The Flow version (empty for a Draft Run)"},
		{Name: "State", Type: "string", Description: "The run's state"},
		{Name: "Step", Type: "string", Description: "The step it is at"},
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it works on"},
		ageColumn},
	cells: func(obj runtime.Object) []any {
		f := obj.(*workv1.FlowRun)
		return []any{f.Name, f.Status.Flow, f.Status.FlowVersion, f.Status.State, f.Status.CurrentStep, f.Status.Task, age(f.CreationTimestamp)}
	},
}

func timeCell(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

var pendingActionTable = tableConvertor{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Kind", Type: "string", Description: "text, choice, confirmation, file or approval"},
		{Name: "State", Type: "string", Description: "created (open), completed, expired or cancelled"},
		{Name: "Prompt", Type: "string", Description: "The question"},
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it belongs to"},
		{Name: "Expires", Type: "string", Priority: 1, Description: "When it stops being answerable"},
		ageColumn},
	cells: func(obj runtime.Object) []any {
		a := obj.(*workv1.PendingAction)
		return []any{a.Name, a.Status.Kind, a.Status.State, short(a.Status.Prompt, 40), a.Status.Task, timeCell(a.Status.ExpiresAt), age(a.CreationTimestamp)}
	},
}

var workItemTable = tableConvertor{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Title", Type: "string", Description: "The submission's title"},
		{Name: "Flow", Type: "string", Description: "The Flow it runs"},
		{Name: "State", Type: "string", Description: "The state of its run"},
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it belongs to"},
		ageColumn},
	cells: func(obj runtime.Object) []any {
		w := obj.(*workv1.WorkItem)
		return []any{w.Name, short(w.Status.Title, 40), w.Status.Flow, w.Status.State, w.Status.Task, age(w.CreationTimestamp)}
	},
}

var notificationTable = tableConvertor{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Kind", Type: "string", Description: "question, task-completed or task-failed"},
		{Name: "Title", Type: "string", Description: "What it says"},
		{Name: "Attention", Type: "boolean", Description: "Whether it still needs attention"},
		{Name: "Read", Type: "boolean", Description: "Whether it was read"},
		ageColumn},
	cells: func(obj runtime.Object) []any {
		n := obj.(*workv1.Notification)
		return []any{n.Name, n.Status.Kind, short(n.Status.Title, 40), n.Status.Attention, n.Status.Read, age(n.CreationTimestamp)}
	},
}

var triggerOccurrenceTable = tableConvertor{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Trigger", Type: "string", Description: "The Trigger that fired"},
		{Name: "Outcome", Type: "string", Description: "Submitted, Skipped, Failed or Missed"},
		{Name: "Reason", Type: "string", Description: "Why"},
		{Name: "Scheduled", Type: "string", Description: "The instant it stands for"},
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it submitted"},
		ageColumn},
	cells: func(obj runtime.Object) []any {
		o := obj.(*workv1.TriggerOccurrence)
		return []any{o.Name, o.Status.Trigger, o.Status.Outcome, o.Status.Reason, timeCell(&o.Status.ScheduledAt), o.Status.Task, age(o.CreationTimestamp)}
	},
}
