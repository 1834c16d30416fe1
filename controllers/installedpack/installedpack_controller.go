package installedpack

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// +kubebuilder:rbac:groups=platform.dev,resources=installedpacks,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=installedpacks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=modelproviders;runtimeprofiles;modelprofiles;agents;flows;entries,verbs=get;list;watch

// Reconciler reports whether each installation's managed resources exist. It owns nothing
// outside the status (the resources belong to the installation, which the service API makes), so
// it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler and its watches with mgr: a change of any kind a
// Pack may contain reconciles the installations of its workspace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("installedpack reconciler: Client and Recorder are required")
	}
	b := ctrl.NewControllerManagedBy(mgr).For(&platformv1.InstalledPack{})
	toPacks := handler.EnqueueRequestsFromMapFunc(r.packsOfWorkspace)
	for _, kind := range []platformv1.PackResourceKind{"ModelProvider", "RuntimeProfile", "ModelProfile", "Agent", "Flow", "Entry"} {
		b = b.Watches(newObject(kind), toPacks)
	}
	return b.Complete(r)
}

// newObject is an empty object of a kind a Pack may contain; nil for another kind.
func newObject(kind platformv1.PackResourceKind) client.Object {
	switch kind {
	case "ModelProvider":
		return &platformv1.ModelProvider{}
	case "RuntimeProfile":
		return &platformv1.RuntimeProfile{}
	case "ModelProfile":
		return &platformv1.ModelProfile{}
	case "Agent":
		return &platformv1.Agent{}
	case "Flow":
		return &platformv1.Flow{}
	case "Entry":
		return &platformv1.Entry{}
	}
	return nil
}

// scope is what one reconcile found; setReadyCondition turns it into the status.
type scope struct {
	pack *platformv1.InstalledPack
	// missing lists the managed resources that do not exist, as "status.resources[i]: ..." lines.
	missing []string
}

// Reconcile finds the managed resources and writes the status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	pack := &platformv1.InstalledPack{}
	if err := r.Client.Get(ctx, req.NamespacedName, pack); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pack.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := pack.DeepCopy()
	s := &scope{pack: pack}
	defer func() {
		if reterr == nil {
			setReadyCondition(s)
			reconcileutil.Observed(&pack.Status.ResourceStatus, pack.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, pack,
			base.Status.Conditions, pack.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileResources)
}

// reconcileResources finds every managed resource. The installation namespace `publisher.name`
// has no place of its own in the workspace yet, so resources are looked up by name in the
// workspace's namespace, where the installer writes them today.
func (r *Reconciler) reconcileResources(ctx context.Context, s *scope) (ctrl.Result, error) {
	for i, res := range s.pack.Status.Resources {
		obj := newObject(res.Kind)
		if obj == nil {
			s.missing = append(s.missing, fmt.Sprintf("status.resources[%d]: a Pack cannot contain a %s", i, res.Kind))
			continue
		}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.pack.Namespace, Name: string(res.Name)}, obj)
		switch {
		case client.IgnoreNotFound(err) != nil:
			return ctrl.Result{}, err
		case err != nil:
			s.missing = append(s.missing, fmt.Sprintf("status.resources[%d]: %s %q not found", i, res.Kind, res.Name))
		}
	}
	return ctrl.Result{}, nil
}

// packsOfWorkspace maps an object to the installations of its workspace.
func (r *Reconciler) packsOfWorkspace(ctx context.Context, obj client.Object) []reconcile.Request {
	packs := &platformv1.InstalledPackList{}
	if err := r.Client.List(ctx, packs, client.InNamespace(obj.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "listing installed packs of a workspace")
		return nil
	}
	return reconcileutil.Requests(packs)
}
