package tool

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

// providerIndex is a field index of Tools on the name of their ToolProvider.
const providerIndex = "definition.provider.name"

// +kubebuilder:rbac:groups=platform.dev,resources=tools,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=tools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=toolproviders,verbs=get;list;watch

// Reconciler reports whether each Tool's provider exists and whether the Tool is enabled. It owns
// nothing outside the Tool's status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("tool reconciler: Client and Recorder are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &platformv1.Tool{}, providerIndex, func(obj client.Object) []string {
		return []string{string(obj.(*platformv1.Tool).Definition.Provider.Name)}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Tool{}).
		Watches(&platformv1.ToolProvider{}, handler.EnqueueRequestsFromMapFunc(r.toolsOfProvider)).
		Complete(r)
}

// scope is what one reconcile of a Tool found; setReadyCondition turns it into the status.
type scope struct {
	tool *platformv1.Tool
	// providerFound says whether the ToolProvider exists.
	providerFound bool
}

// Reconcile finds the tool's provider and writes the status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	tool := &platformv1.Tool{}
	if err := r.Client.Get(ctx, req.NamespacedName, tool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := tool.DeepCopy()
	s := &scope{tool: tool}
	defer func() {
		if reterr == nil {
			setReadyCondition(s)
			reconcileutil.Observed(&tool.Status.ResourceStatus, tool.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, tool,
			base.Status.Conditions, tool.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileProvider)
}

// reconcileProvider finds the ToolProvider of the tool.
func (r *Reconciler) reconcileProvider(ctx context.Context, s *scope) (ctrl.Result, error) {
	key := client.ObjectKey{Namespace: s.tool.Namespace, Name: string(s.tool.Definition.Provider.Name)}
	err := r.Client.Get(ctx, key, &platformv1.ToolProvider{})
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	s.providerFound = err == nil
	return ctrl.Result{}, nil
}

// toolsOfProvider maps a ToolProvider to its Tools.
func (r *Reconciler) toolsOfProvider(ctx context.Context, obj client.Object) []reconcile.Request {
	tools := &platformv1.ToolList{}
	if err := r.Client.List(ctx, tools, client.InNamespace(obj.GetNamespace()), client.MatchingFields{providerIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing tools of a provider", "provider", obj.GetName())
		return nil
	}
	return reconcileutil.Requests(tools)
}
