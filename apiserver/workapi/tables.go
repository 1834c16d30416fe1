package workapi

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	workv1 "platform.dev/platform/apis/work/v1"
	"platform.dev/platform/apiserver/native"
	"platform.dev/platform/apiserver/usage"
)

func metaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("work kind without object meta: %T", obj))
	}
	return m
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

var (
	tokensColumn = metav1.TableColumnDefinition{Name: "Tokens", Type: "integer", Description: "Input and output tokens of its model calls"}
	costColumn   = metav1.TableColumnDefinition{Name: "Cost", Type: "string", Priority: 1,
		Description: "The cost of its model calls in each currency they were priced in"}
)

// tokensCell is the total tokens of u (0 without usage).
func tokensCell(u *workv1.ModelUsage) int64 {
	if u == nil {
		return 0
	}
	return u.TotalTokens
}

// costCell writes u's cost in each currency, as people write money: "0.0011 USD, 0.0005 EUR".
func costCell(u *workv1.ModelUsage) string {
	if u == nil {
		return ""
	}
	parts := make([]string, 0, len(u.Costs))
	for _, c := range u.Costs {
		amount := c.Amount
		if micros, err := usage.ParseMicros(amount); err == nil {
			amount = usage.ShortMicros(micros)
		}
		parts = append(parts, amount+" "+c.Currency)
	}
	return strings.Join(parts, ", ")
}

var taskTable = native.TableConvertor{
	Columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Title", Type: "string", Description: "The Task's title"},
		{Name: "State", Type: "string", Description: "pending, running, paused, action-required, completed, failed or cancelled"},
		{Name: "Waiting-On", Type: "string", Description: "The question it waits on, or resume when paused"},
		tokensColumn,
		{Name: "Entry", Type: "string", Priority: 1, Description: "The Entry the work was submitted through"},
		{Name: "Trigger", Type: "string", Priority: 1, Description: "The Trigger that submitted the work"},
		costColumn,
		ageColumn},
	Cells: func(obj runtime.Object) []any {
		t := obj.(*workv1.Task)
		return []any{t.Name, short(t.Status.Title, 40), t.Status.State, short(t.Status.WaitingOn, 40), tokensCell(t.Status.Usage),
			t.Status.Entry, t.Status.Trigger, costCell(t.Status.Usage), native.Age(t.CreationTimestamp)}
	},
}

var interactionTable = native.TableConvertor{
	Columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Title", Type: "string", Description: "The conversation's title"},
		{Name: "State", Type: "string", Description: "Active, Idle or Closed"},
		{Name: "Entry", Type: "string", Description: "The Entry it was opened from"},
		{Name: "Messages", Type: "integer", Description: "Its recent messages (at most 20)"},
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it works on"},
		ageColumn},
	Cells: func(obj runtime.Object) []any {
		i := obj.(*workv1.Interaction)
		return []any{i.Name, short(i.Status.Title, 40), i.Status.State, i.Status.Entry, int64(len(i.Status.Messages)), i.Status.Task, native.Age(i.CreationTimestamp)}
	},
}

var flowRunTable = native.TableConvertor{
	Columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Flow", Type: "string", Description: "The Flow it executes"},
		{Name: "Version", Type: "string", Description: "The Flow version (empty for a Draft Run)"},
		{Name: "State", Type: "string", Description: "The run's state"},
		{Name: "Step", Type: "string", Description: "The step it is at"},
		tokensColumn,
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it works on"},
		costColumn,
		ageColumn},
	Cells: func(obj runtime.Object) []any {
		f := obj.(*workv1.FlowRun)
		return []any{f.Name, f.Status.Flow, f.Status.FlowVersion, f.Status.State, f.Status.CurrentStep, tokensCell(f.Status.Usage),
			f.Status.Task, costCell(f.Status.Usage), native.Age(f.CreationTimestamp)}
	},
}

func timeCell(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

var pendingActionTable = native.TableConvertor{
	Columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Kind", Type: "string", Description: "text, choice, confirmation, file or approval"},
		{Name: "State", Type: "string", Description: "created (open), completed, expired or cancelled"},
		{Name: "Prompt", Type: "string", Description: "The question"},
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it belongs to"},
		{Name: "Expires", Type: "string", Priority: 1, Description: "When it stops being answerable"},
		ageColumn},
	Cells: func(obj runtime.Object) []any {
		a := obj.(*workv1.PendingAction)
		return []any{a.Name, a.Status.Kind, a.Status.State, short(a.Status.Prompt, 40), a.Status.Task, timeCell(a.Status.ExpiresAt), native.Age(a.CreationTimestamp)}
	},
}

var workItemTable = native.TableConvertor{
	Columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Title", Type: "string", Description: "The submission's title"},
		{Name: "Flow", Type: "string", Description: "The Flow it runs"},
		{Name: "State", Type: "string", Description: "The state of its run"},
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it belongs to"},
		ageColumn},
	Cells: func(obj runtime.Object) []any {
		w := obj.(*workv1.WorkItem)
		return []any{w.Name, short(w.Status.Title, 40), w.Status.Flow, w.Status.State, w.Status.Task, native.Age(w.CreationTimestamp)}
	},
}

var notificationTable = native.TableConvertor{
	Columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Kind", Type: "string", Description: "question, task-completed or task-failed"},
		{Name: "Title", Type: "string", Description: "What it says"},
		{Name: "Attention", Type: "boolean", Description: "Whether it still needs attention"},
		{Name: "Read", Type: "boolean", Description: "Whether it was read"},
		ageColumn},
	Cells: func(obj runtime.Object) []any {
		n := obj.(*workv1.Notification)
		return []any{n.Name, n.Status.Kind, short(n.Status.Title, 40), n.Status.Attention, n.Status.Read, native.Age(n.CreationTimestamp)}
	},
}

var triggerOccurrenceTable = native.TableConvertor{
	Columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Trigger", Type: "string", Description: "The Trigger that fired"},
		{Name: "Outcome", Type: "string", Description: "Submitted, Skipped, Failed or Missed"},
		{Name: "Reason", Type: "string", Description: "Why"},
		{Name: "Scheduled", Type: "string", Description: "The instant it stands for"},
		{Name: "Task", Type: "string", Priority: 1, Description: "The Task it submitted"},
		ageColumn},
	Cells: func(obj runtime.Object) []any {
		o := obj.(*workv1.TriggerOccurrence)
		return []any{o.Name, o.Status.Trigger, o.Status.Outcome, o.Status.Reason, timeCell(&o.Status.ScheduledAt), o.Status.Task, native.Age(o.CreationTimestamp)}
	},
}
