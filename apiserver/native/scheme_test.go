package native

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestEventsV1IsAViewOfCoreEventsWithoutLoss(t *testing.T) {
	now := metav1.NewMicroTime(metav1.Now().Rfc3339Copy().Time)
	in := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "a.1", Namespace: "default"},
		EventTime:           now,
		Series:              &eventsv1.EventSeries{Count: 3, LastObservedTime: now},
		ReportingController: "widget-controller",
		ReportingInstance:   "widget-controller-host",
		Action:              "Reconcile",
		Reason:              "Reconciled",
		Regarding:           corev1.ObjectReference{Kind: "Widget", Namespace: "default", Name: "w", UID: "u"},
		Related:             &corev1.ObjectReference{Kind: "Pod", Name: "p"},
		Note:                "generation 1 reconciled",
		Type:                corev1.EventTypeNormal,
		DeprecatedSource:    corev1.EventSource{Component: "c"},
		DeprecatedCount:     2,
	}
	core := &corev1.Event{}
	if err := Scheme.Convert(in, core, nil); err != nil {
		t.Fatal(err)
	}
	if core.Message != in.Note || core.InvolvedObject != in.Regarding || core.ReportingController != in.ReportingController {
		t.Fatalf("core view lost fields: %+v", core)
	}
	back := &eventsv1.Event{}
	if err := Scheme.Convert(core, back, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, back); diff != "" {
		t.Fatalf("round trip changed the event (-want +got):\n%s", diff)
	}
}

func TestEventsV1FieldSelectorsUseTheStoredFieldNames(t *testing.T) {
	cases := map[string]struct{ label, want string }{
		"regarding maps to involvedObject": {"regarding.name", "involvedObject.name"},
		"reportingController maps":         {"reportingController", "reportingComponent"},
		"reason is shared":                 {"reason", "reason"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, _, err := Scheme.ConvertFieldLabel(eventsv1.SchemeGroupVersion.WithKind("Event"), tc.label, "x")
			if err != nil || got != tc.want {
				t.Fatalf("ConvertFieldLabel(%q) = %q, %v; want %q", tc.label, got, err, tc.want)
			}
		})
	}
	if _, _, err := Scheme.ConvertFieldLabel(eventsv1.SchemeGroupVersion.WithKind("Event"), "note", "x"); err == nil {
		t.Fatal("an unsupported field selector must be refused")
	}
}

func TestNativeKindsNeedNoConversionToTheirInternalVersion(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	out, err := Scheme.ConvertToVersion(ns, runtime.InternalGroupVersioner)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(*corev1.Namespace); !ok {
		t.Fatalf("internal version of a Namespace is %T", out)
	}
}
