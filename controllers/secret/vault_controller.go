package secret

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// VaultResync is how often a Vault's availability is checked again without a change this process
// saw: a key file created, repaired or replaced by hand, values written through another replica.
const VaultResync = 30 * time.Second

// +kubebuilder:rbac:groups=platform.dev,resources=vaults,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=vaults/status,verbs=get;update;patch

// VaultReconciler reports whether each Vault can store and read values. It owns nothing outside
// the Vault's status, so it needs no finalizer.
type VaultReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Secrets  *secrets.Service
}

// SetupWithManager registers the reconciler with mgr; the Local Vault's own changes enqueue the
// Vaults they concern.
func (r *VaultReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Secrets == nil {
		return errors.New("vault reconciler: Client, Recorder and Secrets are required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("vault").
		For(&platformv1.Vault{}).
		WatchesRawSource(source.Func(r.watchLocalVault)).
		Complete(r)
}

// vaultScope is what one reconcile of a Vault found.
type vaultScope struct {
	vault        *platformv1.Vault
	availability secrets.Availability
}

// Reconcile writes the Vault's status once, at the end.
func (r *VaultReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	vault := &platformv1.Vault{}
	if err := r.Client.Get(ctx, req.NamespacedName, vault); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vault.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := vault.DeepCopy()
	s := &vaultScope{vault: vault}
	defer func() {
		if reterr == nil {
			setVaultReadyCondition(s)
			reconcileutil.Observed(&vault.Status.ResourceStatus, vault.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, vault,
			base.Status.Conditions, vault.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileAvailability)
}

// reconcileAvailability asks the Local Vault whether it can store and read this Vault's values.
func (r *VaultReconciler) reconcileAvailability(ctx context.Context, s *vaultScope) (ctrl.Result, error) {
	if p := s.vault.Definition.Provider; p != "" && p != platformv1.LocalVault {
		return ctrl.Result{}, nil
	}
	a, err := r.Secrets.VaultAvailability(ctx, s.vault)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.availability = a
	return ctrl.Result{RequeueAfter: VaultResync}, nil
}

// watchLocalVault enqueues every Vault when the key was initialized, else the Vault of the entry.
func (r *VaultReconciler) watchLocalVault(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.Secrets.Watch(ctx, func(c secrets.Change) {
		if !c.All {
			ns, err := r.Secrets.NamespaceOf(ctx, c.Entry.VaultScope)
			if err != nil {
				log.FromContext(ctx).Error(err, "placing a Local Vault change", "scope", c.Entry.VaultScope)
				return
			}
			queue.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: c.Entry.Vault}})
			return
		}
		vaults := &platformv1.VaultList{}
		if err := r.Client.List(ctx, vaults); err != nil {
			log.FromContext(ctx).Error(err, "listing vaults of a Local Vault change")
			return
		}
		for _, req := range reconcileutil.Requests(vaults) {
			queue.Add(req)
		}
	})
	return nil
}
