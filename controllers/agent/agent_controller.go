package agent

import (
	"context"
	"errors"
	corev1 "k8s.io/api/core/v1"
	"platform.dev/platform/internal/resourcenamespace"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// Field indexes of Agents, so that a change of a profile, a provider or a tool reaches exactly
// the agents that depend on it.
const (
	// modelProfileIndex holds "name/<name>" or "uid/<resourceId>" of the selected ModelProfile.
	modelProfileIndex = "definition.modelProfile"
	// toolIndex holds the name of each Tool of the agent.
	toolIndex = "definition.tools.name"
)

// +kubebuilder:rbac:groups=platform.dev,resources=agents,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=agents/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=modelprofiles;modelproviders;tools,verbs=get;list;watch

// Reconciler reports whether each Agent can be invoked. It owns nothing outside the Agent's
// status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler, its field indexes and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("agent reconciler: Client and Recorder are required")
	}
	ctx := context.Background()
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &platformv1.Agent{}, modelProfileIndex, func(obj client.Object) []string {
		if key := profileKey(obj.(*platformv1.Agent).Definition.ModelProfile); key != "" {
			return []string{key}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &platformv1.Agent{}, toolIndex, func(obj client.Object) []string {
		var names []string
		for _, tool := range obj.(*platformv1.Agent).Definition.Tools {
			names = append(names, tool.Name)
		}
		return names
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Agent{}).
		Watches(&platformv1.ModelProfile{}, handler.EnqueueRequestsFromMapFunc(r.agentsOfProfile)).
		Watches(&platformv1.ModelProvider{}, handler.EnqueueRequestsFromMapFunc(r.agentsOfProvider)).
		Watches(&platformv1.Tool{}, handler.EnqueueRequestsFromMapFunc(r.agentsOfTool)).
		Complete(r)
}

// scope is what one reconcile found; setReadyCondition turns it into the status.
type scope struct {
	agent *platformv1.Agent
	// profile is the selected ModelProfile; nil when none is selected or it does not exist.
	profile *platformv1.ModelProfile
	// provider is the profile's ModelProvider; nil when there is no profile or it does not exist.
	provider *platformv1.ModelProvider
	// missingTools and disabledTools name the agent's tools that do not exist or are not enabled.
	missingTools, disabledTools []string
	// waitingFor names a reference that has not caught up yet (no Ready condition, or a profile
	// still blaming a provider that is Ready); the status is left as it is until it has, and the
	// reference's status change brings the agent back.
	waitingFor string
}

// Reconcile resolves the agent's references and writes its status once, at the end. A failed
// read leaves the status as it was: only a complete observation is reported.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	agent := &platformv1.Agent{}
	if err := r.Client.Get(ctx, req.NamespacedName, agent); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !agent.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := agent.DeepCopy()
	s := &scope{agent: agent}
	defer func() {
		switch {
		case reterr != nil:
		case s.waitingFor != "":
			log.FromContext(ctx).V(1).Info("waiting for a reference to catch up", "reference", s.waitingFor)
		default:
			updateStatus(s)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, agent,
			base.Status.Conditions, agent.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileModelProfile, r.reconcileModelProvider, r.reconcileTools)
}

// reconcileModelProfile finds the selected ModelProfile: by name, or by resourceId (the profile's
// UID) among the profiles of the agent's workspace.
func (r *Reconciler) reconcileModelProfile(ctx context.Context, s *scope) (ctrl.Result, error) {
	ref := s.agent.Definition.ModelProfile
	switch {
	case ref == nil:
		return ctrl.Result{}, nil
	case ref.Name != "":
		ns := s.agent.Namespace
		if ref.Namespace != "" {
			resolved, _, err := reconcileutil.ResolveNamespace(ctx, r.Client, s.agent.Namespace, ref.Namespace)
			if err != nil || resolved == "" {
				return ctrl.Result{}, err
			}
			ns = resolved
		}
		profile := &platformv1.ModelProfile{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, profile)
		if err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		s.profile = profile
	case ref.ResourceID != "":
		profiles := &platformv1.ModelProfileList{}
		if err := r.Client.List(ctx, profiles, client.InNamespace(s.agent.Namespace)); err != nil {
			return ctrl.Result{}, err
		}
		for i := range profiles.Items {
			if string(profiles.Items[i].UID) == ref.ResourceID {
				s.profile = &profiles.Items[i]
			}
		}
	}
	if s.profile != nil && !reconcileutil.HasReported(s.profile.Status.Conditions) {
		s.waitingFor = "ModelProfile " + s.profile.Name
	}
	return ctrl.Result{}, nil
}

// reconcileModelProvider finds the ModelProvider of the profile.
func (r *Reconciler) reconcileModelProvider(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.profile == nil {
		return ctrl.Result{}, nil
	}
	provider := &platformv1.ModelProvider{}
	// A profile's provider is in the profile's own namespace.
	key := client.ObjectKey{Namespace: s.profile.Namespace, Name: string(s.profile.Definition.Provider.Name)}
	if err := r.Client.Get(ctx, key, provider); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s.provider = provider
	switch {
	case !reconcileutil.HasReported(provider.Status.Conditions):
		s.waitingFor = "ModelProvider " + provider.Name
	case profileLagsBehindProvider(s.profile, provider):
		s.waitingFor = "ModelProfile " + s.profile.Name
	}
	return ctrl.Result{}, nil
}

// profileLagsBehindProvider says whether the profile still blames a provider that is Ready: the
// profile's reconcile has not seen the provider's change yet and will report it shortly.
func profileLagsBehindProvider(profile *platformv1.ModelProfile, provider *platformv1.ModelProvider) bool {
	ready := meta.FindStatusCondition(profile.Status.Conditions, platformv1.ReadyCondition)
	return ready != nil && ready.Status != metav1.ConditionTrue &&
		(ready.Reason == platformv1.ModelProviderNotFoundReason || ready.Reason == platformv1.ProviderUnavailableReason) &&
		reconcileutil.NotReady(provider.Status.Conditions) == ""
}

// reconcileTools finds the agent's Tools; each must exist and be enabled.
func (r *Reconciler) reconcileTools(ctx context.Context, s *scope) (ctrl.Result, error) {
	for _, t := range s.agent.Definition.Tools {
		tool := &platformv1.Tool{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.agent.Namespace, Name: t.Name}, tool)
		switch {
		case apierrors.IsNotFound(err):
			s.missingTools = append(s.missingTools, t.Name)
		case err != nil:
			return ctrl.Result{}, err
		case !tool.Definition.Enabled:
			s.disabledTools = append(s.disabledTools, t.Name)
		}
	}
	return ctrl.Result{}, nil
}

