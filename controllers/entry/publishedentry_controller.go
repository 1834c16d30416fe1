package entry

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

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

// +kubebuilder:rbac:groups=platform.dev,resources=publishedentries,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=platform.dev,resources=publishedentries/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=flows;flowversions,verbs=get;list;watch

// PublishedReconciler reports whether each PublishedEntry's pinned Flow versions can run, and
// removes a PublishedEntry whose Entry is gone (kubectl delete, a GitOps prune): the embedded
// control plane has no garbage collector to follow an owner reference. It owns nothing outside the
// status, so it needs no finalizer.
type PublishedReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Reader reads, uncached, whether a PublishedEntry's Entry still exists.
	Reader client.Reader
}

// SetupWithManager registers the reconciler and its watches with mgr.
func (r *PublishedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Reader == nil {
		return errors.New("publishedentry reconciler: Client, Recorder and Reader are required")
	}
	toEntries := handler.EnqueueRequestsFromMapFunc(r.publishedEntriesOfWorkspace)
	return ctrl.NewControllerManagedBy(mgr).
		Named("publishedentry").
		For(&platformv1.PublishedEntry{}).
		Watches(&platformv1.Flow{}, toEntries).
		Watches(&platformv1.FlowVersion{}, toEntries).
		// An Entry's deletion removes its projection; its other changes are publication's.
		Watches(&platformv1.Entry{}, &handler.EnqueueRequestForObject{}).
		Complete(r)
}

// publishedScope is what one reconcile of a PublishedEntry found.
type publishedScope struct {
	entry *platformv1.PublishedEntry
	// targets are the pinned versions, resolvedTarget first, then continuationTarget.
	targets []pinnedTarget
	// waitingFor names a FlowVersion that has not reported Ready yet.
	waitingFor string
}

// pinnedTarget is what one pinned Flow version resolved to.
type pinnedTarget struct {
	path string
	ref  platformv1.FlowVersionReference
	// version is the FlowVersion; nil when it is not published.
	version *platformv1.FlowVersion
	// flow is the Flow; nil when it does not exist.
	flow *platformv1.Flow
	// unresolvable says why the reference cannot be looked up at all.
	unresolvable string
}

// Reconcile resolves the pinned versions and writes the status once, at the end.
func (r *PublishedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	entry := &platformv1.PublishedEntry{}
	if err := r.Client.Get(ctx, req.NamespacedName, entry); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !entry.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if orphan, err := r.deleteOrphan(ctx, entry); orphan || err != nil {
		return ctrl.Result{}, err
	}
	base := entry.DeepCopy()
	s := &publishedScope{entry: entry}
	defer func() {
		switch {
		case reterr != nil:
		case s.waitingFor != "":
			log.FromContext(ctx).V(1).Info("waiting for a reference to catch up", "reference", s.waitingFor)
		default:
			setPublishedReadyCondition(s)
			reconcileutil.Observed(&entry.Status.ResourceStatus, entry.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, entry,
			base.Status.Conditions, entry.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileTargets)
}

// deleteOrphan deletes a PublishedEntry whose Entry no longer exists, with an uncached read so
// that an Entry created a moment ago never loses its fresh publication; true when it did.
func (r *PublishedReconciler) deleteOrphan(ctx context.Context, entry *platformv1.PublishedEntry) (bool, error) {
	err := r.Reader.Get(ctx, client.ObjectKeyFromObject(entry), &platformv1.Entry{})
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	uid := entry.UID
	if err := r.Client.Delete(ctx, entry, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return true, err
	}
	r.Recorder.Eventf(entry, nil, corev1.EventTypeNormal, "EntryDeleted", "Delete", "its Entry was deleted, so it is no longer published")
	return true, nil
}

// reconcileTargets finds each pinned FlowVersion and its Flow.
func (r *PublishedReconciler) reconcileTargets(ctx context.Context, s *publishedScope) (ctrl.Result, error) {
	def := &s.entry.Definition
	refs := []pinnedTarget{{path: "definition.resolvedTarget", ref: def.ResolvedTarget}}
	if def.ContinuationTarget != nil {
		refs = append(refs, pinnedTarget{path: "definition.continuationTarget", ref: *def.ContinuationTarget})
	}
	for _, t := range refs {
		ns, unresolvable, err := reconcileutil.ResolveNamespace(ctx, r.Client, s.entry.Namespace, t.ref.Namespace)
		if err != nil {
			return ctrl.Result{}, err
		}
		if t.unresolvable = unresolvable; t.unresolvable != "" {
			s.targets = append(s.targets, t)
			continue
		}
		fv, err := publication.FindFlowVersion(ctx, r.Client, ns, string(t.ref.Name), t.ref.Version)
		if err != nil {
			return ctrl.Result{}, err
		}
		t.version = fv
		flow := &platformv1.Flow{}
		err = r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(t.ref.Name)}, flow)
		switch {
		case client.IgnoreNotFound(err) != nil:
			return ctrl.Result{}, err
		case err == nil:
			t.flow = flow
		}
		if fv != nil && !reconcileutil.HasReported(fv.Status.Conditions) {
			s.waitingFor = "FlowVersion " + fv.Name
		}
		s.targets = append(s.targets, t)
	}
	return ctrl.Result{}, nil
}

// publishedEntriesOfWorkspace maps an object to the PublishedEntries of its workspace.
func (r *PublishedReconciler) publishedEntriesOfWorkspace(ctx context.Context, obj client.Object) []reconcile.Request {
	requests, err := reconcileutil.WorkspaceRequests(ctx, r.Client, obj.GetNamespace(), func() client.ObjectList { return &platformv1.PublishedEntryList{} })
	if err != nil {
		log.FromContext(ctx).Error(err, "listing published entries of a workspace")
	}
	return requests
}
