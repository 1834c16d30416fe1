package secret

import (
	"context"
	"errors"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// +kubebuilder:rbac:groups=platform.dev,resources=vaults,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=vaults/status,verbs=get;update;patch

// VaultReconciler reports whether each Vault can store and read values. It owns nothing outside
// the Vault's status, so it needs no finalizer.
type VaultReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr.
func (r *VaultReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("vault reconciler: Client and Recorder are required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("vault").
		For(&platformv1.Vault{}).
		Complete(r)
}

// vaultScope is what one reconcile of a Vault found.
type vaultScope struct {
	vault *platformv1.Vault
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
	return ctrl.Result{}, nil
}
