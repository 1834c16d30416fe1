package runtimeprofile

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// +kubebuilder:rbac:groups=platform.dev,resources=runtimeprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=runtimeprofiles/status,verbs=get;update;patch

// Reconciler reports whether each RuntimeProfile is usable. It owns nothing outside the
// profile's status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("runtimeprofile reconciler: Client and Recorder are required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.RuntimeProfile{}).
		Complete(r)
}

// scope is what one reconcile found; setReadyCondition turns it into the status.
type scope struct {
	profile *platformv1.RuntimeProfile
	// invalid lists what is wrong with the definition.
	invalid field.ErrorList
}

// Reconcile checks the profile and writes its status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	profile := &platformv1.RuntimeProfile{}
	if err := r.Client.Get(ctx, req.NamespacedName, profile); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !profile.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := profile.DeepCopy()
	s := &scope{profile: profile}
	defer func() {
		if reterr == nil {
			updateStatus(s)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, profile,
			base.Status.Conditions, profile.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileDefinition)
}

// reconcileDefinition checks the definition on its own.
func (r *Reconciler) reconcileDefinition(_ context.Context, s *scope) (ctrl.Result, error) {
	s.invalid = validateDefinition(&s.profile.Definition, field.NewPath("definition"))
	return ctrl.Result{}, nil
}
