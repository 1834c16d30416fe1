package workapi

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	workv1 "platform.dev/platform/apis/work/v1"
)

var (
	// Scheme knows the kinds of work.platform.dev. As in package native, the external types are
	// also registered as the group's internal version: the storage serves them without
	// conversion functions.
	Scheme = runtime.NewScheme()
	// Codecs serialize the kinds as JSON and YAML.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec decodes query parameters such as ListOptions.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	utilruntime.Must(workv1.AddToScheme(Scheme))
	internal := schema.GroupVersion{Group: workv1.GroupName, Version: runtime.APIVersionInternal}
	Scheme.AddKnownTypes(internal, &workv1.Task{}, &workv1.TaskList{}, &workv1.Interaction{}, &workv1.InteractionList{},
		&workv1.FlowRun{}, &workv1.FlowRunList{},
		&workv1.PendingAction{}, &workv1.PendingActionList{}, &workv1.WorkItem{}, &workv1.WorkItemList{},
		&workv1.Notification{}, &workv1.NotificationList{}, &workv1.TriggerOccurrence{}, &workv1.TriggerOccurrenceList{})
	// The generic apiserver decodes list and watch options as those of the empty group's v1.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
		&metav1.APIGroup{}, &metav1.APIResourceList{})
	utilruntime.Must(Scheme.SetVersionPriority(workv1.SchemeGroupVersion))
	for kind, labels := range fieldLabels {
		utilruntime.Must(Scheme.AddFieldLabelConversionFunc(workv1.SchemeGroupVersion.WithKind(kind), func(label, value string) (string, string, error) {
			if labels[label] {
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported: %s", label)
		}))
	}
}

// fieldLabels are the fields each kind is selected by (kubectl --field-selector).
var fieldLabels = map[string]map[string]bool{
	"Task": {"metadata.name": true, "metadata.namespace": true, "status.state": true, "status.entry": true,
		"status.trigger": true, "status.interaction": true},
	"Interaction": {"metadata.name": true, "metadata.namespace": true, "status.state": true, "status.entry": true},
	"PendingAction": {"metadata.name": true, "metadata.namespace": true, "status.state": true, "status.task": true,
		"status.interaction": true, "status.flowRun": true},
	"WorkItem": {"metadata.name": true, "metadata.namespace": true, "status.state": true, "status.flow": true,
		"status.task": true, "status.interaction": true},
	"Notification":      {"metadata.name": true, "metadata.namespace": true, "status.kind": true},
	"TriggerOccurrence": {"metadata.name": true, "metadata.namespace": true, "status.trigger": true, "status.outcome": true},
	"FlowRun": {"metadata.name": true, "metadata.namespace": true, "status.state": true, "status.flow": true,
		"status.task": true, "status.interaction": true},
}
