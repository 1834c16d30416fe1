package native

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
)

func metaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("native kind without object meta: %T", obj))
	}
	return m
}

func schemaResource(group, resource string) schema.GroupResource {
	return schema.GroupResource{Group: group, Resource: resource}
}

func metaAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m := metaOf(obj)
	f := fields.Set{"metadata.name": m.GetName()}
	if m.GetNamespace() != "" {
		f["metadata.namespace"] = m.GetNamespace()
	}
	return m.GetLabels(), f, nil
}

func namespaceAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	ns := obj.(*corev1.Namespace)
	f := generic.ObjectMetaFieldsSet(&ns.ObjectMeta, false)
	f["status.phase"] = string(ns.Status.Phase)
	// name is the only field of a namespace that kube-apiserver also indexes as "name".
	f["name"] = ns.Name
	return ns.Labels, f, nil
}

// eventAttrs are the fields kubectl and controllers select events by (kubectl describe uses
// involvedObject.*).
func eventAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	ev := obj.(*corev1.Event)
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	f := generic.ObjectMetaFieldsSet(&ev.ObjectMeta, true)
	f = generic.MergeFieldsSets(f, fields.Set{
		"involvedObject.kind":            ev.InvolvedObject.Kind,
		"involvedObject.namespace":       ev.InvolvedObject.Namespace,
		"involvedObject.name":            ev.InvolvedObject.Name,
		"involvedObject.uid":             string(ev.InvolvedObject.UID),
		"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         source,
		"type":                           ev.Type,
	})
	return ev.Labels, f, nil
}

func namespaceFieldLabel(label, value string) (string, string, error) {
	switch label {
	case "status.phase", "metadata.name", "name":
		return label, value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}

func eventFieldLabel(label, value string) (string, string, error) {
	switch label {
	case "metadata.name", "metadata.namespace",
		"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
		"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
		"reason", "reportingComponent", "source", "type":
		return label, value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}

// eventsV1FieldLabel maps events.k8s.io/v1 field names onto the stored core v1 names.
func eventsV1FieldLabel(label, value string) (string, string, error) {
	switch label {
	case "metadata.name", "metadata.namespace", "reason", "type":
		return label, value, nil
	case "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
		"regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath":
		return "involvedObject" + label[len("regarding"):], value, nil
	case "reportingController":
		return "reportingComponent", value, nil
	case "deprecatedSource":
		return "source", value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}
