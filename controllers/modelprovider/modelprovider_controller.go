package modelprovider

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// credentialIndex is a field index of ModelProviders on the name of their credential Secret.
const credentialIndex = "definition.credential.name"

// +kubebuilder:rbac:groups=platform.dev,resources=modelproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=modelproviders/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconciler reports whether each ModelProvider is usable, without contacting it. It owns
// nothing outside the provider's status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Secrets resolves the credential reference under the rules of scopes and grants.
	Secrets *secrets.Resolver
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Secrets == nil {
		return errors.New("modelprovider reconciler: Client, Recorder and Secrets are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &platformv1.ModelProvider{}, credentialIndex, func(obj client.Object) []string {
		if credential := obj.(*platformv1.ModelProvider).Definition.Credential; credential != nil {
			return []string{string(credential.Name)}
		}
		return nil
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.ModelProvider{}).
		Watches(&platformv1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.providersOfSecret)).
		Complete(r)
}

// scope is what one reconcile found; setReadyCondition turns it into the status.
type scope struct {
	provider *platformv1.ModelProvider
	// invalid lists what is wrong with the definition itself.
	invalid field.ErrorList
	// credentialRefusal says why the credential Secret does not resolve; nil when it does or when
	// there is none.
	credentialRefusal *secrets.Refusal
}

// Reconcile checks the provider's definition and credential and writes its status once, at the
// end. A failed read leaves the status as it was: only a complete observation is reported.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	provider := &platformv1.ModelProvider{}
	if err := r.Client.Get(ctx, req.NamespacedName, provider); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !provider.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := provider.DeepCopy()
	s := &scope{provider: provider}
	defer func() {
		if reterr == nil {
			updateStatus(s)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, provider,
			base.Status.Conditions, provider.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileDefinition, r.reconcileCredential)
}

// reconcileDefinition checks the definition on its own.
func (r *Reconciler) reconcileDefinition(_ context.Context, s *scope) (ctrl.Result, error) {
	s.invalid = validateDefinition(&s.provider.Definition, field.NewPath("definition"))
	return ctrl.Result{}, nil
}

// reconcileCredential resolves the credential Secret with the Resolver every consumer uses (a
// platform.dev Secret: metadata of a Vault entry, never a value). Whether its Vault resolves and
// holds a value is the Secret's own status and is not checked here.
func (r *Reconciler) reconcileCredential(ctx context.Context, s *scope) (ctrl.Result, error) {
	ref := s.provider.Definition.Credential
	if ref == nil {
		return ctrl.Result{}, nil
	}
	_, err := r.Secrets.ResolveSecret(ctx, s.provider.Namespace, "definition.credential", *ref)
	if refusal, ok := secrets.AsRefusal(err); ok {
		s.credentialRefusal = refusal
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// providersOfSecret maps a Secret to the providers that may name it as their credential: those
// naming a Secret of that name in any namespace (descendants name ancestors' Secrets).
func (r *Reconciler) providersOfSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	providers := &platformv1.ModelProviderList{}
	if err := r.Client.List(ctx, providers, client.MatchingFields{credentialIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing model providers of a secret", "secret", obj.GetName())
		return nil
	}
	return reconcileutil.Requests(providers)
}
