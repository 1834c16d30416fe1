package entry

import (
	"context"
	"errors"
	"fmt"

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

// +kubebuilder:rbac:groups=platform.dev,resources=entries,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=entries/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=agents,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=flows,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=platform.dev,resources=flows/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=flowversions,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=platform.dev,resources=publishedentries,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconciler reports whether each Entry draft's targets exist and publishes the drafts whose
// publication is Automatic. What publishing writes (FlowVersions, Direct Agent Flows,
// PublishedEntries) outlives a draft edit on purpose, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Reader reads, uncached, what publication checks (the manager's API reader).
	Reader client.Reader
}

// SetupWithManager registers the reconciler and its watches with mgr. A change of any Agent,
// Flow or FlowVersion reconciles the Entries of its workspace: there are few, and a binding names
// its target in three different ways.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Reader == nil {
		return errors.New("entry reconciler: Client, Recorder and Reader are required")
	}
	toEntries := handler.EnqueueRequestsFromMapFunc(r.entriesOfWorkspace)
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Entry{}).
		Watches(&platformv1.Agent{}, toEntries).
		Watches(&platformv1.Flow{}, toEntries).
		Watches(&platformv1.FlowVersion{}, toEntries).
		Complete(r)
}

// scope is what one reconcile of an Entry found; setReadyCondition turns it into the status.
type scope struct {
	entry *platformv1.Entry
	// missing lists the targets that do not resolve, each with its reason.
	missing []finding
	// resolvedTarget is the exact Flow version the binding resolves to now: for an Agent binding
	// the version of its Direct Agent Flow once publication made it; nil for a Flow without an
	// active version.
	resolvedTarget *platformv1.FlowVersionReference
	// publicationFailure says why the automatic publication of the current generation failed.
	publicationFailure string
}

// finding is one target that does not resolve: a reason and a message with the field path.
type finding struct {
	reason, message string
}

// Reconcile resolves the binding and the continuation and writes the status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	entry := &platformv1.Entry{}
	if err := r.Client.Get(ctx, req.NamespacedName, entry); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !entry.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := entry.DeepCopy()
	s := &scope{entry: entry}
	defer func() {
		if reterr == nil {
			setReadyCondition(s)
			setPublishedCondition(s)
			reconcileutil.Observed(&entry.Status.ResourceStatus, entry.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, entry,
			base.Status.Conditions, entry.Status.Conditions, res, reterr)
	}()
	res, reterr = reconcileutil.RunPhases(ctx, s, r.reconcileBinding, r.reconcileContinuation)
	if reterr != nil {
		return res, reterr
	}
	published, err := r.reconcilePublication(ctx, s)
	if published {
		// The publisher wrote the publication to the status; what is left to write is the
		// conditions, over the status it wrote.
		base.ResourceVersion = entry.ResourceVersion
		base.Status.PublishedGeneration, base.Status.Publications = entry.Status.PublishedGeneration, entry.Status.Publications
	}
	return res, err
}

// reconcilePublication publishes the current generation of a draft whose publication is
// Automatic once its targets resolve; true when it wrote a publication. A draft that cannot be
// published is reported on the Published condition and waits for its next change, or for a
// change of what it refers to.
func (r *Reconciler) reconcilePublication(ctx context.Context, s *scope) (bool, error) {
	entry := s.entry
	if entry.Definition.Publication != platformv1.AutomaticPublication || entry.Status.PublishedGeneration == entry.Generation || len(s.missing) > 0 {
		return false, nil
	}
	publisher := &publication.Publisher{Client: r.Client, Reader: r.Reader}
	result, err := publisher.PublishEntry(ctx, entry, publication.AutomaticPublisher)
	var invalid *publication.InvalidError
	switch {
	case errors.As(err, &invalid):
		s.publicationFailure = reconcileutil.FindingsMessage(invalid.Errs)
		return false, nil
	case err != nil:
		return false, err
	}
	if result.Changed {
		r.Recorder.Eventf(entry, nil, corev1.EventTypeNormal, platformv1.PublishedReason, "Publish",
			"Published generation %d to version %s of Flow %q", entry.Generation, result.Published.Definition.ResolvedTarget.Version, result.Published.Definition.ResolvedTarget.Name)
	}
	return true, nil
}

