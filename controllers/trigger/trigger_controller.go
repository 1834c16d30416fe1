package trigger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/controllers/internal/reconcileutil"
	"platform.dev/platform/internal/publication"
	"platform.dev/platform/internal/schedule"
)

// +kubebuilder:rbac:groups=platform.dev,resources=triggers,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=triggers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=flows;flowversions,verbs=get;list;watch

// Occurrences is the durable side of the scheduler (the Work store's triggers.Service): the
// cursor of each Trigger's schedule, the firing of one occurrence at most once, the history.
type Occurrences interface {
	Sync(ctx context.Context, t *platformv1.Trigger, scheduleKey string, enabled bool, maxFailures int) (triggers.State, error)
	Fire(ctx context.Context, t *platformv1.Trigger, f triggers.Firing) (triggers.Occurrence, bool, error)
	Miss(ctx context.Context, t *platformv1.Trigger, latest time.Time, message string) (triggers.Occurrence, bool, error)
	Latest(ctx context.Context, uid string) (*triggers.Occurrence, error)
	Forget(ctx context.Context, namespace, name, keepUID string) error
}

// Reconciler schedules Triggers: it checks each definition, keeps one registration per enabled
// Trigger at its next firing, and at each firing decides the due instants with the misfire
// policy and fires them through Occurrences. Without Occurrences (a manager without the Work
// store) it only checks the definitions and reports the next instant; nothing fires.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Occurrences fires and records occurrences; nil fires nothing.
	Occurrences Occurrences
	// Clock is the scheduler's clock; the real one when nil. Tests inject a fake one, whose Step
	// fires the registrations that come due.
	Clock clock.WithDelayedExecution

	registry *registry
}

