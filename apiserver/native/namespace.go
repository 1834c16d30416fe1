package native

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storageerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// namespaceStrategy follows kube-apiserver: a new namespace is Active and carries the
// "kubernetes" finalizer, which only the finalize subresource removes once the namespace
// controller has deleted its content.
type namespaceStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

var nsStrategy = namespaceStrategy{Scheme, names.SimpleNameGenerator}

func (namespaceStrategy) NamespaceScoped() bool { return false }

func (namespaceStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	setNamespaceNameLabel(ns)
}

func (namespaceStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, oldNs := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec.Finalizers = oldNs.Spec.Finalizers
	ns.Status = oldNs.Status
	setNamespaceNameLabel(ns)
}

// setNamespaceNameLabel keeps the immutable name label that selectors use since Kubernetes 1.21.
func setNamespaceNameLabel(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

func (namespaceStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	return apimachineryvalidation.ValidateObjectMeta(&ns.ObjectMeta, false,
		apimachineryvalidation.ValidateNamespaceName, field.NewPath("metadata"))
}

func (s namespaceStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	ns, oldNs := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	errs := s.Validate(ctx, obj)
	return append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &oldNs.ObjectMeta, field.NewPath("metadata"))...)
}

func (namespaceStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }
func (namespaceStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
func (namespaceStrategy) Canonicalize(runtime.Object)                   {}
func (namespaceStrategy) AllowCreateOnUpdate(context.Context) bool      { return false }
func (namespaceStrategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (namespaceStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

// namespaceStatusStrategy changes only status.
type namespaceStatusStrategy struct{ namespaceStrategy }

func (namespaceStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, oldNs := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec = oldNs.Spec
}

func (namespaceStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"v1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec")),
	}
}

// namespaceFinalizeStrategy changes only spec.finalizers.
type namespaceFinalizeStrategy struct{ namespaceStrategy }

func (namespaceFinalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, oldNs := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	finalizers := ns.Spec.Finalizers
	*ns = *oldNs.DeepCopy()
	ns.Spec.Finalizers = finalizers
}

// NamespaceREST serves namespaces with kube-apiserver's deletion lifecycle.
type NamespaceREST struct {
	*genericregistry.Store
	// Visibility narrows lists and watches to the namespaces the caller may see (optional).
	Visibility NamespaceVisibility
}

// NamespaceVisibility returns which namespaces the caller u may see in lists and watches; a nil
// visible function means all of them. It exists because an authorizer decides a whole list
// request, while a workspace member may list only the namespaces of their own workspaces (as
// OpenShift's projects do).
type NamespaceVisibility func(ctx context.Context, u user.Info) (visible func(name string) bool, err error)

func (r *NamespaceREST) visible(ctx context.Context) (func(string) bool, error) {
	if r.Visibility == nil {
		return nil, nil
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("no user")
	}
	return r.Visibility(ctx, u)
}

// List keeps the namespaces the caller may see.
func (r *NamespaceREST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	visible, err := r.visible(ctx)
	if err != nil {
		return nil, err
	}
	obj, err := r.Store.List(ctx, options)
	if err != nil || visible == nil {
		return obj, err
	}
	list := obj.(*corev1.NamespaceList)
	kept := list.Items[:0]
	for _, ns := range list.Items {
		if visible(ns.Name) {
			kept = append(kept, ns)
		}
	}
	list.Items = kept
	return list, nil
}

// Watch passes on the events of namespaces the caller may see (and bookmarks and errors).
func (r *NamespaceREST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	visible, err := r.visible(ctx)
	if err != nil {
		return nil, err
	}
	w, err := r.Store.Watch(ctx, options)
	if err != nil || visible == nil {
		return w, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		ns, ok := e.Object.(*corev1.Namespace)
		return e, !ok || visible(ns.Name)
	}), nil
}

