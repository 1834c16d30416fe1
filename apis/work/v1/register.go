package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the Work plane's kube view.
const GroupName = "work.platform.dev"

var (
	// SchemeGroupVersion is the group version of every kind of this package.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}
	// GroupVersion is SchemeGroupVersion, under the name controller-runtime users expect.
	GroupVersion = SchemeGroupVersion

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the kinds of this package to a scheme (a controller-runtime client's).
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource qualifies a resource of this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Task{}, &TaskList{}, &Interaction{}, &InteractionList{}, &FlowRun{}, &FlowRunList{},
		&PendingAction{}, &PendingActionList{}, &WorkItem{}, &WorkItemList{}, &Notification{}, &NotificationList{},
		&TriggerOccurrence{}, &TriggerOccurrenceList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// Labels every object of this group carries, so that label selectors pick the work of one
// Entry, Trigger or state.
const (
	// LabelState is the object's state (a Task's or FlowRun's state, an Interaction's).
	LabelState = "work.platform.dev/state"
	// LabelEntry is the name of the Entry the work was submitted through.
	LabelEntry = "work.platform.dev/entry"
	// LabelTrigger is the name of the Trigger whose occurrence submitted the work.
	LabelTrigger = "work.platform.dev/trigger"
)
