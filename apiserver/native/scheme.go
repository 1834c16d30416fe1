package native

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

var (
	// Scheme knows the served native kinds. There are no separate internal Go types: each
	// external type is also registered as its group's internal version, so the generic
	// registry stores and serves k8s.io/api types without conversion functions. The one
	// exception is events.k8s.io/v1, which is a view of core v1 Events (as in kube-apiserver).
	Scheme = runtime.NewScheme()
	// Codecs serialize the native kinds as JSON, YAML and protobuf (controller-runtime and
	// client-go send protobuf for built-in kinds).
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec decodes query parameters such as ListOptions.
	ParameterCodec = runtime.NewParameterCodec(Scheme)

	coreInternal   = schema.GroupVersion{Group: corev1.GroupName, Version: runtime.APIVersionInternal}
	coordInternal  = schema.GroupVersion{Group: coordinationv1.GroupName, Version: runtime.APIVersionInternal}
	eventsInternal = schema.GroupVersion{Group: eventsv1.GroupName, Version: runtime.APIVersionInternal}
	authnInternal  = schema.GroupVersion{Group: authenticationv1.GroupName, Version: runtime.APIVersionInternal}
	authzInternal  = schema.GroupVersion{Group: authorizationv1.GroupName, Version: runtime.APIVersionInternal}
)

func init() {
	utilruntime.Must(addKnownTypes(Scheme))
}

func addKnownTypes(s *runtime.Scheme) error {
	core := []runtime.Object{&corev1.Namespace{}, &corev1.NamespaceList{}, &corev1.Event{}, &corev1.EventList{}}
	s.AddKnownTypes(corev1.SchemeGroupVersion, core...)
	s.AddKnownTypes(coreInternal, core...)
	metav1.AddToGroupVersion(s, corev1.SchemeGroupVersion)

	coord := []runtime.Object{&coordinationv1.Lease{}, &coordinationv1.LeaseList{}}
	s.AddKnownTypes(coordinationv1.SchemeGroupVersion, coord...)
	s.AddKnownTypes(coordInternal, coord...)
	metav1.AddToGroupVersion(s, coordinationv1.SchemeGroupVersion)

	s.AddKnownTypes(eventsv1.SchemeGroupVersion, &eventsv1.Event{}, &eventsv1.EventList{})
	s.AddKnownTypes(eventsInternal, &corev1.Event{}, &corev1.EventList{})
	metav1.AddToGroupVersion(s, eventsv1.SchemeGroupVersion)

	s.AddKnownTypes(authenticationv1.SchemeGroupVersion, &authenticationv1.SelfSubjectReview{})
	s.AddKnownTypes(authnInternal, &authenticationv1.SelfSubjectReview{})
	metav1.AddToGroupVersion(s, authenticationv1.SchemeGroupVersion)
	s.AddKnownTypes(authorizationv1.SchemeGroupVersion, &authorizationv1.SelfSubjectAccessReview{})
	s.AddKnownTypes(authzInternal, &authorizationv1.SelfSubjectAccessReview{})
	metav1.AddToGroupVersion(s, authorizationv1.SchemeGroupVersion)

	// Unversioned discovery types, as every generic apiserver registers them.
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	s.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
		&metav1.APIGroup{}, &metav1.APIResourceList{})

	utilruntime.Must(s.SetVersionPriority(corev1.SchemeGroupVersion))
	utilruntime.Must(s.SetVersionPriority(coordinationv1.SchemeGroupVersion))
	utilruntime.Must(s.SetVersionPriority(eventsv1.SchemeGroupVersion))
	utilruntime.Must(s.SetVersionPriority(authenticationv1.SchemeGroupVersion))
	utilruntime.Must(s.SetVersionPriority(authorizationv1.SchemeGroupVersion))

	for _, err := range []error{
		s.AddConversionFunc((*eventsv1.Event)(nil), (*corev1.Event)(nil), func(a, b any, _ conversion.Scope) error {
			eventFromEventsV1(a.(*eventsv1.Event), b.(*corev1.Event))
			return nil
		}),
		s.AddConversionFunc((*corev1.Event)(nil), (*eventsv1.Event)(nil), func(a, b any, _ conversion.Scope) error {
			eventToEventsV1(a.(*corev1.Event), b.(*eventsv1.Event))
			return nil
		}),
		s.AddConversionFunc((*eventsv1.EventList)(nil), (*corev1.EventList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*eventsv1.EventList), b.(*corev1.EventList)
			out.ListMeta = in.ListMeta
			out.Items = make([]corev1.Event, len(in.Items))
			for i := range in.Items {
				eventFromEventsV1(&in.Items[i], &out.Items[i])
			}
			return nil
		}),
		s.AddConversionFunc((*corev1.EventList)(nil), (*eventsv1.EventList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*corev1.EventList), b.(*eventsv1.EventList)
			out.ListMeta = in.ListMeta
			out.Items = make([]eventsv1.Event, len(in.Items))
			for i := range in.Items {
				eventToEventsV1(&in.Items[i], &out.Items[i])
			}
			return nil
		}),
		s.AddFieldLabelConversionFunc(corev1.SchemeGroupVersion.WithKind("Namespace"), namespaceFieldLabel),
		s.AddFieldLabelConversionFunc(corev1.SchemeGroupVersion.WithKind("Event"), eventFieldLabel),
		s.AddFieldLabelConversionFunc(eventsv1.SchemeGroupVersion.WithKind("Event"), eventsV1FieldLabel),
		s.AddFieldLabelConversionFunc(coordinationv1.SchemeGroupVersion.WithKind("Lease"), runtime.DefaultMetaV1FieldSelectorConversion),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// eventFromEventsV1 maps the events.k8s.io/v1 field names onto the stored core v1 Event, the
// mapping kube-apiserver applies.
func eventFromEventsV1(in *eventsv1.Event, out *corev1.Event) {
	out.TypeMeta = metav1.TypeMeta{}
	out.ObjectMeta = in.ObjectMeta
	out.EventTime = in.EventTime
	out.Action = in.Action
	out.Reason = in.Reason
	out.Type = in.Type
	out.Message = in.Note
	out.InvolvedObject = in.Regarding
	out.Related = in.Related
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Source = in.DeprecatedSource
	out.FirstTimestamp = in.DeprecatedFirstTimestamp
	out.LastTimestamp = in.DeprecatedLastTimestamp
	out.Count = in.DeprecatedCount
	out.Series = nil
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}

func eventToEventsV1(in *corev1.Event, out *eventsv1.Event) {
	out.TypeMeta = metav1.TypeMeta{}
	out.ObjectMeta = in.ObjectMeta
	out.EventTime = in.EventTime
	out.Action = in.Action
	out.Reason = in.Reason
	out.Type = in.Type
	out.Note = in.Message
	out.Regarding = in.InvolvedObject
	out.Related = in.Related
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.DeprecatedSource = in.Source
	out.DeprecatedFirstTimestamp = in.FirstTimestamp
	out.DeprecatedLastTimestamp = in.LastTimestamp
	out.DeprecatedCount = in.Count
	out.Series = nil
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}
