package trigger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
	"platform.dev/platform/internal/publication"
)

// +kubebuilder:rbac:groups=platform.dev,resources=triggers,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=triggers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=flows;flowversions,verbs=get;list;watch

// Reconciler validates each Trigger and reports its next fire time. It schedules nothing and owns
// nothing outside the Trigger's status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager registers the reconciler and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("trigger reconciler: Client and Recorder are required")
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	toTriggers := handler.EnqueueRequestsFromMapFunc(r.triggersOfWorkspace)
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Trigger{}).
		Watches(&platformv1.Flow{}, toTriggers).
		Watches(&platformv1.FlowVersion{}, toTriggers).
		Complete(r)
}

// scope is what one reconcile found; setReadyCondition turns it into the status.
type scope struct {
	trigger *platformv1.Trigger
	now     time.Time
	// invalid lists what is wrong with the definition itself.
	invalid field.ErrorList
	// next is the next fire time; zero when disabled, exhausted or invalid.
	next time.Time
	// targetReason and targetProblem say why the target Flow does not resolve; empty when it does.
	targetReason, targetProblem string
}

// Reconcile validates the trigger and writes the status once, at the end. It comes back at the
// next fire time, so that nextFireTime never lies in the past for long.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	trigger := &platformv1.Trigger{}
	if err := r.Client.Get(ctx, req.NamespacedName, trigger); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !trigger.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := trigger.DeepCopy()
	s := &scope{trigger: trigger, now: r.Now()}
	defer func() {
		if reterr == nil {
			setReadyCondition(s)
			reconcileutil.Observed(&trigger.Status.ResourceStatus, trigger.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, trigger,
			base.Status.Conditions, trigger.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileSchedule, r.reconcileTarget)
}

// reconcileSchedule parses the schedule and computes the next fire time.
func (r *Reconciler) reconcileSchedule(_ context.Context, s *scope) (ctrl.Result, error) {
	var anchor time.Time
	if !s.trigger.CreationTimestamp.IsZero() {
		anchor = s.trigger.CreationTimestamp.Time
	}
	next, invalid := evaluate(&s.trigger.Definition, anchor, s.now)
	s.invalid = invalid
	if enabled := s.trigger.Definition.Enabled; enabled != nil && !*enabled {
		return ctrl.Result{}, nil
	}
	s.next = next
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: next.Sub(s.now) + time.Second}, nil
}

// reconcileTarget finds the target Flow and, for a pinned version, the FlowVersion.
func (r *Reconciler) reconcileTarget(ctx context.Context, s *scope) (ctrl.Result, error) {
	ref := s.trigger.Definition.Target.Flow
	if ref == nil {
		return ctrl.Result{}, nil
	}
	ns, problem, err := reconcileutil.ResolveNamespace(ctx, r.Client, s.trigger.Namespace, ref.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem != "" {
		s.targetReason, s.targetProblem = platformv1.FlowNotFoundReason, "definition.target.flow.namespace: "+problem
		return ctrl.Result{}, nil
	}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(ref.Name)}, &platformv1.Flow{})
	switch {
	case client.IgnoreNotFound(err) != nil:
		return ctrl.Result{}, err
	case err != nil:
		s.targetReason, s.targetProblem = platformv1.FlowNotFoundReason, fmt.Sprintf("definition.target.flow.name: Flow %q not found", ref.Name)
		return ctrl.Result{}, nil
	case ref.Version == "":
		return ctrl.Result{}, nil
	}
	fv, err := publication.FindFlowVersion(ctx, r.Client, ns, string(ref.Name), ref.Version)
	if err != nil {
		return ctrl.Result{}, err
	}
	if fv == nil {
		s.targetReason, s.targetProblem = platformv1.FlowVersionNotFoundReason,
			fmt.Sprintf("definition.target.flow.version: version %s of Flow %q is not published", ref.Version, ref.Name)
	}
	return ctrl.Result{}, nil
}

// triggersOfWorkspace maps an object to the Triggers of its workspace.
func (r *Reconciler) triggersOfWorkspace(ctx context.Context, obj client.Object) []reconcile.Request {
	requests, err := reconcileutil.WorkspaceRequests(ctx, r.Client, obj.GetNamespace(), func() client.ObjectList { return &platformv1.TriggerList{} })
	if err != nil {
		log.FromContext(ctx).Error(err, "listing triggers of a workspace")
	}
	return requests
}
