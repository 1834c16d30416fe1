package secret

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

// vaultIndex is a field index of Secrets on the name of their Vault.
const vaultIndex = "definition.vault.name"

// +kubebuilder:rbac:groups=platform.dev,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=secrets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=vaults,verbs=get;list;watch

// Reconciler reports whether each Secret's Vault exists and holds its value. It never reads a
// value; it owns nothing outside the Secret's status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("secret reconciler: Client and Recorder are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &platformv1.Secret{}, vaultIndex, func(obj client.Object) []string {
		return []string{string(obj.(*platformv1.Secret).Definition.Vault.Name)}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Secret{}).
		Watches(&platformv1.Vault{}, handler.EnqueueRequestsFromMapFunc(r.secretsOfVault)).
		Complete(r)
}

// scope is what one reconcile of a Secret found; setReadyCondition turns it into the status.
type scope struct {
	secret *platformv1.Secret
	// vaultProblem says why the Vault reference does not resolve; empty when it does.
	vaultProblem string
}

// Reconcile finds the Secret's Vault and writes the status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	secret := &platformv1.Secret{}
	if err := r.Client.Get(ctx, req.NamespacedName, secret); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !secret.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := secret.DeepCopy()
	s := &scope{secret: secret}
	defer func() {
		if reterr == nil {
			setReadyCondition(s)
			reconcileutil.Observed(&secret.Status.ResourceStatus, secret.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, secret,
			base.Status.Conditions, secret.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileVault)
}

// reconcileVault finds the Vault of the Secret in its own scope.
func (r *Reconciler) reconcileVault(ctx context.Context, s *scope) (ctrl.Result, error) {
	ref := s.secret.Definition.Vault
	if ref.ScopeRef != "" && ref.ScopeRef != platformv1.ScopeRef("/workspaces/"+s.secret.Namespace) {
		s.vaultProblem = "definition.vault.scopeRef: Vaults of scope " + string(ref.ScopeRef) + " cannot be resolved yet; use a Vault of the Secret's workspace"
		return ctrl.Result{}, nil
	}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.secret.Namespace, Name: string(ref.Name)}, &platformv1.Vault{})
	switch {
	case client.IgnoreNotFound(err) != nil:
		return ctrl.Result{}, err
	case err != nil:
		s.vaultProblem = "definition.vault.name: Vault \"" + string(ref.Name) + "\" not found"
	}
	return ctrl.Result{}, nil
}

// secretsOfVault maps a Vault to the Secrets stored in it.
func (r *Reconciler) secretsOfVault(ctx context.Context, obj client.Object) []reconcile.Request {
	secrets := &platformv1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.InNamespace(obj.GetNamespace()), client.MatchingFields{vaultIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing secrets of a vault", "vault", obj.GetName())
		return nil
	}
	return reconcileutil.Requests(secrets)
}
