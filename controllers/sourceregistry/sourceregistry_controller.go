package sourceregistry

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// +kubebuilder:rbac:groups=platform.dev,resources=sourceregistries,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=sourceregistries/status,verbs=get;update;patch

// Reconciler checks each (cluster-scoped) SourceRegistry registration. It owns nothing outside
// the status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("sourceregistry reconciler: Client and Recorder are required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.SourceRegistry{}).
		Complete(r)
}

// scope is what one reconcile found; setReadyCondition turns it into the status.
type scope struct {
	registry *platformv1.SourceRegistry
	// invalid lists what is wrong with the registration.
	invalid field.ErrorList
	// now is when the reconcile looks, for staleness.
	now time.Time
}

// Reconcile checks the registration and writes the status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	registry := &platformv1.SourceRegistry{}
	if err := r.Client.Get(ctx, req.NamespacedName, registry); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !registry.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := registry.DeepCopy()
	s := &scope{registry: registry, now: time.Now()}
	defer func() {
		if reterr == nil {
			if staleAt := setReadyCondition(s); !staleAt.IsZero() && res.RequeueAfter == 0 {
				// Nothing else changes the status when a registration turns stale.
				res.RequeueAfter = staleAt.Sub(s.now) + time.Second
			}
			reconcileutil.Observed(&registry.Status.ResourceStatus, registry.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, registry,
			base.Status.Conditions, registry.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileDefinition)
}

// reconcileDefinition checks the registration on its own.
func (r *Reconciler) reconcileDefinition(_ context.Context, s *scope) (ctrl.Result, error) {
	s.invalid = validateDefinition(&s.registry.Definition, field.NewPath("definition"))
	return ctrl.Result{}, nil
}
