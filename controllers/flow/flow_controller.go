package flow

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// agentIndex is a field index of Flows on the names of the Agents they name.
const agentIndex = "definition.agents"

// +kubebuilder:rbac:groups=platform.dev,resources=flows,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=flows/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=agents,verbs=get;list;watch

// Reconciler validates each Flow's draft definition and reports it. It owns nothing outside the
// Flow's status, so it needs no finalizer; publishing versions is not its job.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("flow reconciler: Client and Recorder are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &platformv1.Flow{}, agentIndex, func(obj client.Object) []string {
		var names []string
		for _, ref := range agentReferences(&obj.(*platformv1.Flow).Definition, field.NewPath("definition")) {
			names = append(names, ref.name)
		}
		return names
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Flow{}).
		Watches(&platformv1.Agent{}, handler.EnqueueRequestsFromMapFunc(r.flowsOfAgent)).
		Complete(r)
}

// scope is what one reconcile found; setReadyCondition turns it into the status.
type scope struct {
	flow *platformv1.Flow
	// invalid lists what is wrong with the definition itself.
	invalid field.ErrorList
	// missingAgents lists the Agents the definition names that do not exist, by field path.
	missingAgents field.ErrorList
}

// Reconcile validates the flow and writes its status once, at the end. A failed read leaves the
// status as it was: only a complete observation is reported.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	flow := &platformv1.Flow{}
	if err := r.Client.Get(ctx, req.NamespacedName, flow); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !flow.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := flow.DeepCopy()
	s := &scope{flow: flow}
	defer func() {
		if reterr == nil {
			reterr = updateStatus(s)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, flow,
			base.Status.Conditions, flow.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileDefinition, r.reconcileAgents)
}

// reconcileDefinition validates the definition on its own.
func (r *Reconciler) reconcileDefinition(_ context.Context, s *scope) (ctrl.Result, error) {
	s.invalid = validateDefinition(&s.flow.Definition, field.NewPath("definition"))
	return ctrl.Result{}, nil
}

// reconcileAgents checks that every Agent the flow names exists in its workspace.
func (r *Reconciler) reconcileAgents(ctx context.Context, s *scope) (ctrl.Result, error) {
	var err error
	s.missingAgents, err = missingAgents(ctx, r.Client, s.flow.Namespace, &s.flow.Definition, field.NewPath("definition"))
	return ctrl.Result{}, err
}

// missingAgents reports, with their field paths, the Agents that def names and namespace lacks.
func missingAgents(ctx context.Context, c client.Client, namespace string, def *platformv1.FlowDefinition, path *field.Path) (field.ErrorList, error) {
	var missing field.ErrorList
	for _, ref := range agentReferences(def, path) {
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.name}, &platformv1.Agent{})
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		if err != nil {
			missing = append(missing, &field.Error{Type: field.ErrorTypeNotFound, Field: ref.path.String(),
				BadValue: ref.name, Detail: fmt.Sprintf("Agent %q not found", ref.name)})
		}
	}
	return missing, nil
}

// flowsOfAgent maps an Agent to the flows that name it.
func (r *Reconciler) flowsOfAgent(ctx context.Context, obj client.Object) []reconcile.Request {
	flows := &platformv1.FlowList{}
	if err := r.Client.List(ctx, flows, client.InNamespace(obj.GetNamespace()), client.MatchingFields{agentIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing flows of an agent", "agent", obj.GetName())
		return nil
	}
	return reconcileutil.Requests(flows)
}
