package secret

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// vaultIndex is a field index of Secrets on the name of their Vault.
const vaultIndex = "definition.vault.name"

// SecretResync is how often a Secret is looked at again without a change this process saw: a
// value written through another replica, or a key file changed under the running server.
const SecretResync = 2 * time.Minute

// +kubebuilder:rbac:groups=platform.dev,resources=secrets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=secrets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=secrets/finalizers,verbs=update
// +kubebuilder:rbac:groups=platform.dev,resources=vaults,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// VaultEntryFinalizer holds a Secret until its value is removed from its Vault, so that no
// ciphertext outlives its Secret and a new Secret of the same name starts Missing.
const VaultEntryFinalizer = "platform.dev/vault-entry"

// Reconciler reports whether each Secret's Vault resolves and holds its value, and removes the
// value when the Secret is deleted (VaultEntryFinalizer). It never reads a value.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Secrets resolves Vaults and inspects their entries, reading through Client.
	Secrets *secrets.Service
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr: Vaults,
// and the Local Vault's own changes (values written or removed, the key initialized).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Secrets == nil {
		return errors.New("secret reconciler: Client, Recorder and Secrets are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &platformv1.Secret{}, vaultIndex, func(obj client.Object) []string {
		return []string{string(obj.(*platformv1.Secret).Definition.Vault.Name)}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Secret{}).
		Watches(&platformv1.Vault{}, handler.EnqueueRequestsFromMapFunc(r.secretsOfVault)).
		WatchesRawSource(source.Func(r.watchLocalVault)).
		Complete(r)
}

// scope is what one reconcile of a Secret found; setReadyCondition turns it into the status.
type scope struct {
	secret     *platformv1.Secret
	inspection secrets.SecretInspection
}

// Reconcile inspects the Secret's Vault and entry and writes the status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	secret := &platformv1.Secret{}
	if err := r.Client.Get(ctx, req.NamespacedName, secret); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !secret.DeletionTimestamp.IsZero() {
		return reconcileutil.IgnoreConflict(r.releaseEntry(ctx, secret))
	}
	if !controllerutil.ContainsFinalizer(secret, VaultEntryFinalizer) {
		patch := client.MergeFromWithOptions(secret.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(secret, VaultEntryFinalizer)
		if err := r.Client.Patch(ctx, secret, patch); err != nil {
			return reconcileutil.IgnoreConflict(client.IgnoreNotFound(err))
		}
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

// reconcileVault resolves the Secret's Vault and looks at its entry.
func (r *Reconciler) reconcileVault(ctx context.Context, s *scope) (ctrl.Result, error) {
	in, err := r.Secrets.InspectSecret(ctx, s.secret)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.inspection = in
	return ctrl.Result{RequeueAfter: SecretResync}, nil
}

// releaseEntry removes the value of a Secret being deleted from its Vault, unless another Secret
// of its namespace uses the same entry, then lets the deletion proceed. A Secret whose scope or
// Vault scope no longer exists has no entry to reach: it is let go.
func (r *Reconciler) releaseEntry(ctx context.Context, secret *platformv1.Secret) error {
	if !controllerutil.ContainsFinalizer(secret, VaultEntryFinalizer) {
		return nil
	}
	others := &platformv1.SecretList{}
	if err := r.Client.List(ctx, others, client.InNamespace(secret.Namespace)); err != nil {
		return err
	}
	err := r.Secrets.ReleaseEntry(ctx, secret, others.Items)
	if _, refused := secrets.AsRefusal(err); refused || errors.Is(err, secrets.ErrScopeNotFound) {
		log.FromContext(ctx).Info("the deleted Secret's Vault entry cannot be reached; nothing to remove", "reason", err.Error())
	} else if err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(secret.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(secret, VaultEntryFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, secret, patch))
}

// secretsOfVault maps a Vault to the Secrets that may store their values in it: those naming a
// Vault of that name in any namespace (descendants name ancestors' Vaults).
func (r *Reconciler) secretsOfVault(ctx context.Context, obj client.Object) []reconcile.Request {
	secrets := &platformv1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.MatchingFields{vaultIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing secrets of a vault", "vault", obj.GetName())
		return nil
	}
	return reconcileutil.Requests(secrets)
}

// watchLocalVault enqueues the Secrets a Local Vault change concerns: every Secret when the key
// was initialized, else those of the entry's scope that name its Vault.
func (r *Reconciler) watchLocalVault(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.Secrets.Watch(ctx, func(c secrets.Change) {
		list := &platformv1.SecretList{}
		var opts []client.ListOption
		if !c.All {
			ns, err := r.Secrets.NamespaceOf(ctx, c.Entry.SecretScope)
			if err != nil {
				log.FromContext(ctx).Error(err, "placing a Local Vault change", "scope", c.Entry.SecretScope)
				return
			}
			opts = append(opts, client.InNamespace(ns), client.MatchingFields{vaultIndex: c.Entry.Vault})
		}
		if err := r.Client.List(ctx, list, opts...); err != nil {
			log.FromContext(ctx).Error(err, "listing secrets of a Local Vault change")
			return
		}
		for _, req := range reconcileutil.Requests(list) {
			queue.Add(req)
		}
	})
	return nil
}
