package flow

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// +kubebuilder:rbac:groups=platform.dev,resources=flowversions,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=platform.dev,resources=flowversions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=agents;flows,verbs=get;list;watch

// VersionReconciler validates each published FlowVersion's snapshot with the same checks as a
// Flow draft and reports it, and deletes a version whose Flow is gone: only the platform may
// delete FlowVersions, and the embedded control plane runs no garbage collector that would follow
// the version's owner reference, so without it `kubectl delete flow` would leave versions nobody
// can remove. It owns nothing outside the version's status.
type VersionReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Reader reads, uncached, whether a version's Flow is gone before the version is deleted (the
	// manager's API reader): a Flow created a moment ago may not be in the cache yet.
	Reader client.Reader
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *VersionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Reader == nil {
		return errors.New("flowversion reconciler: Client, Recorder and Reader are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &platformv1.FlowVersion{}, agentIndex, func(obj client.Object) []string {
		var names []string
		for _, ref := range agentReferences(&obj.(*platformv1.FlowVersion).Definition.Snapshot, snapshotPath) {
			names = append(names, ref.name)
		}
		return names
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("flowversion").
		For(&platformv1.FlowVersion{}).
		Watches(&platformv1.Agent{}, handler.EnqueueRequestsFromMapFunc(r.versionsOfAgent)).
		Watches(&platformv1.Flow{}, handler.EnqueueRequestsFromMapFunc(r.versionsOfFlow)).
		Complete(r)
}

// snapshotPath is the field path of a version's snapshot.
var snapshotPath = field.NewPath("definition", "snapshot")

// versionScope is what one reconcile of a FlowVersion found.
type versionScope struct {
	version *platformv1.FlowVersion
	// invalid lists what is wrong with the snapshot itself.
	invalid field.ErrorList
	// missingAgents lists the Agents the snapshot names that do not exist, by field path.
	missingAgents field.ErrorList
}

// Reconcile validates the version and writes its status once, at the end.
func (r *VersionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	version := &platformv1.FlowVersion{}
	if err := r.Client.Get(ctx, req.NamespacedName, version); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !version.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if gone, err := r.flowGone(ctx, version); err != nil || gone {
		if err == nil {
			uid := version.UID
			err = client.IgnoreNotFound(r.Client.Delete(ctx, version, client.Preconditions{UID: &uid}))
		}
		return ctrl.Result{}, err
	}
	base := version.DeepCopy()
	s := &versionScope{version: version}
	defer func() {
		if reterr == nil {
			setVersionReadyCondition(s)
			reconcileutil.Observed(&version.Status.ResourceStatus, version.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, version,
			base.Status.Conditions, version.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileSnapshot, r.reconcileAgents)
}

// reconcileSnapshot validates the snapshot on its own.
func (r *VersionReconciler) reconcileSnapshot(_ context.Context, s *versionScope) (ctrl.Result, error) {
	s.invalid = validateDefinition(&s.version.Definition.Snapshot, snapshotPath)
	return ctrl.Result{}, nil
}

// reconcileAgents checks that every Agent the snapshot names exists in its workspace.
func (r *VersionReconciler) reconcileAgents(ctx context.Context, s *versionScope) (ctrl.Result, error) {
	var err error
	s.missingAgents, err = missingAgents(ctx, r.Client, s.version.Namespace, &s.version.Definition.Snapshot, snapshotPath)
	return ctrl.Result{}, err
}

// flowGone says whether the Flow that controls version (its owner reference, set at publication)
// no longer exists: deleted, or deleted and created again (another uid). A version without such
// a reference is kept.
func (r *VersionReconciler) flowGone(ctx context.Context, version *platformv1.FlowVersion) (bool, error) {
	owner := metav1.GetControllerOf(version)
	if owner == nil || owner.Kind != "Flow" || owner.APIVersion != platformv1.GroupVersion.String() {
		return false, nil
	}
	flow := &platformv1.Flow{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: version.Namespace, Name: owner.Name}, flow)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return flow.UID != owner.UID, nil
}

// versionsOfFlow maps a Flow to its published versions, so that they go when it goes.
func (r *VersionReconciler) versionsOfFlow(ctx context.Context, obj client.Object) []reconcile.Request {
	versions := &platformv1.FlowVersionList{}
	if err := r.Client.List(ctx, versions, client.InNamespace(obj.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "listing flow versions of a flow", "flow", obj.GetName())
		return nil
	}
	var requests []reconcile.Request
	for i := range versions.Items {
		if string(versions.Items[i].Definition.FlowName) == obj.GetName() {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&versions.Items[i])})
		}
	}
	return requests
}

// versionsOfAgent maps an Agent to the versions that name it.
func (r *VersionReconciler) versionsOfAgent(ctx context.Context, obj client.Object) []reconcile.Request {
	versions := &platformv1.FlowVersionList{}
	if err := r.Client.List(ctx, versions, client.InNamespace(obj.GetNamespace()), client.MatchingFields{agentIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing flow versions of an agent", "agent", obj.GetName())
		return nil
	}
	return reconcileutil.Requests(versions)
}

// setVersionReadyCondition reports whether the version can run: a valid snapshot
// (InvalidDefinition) whose Agents exist (AgentNotFound).
func setVersionReadyCondition(s *versionScope) {
	def := &s.version.Definition
	status := &s.version.Status.ResourceStatus
	switch {
	case len(s.invalid) > 0:
		reconcileutil.SetReady(status, s.version.Generation, false, platformv1.InvalidDefinitionReason, reconcileutil.FindingsMessage(s.invalid))
	case len(s.missingAgents) > 0:
		reconcileutil.SetReady(status, s.version.Generation, false, platformv1.AgentNotFoundReason, reconcileutil.FindingsMessage(s.missingAgents))
	default:
		reconcileutil.SetReady(status, s.version.Generation, true, platformv1.ResolvedReason,
			fmt.Sprintf("version %s of Flow %q", def.Version, def.FlowName))
	}
}