// profileKey is the modelProfileIndex value of a reference.
func profileKey(ref *platformv1.ModelProfileReference) string {
	switch {
	case ref == nil:
		return ""
	case ref.Name != "" && ref.Namespace != "":
		return "name/" + string(ref.Namespace) + "/" + ref.Name
	case ref.Name != "":
		return "name/" + ref.Name
	case ref.ResourceID != "":
		return "uid/" + ref.ResourceID
	}
	return ""
}

// agentsOfProfile maps a ModelProfile to the agents that select it, by name or by resourceId.
func (r *Reconciler) agentsOfProfile(ctx context.Context, obj client.Object) []reconcile.Request {
	requests := r.agentsMatching(ctx, obj.GetNamespace(), modelProfileIndex, "name/"+obj.GetName())
	requests = append(requests, r.agentsMatching(ctx, obj.GetNamespace(), modelProfileIndex, "uid/"+string(obj.GetUID()))...)
	return append(requests, r.agentsOfProfileElsewhere(ctx, obj)...)
}

// agentsOfProfileElsewhere are the agents of the profile's workspace, in its other resource
// namespaces, that name the profile with its resource namespace (an installed Pack's agent bound
// to a profile of `default`).
func (r *Reconciler) agentsOfProfileElsewhere(ctx context.Context, obj client.Object) []reconcile.Request {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, ns); err != nil {
		return nil
	}
	workspace := resourcenamespace.WorkspaceOf(ns)
	agents := &platformv1.AgentList{}
	key := "name/" + string(resourcenamespace.Of(ns)) + "/" + obj.GetName()
	if err := r.Client.List(ctx, agents, client.MatchingFields{modelProfileIndex: key}); err != nil {
		log.FromContext(ctx).Error(err, "listing agents by index", "index", modelProfileIndex, "value", key)
		return nil
	}
	var requests []reconcile.Request
	for i := range agents.Items {
		owner, err := resourcenamespace.WorkspaceOfName(ctx, r.Client, agents.Items[i].Namespace)
		if err == nil && owner == workspace {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&agents.Items[i])})
		}
	}
	return requests
}

// agentsOfProvider maps a ModelProvider to the agents whose profile uses it.
func (r *Reconciler) agentsOfProvider(ctx context.Context, obj client.Object) []reconcile.Request {
	profiles := &platformv1.ModelProfileList{}
	if err := r.Client.List(ctx, profiles, client.InNamespace(obj.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "listing model profiles to map a provider change to agents")
		return nil
	}
	var requests []reconcile.Request
	for i := range profiles.Items {
		if string(profiles.Items[i].Definition.Provider.Name) == obj.GetName() {
			requests = append(requests, r.agentsOfProfile(ctx, &profiles.Items[i])...)
		}
	}
	return requests
}

// agentsOfTool maps a Tool to the agents that may call it.
func (r *Reconciler) agentsOfTool(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.agentsMatching(ctx, obj.GetNamespace(), toolIndex, obj.GetName())
}

func (r *Reconciler) agentsMatching(ctx context.Context, namespace, index, value string) []reconcile.Request {
	agents := &platformv1.AgentList{}
	if err := r.Client.List(ctx, agents, client.InNamespace(namespace), client.MatchingFields{index: value}); err != nil {
		log.FromContext(ctx).Error(err, "listing agents by index", "index", index, "value", value)
		return nil
	}
	return reconcileutil.Requests(agents)
}
