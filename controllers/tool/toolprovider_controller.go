package tool

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

// secretIndex is a field index of ToolProviders on the names of the Secrets they refer to.
const secretIndex = "definition.secrets"

// +kubebuilder:rbac:groups=platform.dev,resources=toolproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=toolproviders/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=secrets,verbs=get;list;watch

// ProviderReconciler reports whether each ToolProvider is usable, without starting or contacting
// it. It owns nothing outside the provider's status, so it needs no finalizer.
type ProviderReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Secrets resolves the provider's Secret references under the rules of scopes and grants.
	Secrets *secrets.Resolver
	// CommandAllowed says whether the instance runs a STDIO provider's command
	// (Platform:Tools:AllowedCommands); nil when the manager does not know the instance's
	// settings, where commands are not checked.
	CommandAllowed func(command string) bool
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *ProviderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Secrets == nil {
		return errors.New("toolprovider reconciler: Client, Recorder and Secrets are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &platformv1.ToolProvider{}, secretIndex, func(obj client.Object) []string {
		var names []string
		for _, ref := range secretReferences(&obj.(*platformv1.ToolProvider).Definition) {
			names = append(names, string(ref.ref.Name))
		}
		return names
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("toolprovider").
		For(&platformv1.ToolProvider{}).
		Watches(&platformv1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.providersOfSecret)).
		Complete(r)
}

// providerScope is what one reconcile of a ToolProvider found.
type providerScope struct {
	provider *platformv1.ToolProvider
	// invalid lists what is wrong with the definition itself.
	invalid field.ErrorList
	// secretRefusal says why the first Secret reference that does not resolve does not.
	secretRefusal *secrets.Refusal
	// commandRefused is set when the instance does not run the STDIO command.
	commandRefused bool
}

// Reconcile checks the provider's definition and Secrets and writes its status once, at the end.
func (r *ProviderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	provider := &platformv1.ToolProvider{}
	if err := r.Client.Get(ctx, req.NamespacedName, provider); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !provider.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := provider.DeepCopy()
	s := &providerScope{provider: provider}
	defer func() {
		if reterr == nil {
			setProviderReadyCondition(s)
			reconcileutil.Observed(&provider.Status.ResourceStatus, provider.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, provider,
			base.Status.Conditions, provider.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileDefinition, r.reconcileSecrets)
}

// reconcileDefinition checks the definition on its own.
func (r *ProviderReconciler) reconcileDefinition(_ context.Context, s *providerScope) (ctrl.Result, error) {
	def := &s.provider.Definition
	s.invalid = validateDefinition(def, field.NewPath("definition"))
	s.commandRefused = len(s.invalid) == 0 && def.Transport == platformv1.StdioTransport && r.CommandAllowed != nil && !r.CommandAllowed(def.Stdio.Command)
	return ctrl.Result{}, nil
}

// reconcileSecrets resolves every Secret the definition names with the Resolver every consumer
// uses (platform.dev Secrets: metadata of Vault entries, never values). Whether a Vault holds a
// value is the Secret's own status and is not checked here.
func (r *ProviderReconciler) reconcileSecrets(ctx context.Context, s *providerScope) (ctrl.Result, error) {
	for _, ref := range secretReferences(&s.provider.Definition) {
		_, err := r.Secrets.ResolveSecret(ctx, s.provider.Namespace, ref.path.String(), *ref.ref)
		if refusal, ok := secrets.AsRefusal(err); ok {
			s.secretRefusal = refusal
			return ctrl.Result{}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// providersOfSecret maps a Secret to the providers that may name it: those naming a Secret of
// that name in any namespace (descendants name ancestors' Secrets).
func (r *ProviderReconciler) providersOfSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	providers := &platformv1.ToolProviderList{}
	if err := r.Client.List(ctx, providers, client.MatchingFields{secretIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing tool providers of a secret", "secret", obj.GetName())
		return nil
	}
	return reconcileutil.Requests(providers)
}
