package native

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// TableConvertor prints the columns kubectl shows for a kind, as kube-apiserver's printers do:
// the native kinds here and the Work plane's kinds (apiserver/workapi).
type TableConvertor struct {
	Columns []metav1.TableColumnDefinition
	Cells   func(obj runtime.Object) []any
}

func (c TableConvertor) ConvertToTable(_ context.Context, object runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: c.Columns}
	if m, err := meta.ListAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
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
	for _, item := range items {
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  c.Cells(item),
			Object: runtime.RawExtension{Object: item},
		})
	}
	return table, nil
}

func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
}

// Age is a creation time as kubectl's AGE column shows it.
func Age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

var namespaceTable = TableConvertor{
	Columns: []metav1.TableColumnDefinition{nameColumn(),
		{Name: "Status", Type: "string", Description: "The status of the namespace"}, ageColumn()},
	Cells: func(obj runtime.Object) []any {
		ns := obj.(*corev1.Namespace)
		return []any{ns.Name, string(ns.Status.Phase), Age(ns.CreationTimestamp)}
	},
}

var leaseTable = TableConvertor{
	Columns: []metav1.TableColumnDefinition{nameColumn(),
		{Name: "Holder", Type: "string", Description: "The holder of the lease"}, ageColumn()},
	Cells: func(obj runtime.Object) []any {
		l := obj.(*coordinationv1.Lease)
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []any{l.Name, holder, Age(l.CreationTimestamp)}
	},
}

var eventTable = TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: "Time of the last occurrence"},
		{Name: "Type", Type: "string", Description: "Type of this event (Normal, Warning)"},
		{Name: "Reason", Type: "string", Description: "Why the action was taken"},
		{Name: "Object", Type: "string", Description: "The object this event is about"},
		{Name: "Message", Type: "string", Description: "A description of the event"},
	},
	Cells: func(obj runtime.Object) []any {
		ev := obj.(*corev1.Event)
		last := ev.LastTimestamp
		if last.IsZero() {
			last = metav1.NewTime(ev.EventTime.Time)
		}
		if last.IsZero() {
			last = ev.CreationTimestamp
		}
		object := fmt.Sprintf("%s/%s", lowerKind(ev.InvolvedObject.Kind), ev.InvolvedObject.Name)
		return []any{Age(last), ev.Type, ev.Reason, object, ev.Message}
	},
}

func lowerKind(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}
