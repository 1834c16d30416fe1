package tool

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
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *ProviderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("toolprovider reconciler: Client and Recorder are required")
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
	// missingSecrets lists the Secret references that do not resolve, by field path.
	missingSecrets field.ErrorList
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
	s.invalid = validateDefinition(&s.provider.Definition, field.NewPath("definition"))
	return ctrl.Result{}, nil
}

// reconcileSecrets finds every platform Secret the definition names (metadata only: whether a
// Vault holds a value is the Secret's own status).
func (r *ProviderReconciler) reconcileSecrets(ctx context.Context, s *providerScope) (ctrl.Result, error) {
	for _, ref := range secretReferences(&s.provider.Definition) {
		if problem := unresolvable(ref.ref, s.provider.Namespace); problem != "" {
			s.missingSecrets = append(s.missingSecrets, field.Invalid(ref.path, ref.ref.Name, problem))
			continue
		}
		ns, problem, err := reconcileutil.ResolveNamespace(ctx, r.Client, s.provider.Namespace, ref.ref.Namespace)
		if err != nil {
			return ctrl.Result{}, err
		}
		if problem != "" {
			s.missingSecrets = append(s.missingSecrets, field.Invalid(ref.path.Child("namespace"), ref.ref.Namespace, problem))
			continue
		}
		err = r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(ref.ref.Name)}, &platformv1.Secret{})
		switch {
		case client.IgnoreNotFound(err) != nil:
			return ctrl.Result{}, err
		case err != nil:
			s.missingSecrets = append(s.missingSecrets, &field.Error{Type: field.ErrorTypeNotFound, Field: ref.path.Child("name").String(),
				BadValue: ref.ref.Name, Detail: fmt.Sprintf("Secret %q not found", ref.ref.Name)})
		}
	}
	return ctrl.Result{}, nil
}

// providersOfSecret maps a Secret to the providers that refer to it.
func (r *ProviderReconciler) providersOfSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	// A provider may name a Secret of another resource namespace of its workspace.
	requests, err := reconcileutil.WorkspaceRequests(ctx, r.Client, obj.GetNamespace(), func() client.ObjectList { return &platformv1.ToolProviderList{} },
		client.MatchingFields{secretIndex: obj.GetName()})
	if err != nil {
		log.FromContext(ctx).Error(err, "listing tool providers of a secret", "secret", obj.GetName())
	}
	return requests
}
