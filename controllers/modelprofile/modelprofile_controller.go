package modelprofile

import (
	"context"
	"errors"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// providerIndex is a field index of ModelProfiles on the name of their ModelProvider.
const providerIndex = "definition.provider.name"

// +kubebuilder:rbac:groups=platform.dev,resources=modelprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=modelprofiles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=modelproviders;models,verbs=get;list;watch

// Reconciler reports whether each ModelProfile resolves. It owns nothing outside the profile's
// status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("modelprofile reconciler: Client and Recorder are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &platformv1.ModelProfile{}, providerIndex, func(obj client.Object) []string {
		return []string{string(obj.(*platformv1.ModelProfile).Definition.Provider.Name)}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.ModelProfile{}).
		Watches(&platformv1.ModelProvider{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
			return r.profilesOfProvider(ctx, obj.GetNamespace(), obj.GetName())
		})).
		Watches(&platformv1.Model{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
			return r.profilesOfProvider(ctx, obj.GetNamespace(), string(obj.(*platformv1.Model).Definition.Provider.Name))
		})).
		Complete(r)
}

// scope is what one reconcile found; setReadyCondition and setReferences turn it into the status.
type scope struct {
	profile *platformv1.ModelProfile
	// provider is the referenced ModelProvider; nil when it does not exist.
	provider *platformv1.ModelProvider
	// model is the provider's discovered Model with the profile's modelId; nil when none is.
	model *platformv1.Model
	// waitingFor names a provider that has not reported Ready yet; the status is left as it is
	// until it has (its status change brings the profile back).
	waitingFor string
}

// Reconcile resolves the profile's references and writes its status once, at the end. A failed
// read leaves the status as it was: only a complete observation is reported.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	profile := &platformv1.ModelProfile{}
	if err := r.Client.Get(ctx, req.NamespacedName, profile); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !profile.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := profile.DeepCopy()
	s := &scope{profile: profile}
	defer func() {
		switch {
		case reterr != nil:
		case s.waitingFor != "":
			log.FromContext(ctx).V(1).Info("waiting for a reference to catch up", "reference", s.waitingFor)
		default:
			updateStatus(s)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, profile,
			base.Status.Conditions, profile.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileProvider, r.reconcileModel)
}

// reconcileProvider finds the profile's ModelProvider.
func (r *Reconciler) reconcileProvider(ctx context.Context, s *scope) (ctrl.Result, error) {
	provider := &platformv1.ModelProvider{}
	key := client.ObjectKey{Namespace: s.profile.Namespace, Name: string(s.profile.Definition.Provider.Name)}
	if err := r.Client.Get(ctx, key, provider); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s.provider = provider
	if !reconcileutil.HasReported(provider.Status.Conditions) {
		s.waitingFor = "ModelProvider " + provider.Name
	}
	return ctrl.Result{}, nil
}

// reconcileModel finds the discovered Model the profile asks for. Discovery is explicit and may
// not have run, so a missing Model is reported as such and does not make the profile not Ready.
func (r *Reconciler) reconcileModel(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.provider == nil || s.profile.Definition.ModelID == "" {
		return ctrl.Result{}, nil
	}
	models := &platformv1.ModelList{}
	if err := r.Client.List(ctx, models, client.InNamespace(s.profile.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	for i, m := range models.Items {
		if m.Definition.Provider.Name == s.profile.Definition.Provider.Name && m.Definition.ModelID == s.profile.Definition.ModelID {
			s.model = &models.Items[i]
			break
		}
	}
	return ctrl.Result{}, nil
}

// profilesOfProvider maps a change of a provider (or of one of its Models) to its profiles.
func (r *Reconciler) profilesOfProvider(ctx context.Context, namespace, provider string) []reconcile.Request {
	profiles := &platformv1.ModelProfileList{}
	if err := r.Client.List(ctx, profiles, client.InNamespace(namespace), client.MatchingFields{providerIndex: provider}); err != nil {
		log.FromContext(ctx).Error(err, "listing model profiles of a provider", "provider", provider)
		return nil
	}
	return reconcileutil.Requests(profiles)
}
