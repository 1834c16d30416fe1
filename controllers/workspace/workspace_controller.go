package workspace

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// Reasons of the events the reconciler records on the built-in resources it writes.
const (
	// BuiltinCreatedReason: a built-in resource was missing and has been created.
	BuiltinCreatedReason = "BuiltinCreated"
	// BuiltinAnnotationRestoredReason: the built-in annotation had been removed or changed and
	// has been restored.
	BuiltinAnnotationRestoredReason = "BuiltinAnnotationRestored"
)

// FieldOwner is the field manager of what the reconciler writes.
const FieldOwner = "platform-workspace-controller"

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=platform.dev,resources=runtimeprofiles,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=platform.dev,resources=dashboards,verbs=get;list;watch;create

// Reconciler gives every workspace its built-in resources. It keys on Namespaces and owns nothing
// that outlives them (deleting a namespace deletes what is in it), so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("workspace reconciler: Client and Recorder are required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Namespace{}).
		Named("workspace").
		Watches(&platformv1.RuntimeProfile{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			if obj.GetName() != platformv1.BuiltinRuntimeProfileName {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
		})).
		Watches(&platformv1.Dashboard{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
		})).
		Complete(r)
}

// scope is the workspace being reconciled.
type scope struct {
	namespace *corev1.Namespace
}

// Reconcile ensures the built-in resources of one workspace.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !IsWorkspace(ns) {
		return r.reconcileResourceNamespaces(ctx, ns)
	}
	return reconcileutil.RunPhases(ctx, &scope{namespace: ns}, r.reconcileRuntimeProfile, r.reconcileHomeDashboard)
}

// reconcileRuntimeProfile creates the workspace's `maf-builtin` RuntimeProfile when it is missing
// and restores its built-in annotation; it leaves the definition to the workspace.
func (r *Reconciler) reconcileRuntimeProfile(ctx context.Context, s *scope) (ctrl.Result, error) {
	profile := &platformv1.RuntimeProfile{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace.Name, Name: platformv1.BuiltinRuntimeProfileName}, profile)
	switch {
	case apierrors.IsNotFound(err):
		profile = builtinRuntimeProfile(s.namespace.Name)
		if err := r.Client.Create(ctx, profile, client.FieldOwner(FieldOwner)); err != nil {
			switch {
			case apierrors.IsAlreadyExists(err):
				// Created meanwhile and not in the cache yet: look again shortly, silently.
				return ctrl.Result{RequeueAfter: reconcileutil.ConflictRequeue}, nil
			case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(profile, nil, corev1.EventTypeNormal, BuiltinCreatedReason, "Create",
			"created the built-in RuntimeProfile of workspace %s", s.namespace.Name)
	case err != nil:
		return ctrl.Result{}, err
	case !profile.DeletionTimestamp.IsZero():
		// Recreated once it is gone: its deletion brings another reconcile.
	case !isBuiltin(profile):
		patch := client.MergeFromWithOptions(profile.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if profile.Annotations == nil {
			profile.Annotations = map[string]string{}
		}
		profile.Annotations[manifest.BuiltinAnnotation] = "true"
		if err := r.Client.Patch(ctx, profile, patch, client.FieldOwner(FieldOwner)); err != nil {
			return reconcileutil.IgnoreConflict(err)
		}
		r.Recorder.Eventf(profile, nil, corev1.EventTypeNormal, BuiltinAnnotationRestoredReason, "Update",
			"restored the annotation %s of the built-in RuntimeProfile", manifest.BuiltinAnnotation)
	}
	return ctrl.Result{}, nil
}

// reconcileHomeDashboard gives a workspace without a default Dashboard an empty `home`, so that
// its root always opens one. It never changes an existing Dashboard: the Entries on home are the
// workspace's to choose.
func (r *Reconciler) reconcileHomeDashboard(ctx context.Context, s *scope) (ctrl.Result, error) {
	dashboards := &platformv1.DashboardList{}
	if err := r.Client.List(ctx, dashboards, client.InNamespace(s.namespace.Name)); err != nil {
		return ctrl.Result{}, err
	}
	for _, d := range dashboards.Items {
		if d.Definition.IsDefault || d.Name == HomeDashboard {
			return ctrl.Result{}, nil
		}
	}
	home := NewHomeDashboard(s.namespace.Name)
	if err := r.Client.Create(ctx, home, client.FieldOwner(FieldOwner)); err != nil {
		switch {
		case apierrors.IsAlreadyExists(err):
			return ctrl.Result{RequeueAfter: reconcileutil.ConflictRequeue}, nil
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(home, nil, corev1.EventTypeNormal, BuiltinCreatedReason, "Create",
		"created the home Dashboard of workspace %s", s.namespace.Name)
	return ctrl.Result{}, nil
}