// reconcileBinding resolves the binding.
func (r *Reconciler) reconcileBinding(ctx context.Context, s *scope) (ctrl.Result, error) {
	resolved, err := r.resolve(ctx, s, &s.entry.Definition.Binding, field.NewPath("definition", "binding"))
	s.resolvedTarget = resolved
	return ctrl.Result{}, err
}

// reconcileContinuation resolves the continuation, if any.
func (r *Reconciler) reconcileContinuation(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.entry.Definition.Continuation == nil {
		return ctrl.Result{}, nil
	}
	_, err := r.resolve(ctx, s, s.entry.Definition.Continuation, field.NewPath("definition", "continuation"))
	return ctrl.Result{}, err
}

// resolve finds the target of one binding, records what does not resolve and returns the exact
// Flow version it resolves to when there is one.
func (r *Reconciler) resolve(ctx context.Context, s *scope, b *platformv1.EntryBinding, path *field.Path) (*platformv1.FlowVersionReference, error) {
	ns := s.entry.Namespace
	switch {
	case b.Agent != nil:
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(b.Agent.Name)}, &platformv1.Agent{})
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		if err != nil {
			s.missing = append(s.missing, finding{platformv1.AgentNotFoundReason,
				fmt.Sprintf("%s: Agent %q not found", path.Child("agent", "name"), b.Agent.Name)})
			return nil, nil
		}
		// The agent's Direct Agent Flow, once publication has made it.
		direct := publication.DirectAgentFlowName(string(b.Agent.Name))
		fv, err := publication.FindFlowVersion(ctx, r.Client, ns, direct, publication.DirectAgentFlowVersion)
		if err != nil || fv == nil {
			return nil, err
		}
		return &platformv1.FlowVersionReference{Name: platformv1.ResourceName(direct), Version: publication.DirectAgentFlowVersion}, nil
	case b.Flow != nil:
		ns, problem, err := reconcileutil.ResolveNamespace(ctx, r.Client, ns, b.Flow.Namespace)
		if err != nil {
			return nil, err
		}
		if problem != "" {
			s.missing = append(s.missing, finding{platformv1.FlowNotFoundReason, path.Child("flow", "namespace").String() + ": " + problem})
			return nil, nil
		}
		flow := &platformv1.Flow{}
		err = r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(b.Flow.Name)}, flow)
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		if err != nil {
			s.missing = append(s.missing, finding{platformv1.FlowNotFoundReason,
				fmt.Sprintf("%s: Flow %q not found", path.Child("flow", "name"), b.Flow.Name)})
			return nil, nil
		}
		version := b.Flow.Version
		if version == "" {
			version = flow.Status.ActiveVersion
		}
		if version == "" {
			return nil, nil
		}
		fv, err := publication.FindFlowVersion(ctx, r.Client, ns, flow.Name, version)
		switch {
		case err != nil:
			return nil, err
		case fv == nil && b.Flow.Version != "":
			s.missing = append(s.missing, finding{platformv1.FlowVersionNotFoundReason,
				fmt.Sprintf("%s: version %s of Flow %q is not published", path.Child("flow", "version"), version, b.Flow.Name)})
			return nil, nil
		case fv == nil:
			return nil, nil
		}
		return &platformv1.FlowVersionReference{Name: b.Flow.Name, Namespace: b.Flow.Namespace, Version: version}, nil
	}
	return nil, nil
}

// entriesOfWorkspace maps an object to the Entries of its workspace.
func (r *Reconciler) entriesOfWorkspace(ctx context.Context, obj client.Object) []reconcile.Request {
	requests, err := reconcileutil.WorkspaceRequests(ctx, r.Client, obj.GetNamespace(), func() client.ObjectList { return &platformv1.EntryList{} })
	if err != nil {
		log.FromContext(ctx).Error(err, "listing entries of a workspace")
	}
	return requests
}
