package native

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// eventTTL is how long an Event is kept, kube-apiserver's default: events describe what happened
// recently, they are not a history.
const eventTTL = time.Hour

// strategy holds what the create and update strategies of the simple native kinds share: object
// meta validation, no status subresource, last writer wins only with a resourceVersion.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	namespaced bool
	validate   func(obj runtime.Object) field.ErrorList
}

func (s strategy) NamespaceScoped() bool                                          { return s.namespaced }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string        { return nil }
func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
func (strategy) Canonicalize(runtime.Object)                   {}
func (strategy) AllowCreateOnUpdate(context.Context) bool      { return false }
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (s strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return s.validate(obj)
}

func (s strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	errs := s.validate(obj)
	return append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(metaOf(obj), metaOf(old), field.NewPath("metadata"))...)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set { return nil }

func validateNamespacedMeta(obj runtime.Object) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaAccessor(metaOf(obj), true,
		apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}

// newStore completes a generic registry store for one resource of the native groups.
func newStore(opts generic.RESTOptionsGetter, s *genericregistry.Store, attrs storage.AttrFunc) (*genericregistry.Store, error) {
	if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: opts, AttrFunc: attrs}); err != nil {
		return nil, fmt.Errorf("storage for %s: %w", s.DefaultQualifiedResource, err)
	}
	return s, nil
}

func predicate(attrs storage.AttrFunc) func(labels.Selector, fields.Selector) storage.SelectionPredicate {
	return func(l labels.Selector, f fields.Selector) storage.SelectionPredicate {
		return storage.SelectionPredicate{Label: l, Field: f, GetAttrs: attrs}
	}
}

// NewLeaseStorage serves coordination.k8s.io/v1 Leases, used by leader election.
func NewLeaseStorage(opts generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	st := strategy{ObjectTyper: Scheme, NameGenerator: names.SimpleNameGenerator, namespaced: true,
		validate: func(obj runtime.Object) field.ErrorList {
			errs := validateNamespacedMeta(obj)
			spec := obj.(*coordinationv1.Lease).Spec
			if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
				errs = append(errs, field.Invalid(field.NewPath("spec", "leaseDurationSeconds"), *spec.LeaseDurationSeconds, "must be greater than 0"))
			}
			if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
				errs = append(errs, field.Invalid(field.NewPath("spec", "leaseTransitions"), *spec.LeaseTransitions, "must be greater than or equal to 0"))
			}
			return errs
		}}
	attrs := metaAttrs
	return newStore(opts, &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &coordinationv1.Lease{} },
		NewListFunc:               func() runtime.Object { return &coordinationv1.LeaseList{} },
		DefaultQualifiedResource:  coordinationv1.Resource("leases"),
		SingularQualifiedResource: coordinationv1.Resource("lease"),
		PredicateFunc:             predicate(attrs),
		CreateStrategy:            st,
		UpdateStrategy:            st,
		DeleteStrategy:            st,
		TableConvertor:            leaseTable,
	}, attrs)
}

// NewEventStorage serves core v1 Events; the events.k8s.io/v1 resource is a second store over
// the same keys whose objects the scheme converts on the way in and out.
func NewEventStorage(opts generic.RESTOptionsGetter, resource, singular string, group string) (*genericregistry.Store, error) {
	st := strategy{ObjectTyper: Scheme, NameGenerator: names.SimpleNameGenerator, namespaced: true,
		validate: func(obj runtime.Object) field.ErrorList {
			errs := validateNamespacedMeta(obj)
			ev := obj.(*corev1.Event)
			if ev.InvolvedObject.Namespace != "" && ev.InvolvedObject.Namespace != ev.Namespace && ev.InvolvedObject.Kind != "Namespace" {
				errs = append(errs, field.Invalid(field.NewPath("involvedObject", "namespace"), ev.InvolvedObject.Namespace, "does not match event.namespace"))
			}
			return errs
		}}
	return newStore(opts, &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Event{} },
		NewListFunc:               func() runtime.Object { return &corev1.EventList{} },
		DefaultQualifiedResource:  schemaResource(group, resource),
		SingularQualifiedResource: schemaResource(group, singular),
		PredicateFunc:             predicate(eventAttrs),
		TTLFunc: func(runtime.Object, uint64, bool) (uint64, error) {
			return uint64(eventTTL.Seconds()), nil
		},
		CreateStrategy: st,
		UpdateStrategy: st,
		DeleteStrategy: st,
		TableConvertor: eventTable,
	}, eventAttrs)
}