// NewNamespaceStorage returns the namespaces resource and its status and finalize subresources.
func NewNamespaceStorage(opts generic.RESTOptionsGetter) (ns *NamespaceREST, status, finalize rest.Storage, err error) {
	store, err := newStore(opts, &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Namespace{} },
		NewListFunc:               func() runtime.Object { return &corev1.NamespaceList{} },
		DefaultQualifiedResource:  corev1.Resource("namespaces"),
		SingularQualifiedResource: corev1.Resource("namespace"),
		PredicateFunc:             predicate(namespaceAttrs),
		CreateStrategy:            nsStrategy,
		UpdateStrategy:            nsStrategy,
		DeleteStrategy:            nsStrategy,
		ResetFieldsStrategy:       nsStrategy,
		ReturnDeletedObject:       true,
		TableConvertor:            namespaceTable,
	}, namespaceAttrs)
	if err != nil {
		return nil, nil, nil, err
	}
	statusStore := *store
	statusStore.UpdateStrategy = namespaceStatusStrategy{nsStrategy}
	statusStore.ResetFieldsStrategy = namespaceStatusStrategy{nsStrategy}
	finalizeStore := *store
	finalizeStore.UpdateStrategy = namespaceFinalizeStrategy{nsStrategy}
	return &NamespaceREST{Store: store}, &subresourceREST{&statusStore}, &subresourceREST{&finalizeStore}, nil
}

func (*NamespaceREST) ShortNames() []string { return []string{"ns"} }

// Delete moves the namespace to Terminating on the first request; the namespace controller
// removes its content and the finalizer, after which a delete removes it.
func (r *NamespaceREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	if options == nil {
		options = metav1.NewDeleteOptions(0)
	}
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	if options.Preconditions.UID == nil {
		options.Preconditions.UID = &ns.UID
	} else if *options.Preconditions.UID != ns.UID {
		return nil, false, apierrors.NewConflict(corev1.Resource("namespaces"), name,
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *options.Preconditions.UID, ns.UID))
	}
	if options.Preconditions.ResourceVersion != nil && *options.Preconditions.ResourceVersion != ns.ResourceVersion {
		return nil, false, apierrors.NewConflict(corev1.Resource("namespaces"), name,
			fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *options.Preconditions.ResourceVersion, ns.ResourceVersion))
	}

	if ns.DeletionTimestamp.IsZero() {
		if err := deleteValidation(ctx, ns); err != nil {
			return nil, false, err
		}
		key, err := r.KeyFunc(ctx, name)
		if err != nil {
			return nil, false, err
		}
		out := r.NewFunc()
		err = r.Storage.GuaranteedUpdate(ctx, key, out, false, &storage.Preconditions{UID: options.Preconditions.UID},
			storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
				existingNs := existing.(*corev1.Namespace)
				if existingNs.DeletionTimestamp.IsZero() {
					now := metav1.Now()
					existingNs.DeletionTimestamp = &now
				}
				existingNs.Status.Phase = corev1.NamespaceTerminating
				return existingNs, nil
			}), isDryRun(options), nil)
		if err != nil {
			err = storageerr.InterpretGetError(err, corev1.Resource("namespaces"), name)
			err = storageerr.InterpretUpdateError(err, corev1.Resource("namespaces"), name)
			if _, ok := err.(*apierrors.StatusError); !ok {
				err = apierrors.NewInternalError(err)
			}
			return nil, false, err
		}
		return out, false, nil
	}
	if len(ns.Spec.Finalizers) != 0 {
		return ns, false, nil
	}
	return r.Store.Delete(ctx, name, deleteValidation, options)
}

func isDryRun(options *metav1.DeleteOptions) bool {
	return len(options.DryRun) > 0 && options.DryRun[0] == metav1.DryRunAll
}

// subresourceREST exposes an update-only view of a store with its own strategy.
type subresourceREST struct {
	store *genericregistry.Store
}

func (r *subresourceREST) New() runtime.Object { return r.store.New() }
func (r *subresourceREST) Destroy()            {}

func (r *subresourceREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

func (r *subresourceREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Subresources never create the parent object.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

func (r *subresourceREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

func (r *subresourceREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
