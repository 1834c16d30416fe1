package flow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

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

// agentIndex is a field index of Flows on the names of the Agents they name.
const agentIndex = "definition.agents"

// +kubebuilder:rbac:groups=platform.dev,resources=flows,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=flows/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=flowversions,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=platform.dev,resources=agents,verbs=get;list;watch

// Reconciler validates each Flow's draft definition and reports it, and publishes the drafts
// whose publication is Automatic as the version they name. Published versions outlive the Flow's
// edits on purpose, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Reader reads, uncached, what publication checks (the manager's API reader).
	Reader client.Reader
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Reader == nil {
		return errors.New("flow reconciler: Client, Recorder and Reader are required")
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
	// publicationFailure says why the automatic publication of the draft failed.
	publicationFailure string
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
	res, reterr = reconcileutil.RunPhases(ctx, s, r.reconcileDefinition, r.reconcileAgents)
	if reterr != nil {
		return res, reterr
	}
	published, err := r.reconcilePublication(ctx, s)
	if published {
		// The publisher wrote the Flow's status (latest and active version); the conditions are
		// written over what it wrote.
		base.ResourceVersion = flow.ResourceVersion
		base.Status.LatestVersion, base.Status.ActiveVersion = flow.Status.LatestVersion, flow.Status.ActiveVersion
	}
	return res, err
}

// reconcilePublication publishes, for a Flow whose publication is Automatic, its valid draft as
// the version definition.version names, and activates it; true when it wrote. A version already
// published with another definition is reported on the Published condition: the draft needs a
// new version.
func (r *Reconciler) reconcilePublication(ctx context.Context, s *scope) (bool, error) {
	flow := s.flow
	def := &flow.Definition
	if def.Publication != platformv1.AutomaticPublication || def.Version == "" || len(s.invalid) > 0 || len(s.missingAgents) > 0 {
		return false, nil
	}
	published, err := publication.FindFlowVersion(ctx, r.Client, flow.Namespace, flow.Name, def.Version)
	if err != nil {
		return false, err
	}
	if published != nil && flow.Status.ActiveVersion == def.Version {
		if published.Definition.Snapshot.Digest() != def.Digest() {
			s.publicationFailure = fmt.Sprintf("definition.version: version %s is published with another definition; published versions are immutable, so name a new version", def.Version)
		}
		return false, nil
	}
	publisher := &publication.Publisher{Client: r.Client, Reader: r.Reader}
	result, err := publisher.PublishFlowVersion(ctx, flow, def.Version, true)
	switch {
	case errors.Is(err, publication.ErrConflict):
		s.publicationFailure = "definition.version: " + strings.TrimSuffix(err.Error(), ": "+publication.ErrConflict.Error())
		return false, nil
	case err != nil:
		return false, err
	}
	if result.Created {
		r.Recorder.Eventf(flow, nil, corev1.EventTypeNormal, platformv1.PublishedReason, "Publish", "Published version %s", def.Version)
	}
	current := &platformv1.Flow{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(flow), current); err != nil {
		return true, err
	}
	flow.ResourceVersion = current.ResourceVersion
	flow.Status.LatestVersion, flow.Status.ActiveVersion = current.Status.LatestVersion, current.Status.ActiveVersion
	return true, nil
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