// SetupWithManager registers the reconciler and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("trigger reconciler: Client and Recorder are required")
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.registry = newRegistry(r.Clock)
	toTriggers := handler.EnqueueRequestsFromMapFunc(r.triggersOfWorkspace)
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Trigger{}).
		Watches(&platformv1.Flow{}, toTriggers).
		Watches(&platformv1.FlowVersion{}, toTriggers).
		WatchesRawSource(source.Channel(r.registry.events, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Registrations is how many Triggers have a registered next firing.
func (r *Reconciler) Registrations() int { return r.registry.len() }

// scope is what one reconcile found; setStatus turns it into the status.
type scope struct {
	trigger *platformv1.Trigger
	now     time.Time
	// compiled is the checked definition; invalid lists what is wrong with it instead.
	compiled schedule.Trigger
	invalid  field.ErrorList
	// next is the next scheduled instant; zero when disabled, paused, exhausted or invalid.
	next time.Time
	// targetReason and targetProblem say why the target Flow does not resolve; empty when it does.
	targetReason, targetProblem string
	// scheduled: the Trigger has a registration (Occurrences fire it).
	scheduled bool
	// paused: the Trigger reached pauseAfterFailures consecutive failures.
	paused   bool
	failures int
	last     *triggers.Occurrence
}

// Reconcile checks the trigger, fires what is due and registers the next firing; it writes the
// status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	trigger := &platformv1.Trigger{}
	if err := r.Client.Get(ctx, req.NamespacedName, trigger); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		r.registry.unregister(req.NamespacedName)
		// The Trigger is gone: so are its cursor and history (its Work and Tasks stay).
		if r.Occurrences != nil {
			return ctrl.Result{}, r.Occurrences.Forget(ctx, req.Namespace, req.Name, "")
		}
		return ctrl.Result{}, nil
	}
	if !trigger.DeletionTimestamp.IsZero() {
		r.registry.unregister(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	base := trigger.DeepCopy()
	s := &scope{trigger: trigger, now: r.Clock.Now()}
	defer func() {
		if reterr == nil {
			setStatus(s)
			reconcileutil.Observed(&trigger.Status.ResourceStatus, trigger.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, trigger,
			base.Status.Conditions, trigger.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileDefinition, r.reconcileTarget, r.reconcileSchedule)
}

// reconcileDefinition checks the schedule and the policies.
func (r *Reconciler) reconcileDefinition(_ context.Context, s *scope) (ctrl.Result, error) {
	s.compiled, s.invalid = schedule.CompileTrigger(&s.trigger.Definition, s.trigger.CreationTimestamp.Time)
	return ctrl.Result{}, nil
}

// reconcileSchedule fires the due instants and registers the next firing.
func (r *Reconciler) reconcileSchedule(ctx context.Context, s *scope) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(s.trigger)
	enabled := s.trigger.Definition.Enabled == nil || *s.trigger.Definition.Enabled
	if len(s.invalid) > 0 {
		r.registry.unregister(key)
		return ctrl.Result{}, nil
	}
	if r.Occurrences == nil {
		// Nothing fires: the status shows the next instant, refreshed when it comes.
		if !enabled {
			return ctrl.Result{}, nil
		}
		s.next = s.compiled.Schedule.Next(s.now)
		if s.next.IsZero() {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: s.next.Sub(s.now) + time.Second}, nil
	}
	p := s.compiled.Policies
	state, err := r.Occurrences.Sync(ctx, s.trigger, s.compiled.Key, enabled, p.PauseAfterFailures)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.failures = state.Failures
	defer func() { s.last, _ = r.Occurrences.Latest(ctx, string(s.trigger.UID)) }()
	if !enabled {
		r.registry.unregister(key)
		return ctrl.Result{}, nil
	}
	if s.paused = pausedBy(p, s.failures); s.paused {
		r.registry.unregister(key)
		return ctrl.Result{}, nil
	}
	jitter := jitterOf(string(s.trigger.UID), p.Jitter)
	decided := planOccurrences(s.compiled.Schedule, p, jitter, state.Cursor, s.now)
	if decided.missed > 0 {
		if _, _, err := r.Occurrences.Miss(ctx, s.trigger, decided.missedLatest, missedMessage(decided, p)); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, instant := range decided.fire {
		o, fired, err := r.Occurrences.Fire(ctx, s.trigger, triggers.Firing{Kind: platformv1.ScheduledOccurrence, ScheduledAt: instant,
			Note: firedNote(decided, p, instant, s.now.Sub(instant.Add(jitter(instant))))})
		if err != nil {
			return ctrl.Result{}, err
		}
		if fired {
			log.FromContext(ctx).V(1).Info("trigger occurrence", "scheduled", instant, "outcome", o.Outcome, "workItem", o.WorkItemID, "reason", o.Reason)
		}
		if fired && o.Outcome == platformv1.OccurrenceFailed {
			s.failures++
			if s.paused = pausedBy(p, s.failures); s.paused {
				r.Recorder.Eventf(s.trigger, nil, "Warning", platformv1.PausedReason, "Pause",
					"paused after %d consecutive failed occurrences; the last: %s", s.failures, o.Reason)
				r.registry.unregister(key)
				return ctrl.Result{}, nil
			}
		}
	}
	s.scheduled = true
	if decided.more {
		// A backlog beyond maxDue: the next reconcile goes on with it.
		r.registry.unregister(key)
		s.next = s.now
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	s.next = decided.next
	if s.next.IsZero() {
		r.registry.unregister(key)
		return ctrl.Result{}, nil
	}
	r.registry.register(key, s.next.Add(jitter(s.next)))
	return ctrl.Result{}, nil
}

func pausedBy(p schedule.Policies, failures int) bool {
	return p.PauseAfterFailures > 0 && failures >= p.PauseAfterFailures
}

// missedMessage says which instants a Missed occurrence stands for.
func missedMessage(d plan, p schedule.Policies) string {
	span := d.missedLatest.UTC().Format(time.RFC3339)
	if d.missed > 1 {
		span = fmt.Sprintf("%d instants from %s to %s", d.missed, d.missedFirst.UTC().Format(time.RFC3339), span)
	}
	return fmt.Sprintf("%s missed (misfirePolicy %s, catchUpWindow %s): the scheduler did not run at their time", span, p.Misfire, p.CatchUpWindow)
}

// firedNote says, for an instant fired late, what the misfire policy did.
func firedNote(d plan, p schedule.Policies, instant time.Time, late time.Duration) string {
	if late <= onTimeGrace && d.missed == 0 && len(d.fire) == 1 {
		return ""
	}
	return fmt.Sprintf("fired %s late by misfirePolicy %s;", late.Truncate(time.Millisecond), p.Misfire)
}

// reconcileTarget finds the target Flow, in the Trigger's own workspace, and for a pinned version
// the FlowVersion.
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
