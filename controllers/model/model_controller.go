package model

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

// providerIndex is a field index of Models on the name of their ModelProvider.
const providerIndex = "definition.provider.name"

// +kubebuilder:rbac:groups=platform.dev,resources=models,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=models/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=modelproviders,verbs=get;list;watch

// Reconciler reports whether each Model's provider exists. It owns nothing outside the Model's
// status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler, its field index and its watches with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("model reconciler: Client and Recorder are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &platformv1.Model{}, providerIndex, func(obj client.Object) []string {
		return []string{string(obj.(*platformv1.Model).Definition.Provider.Name)}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Model{}).
		Watches(&platformv1.ModelProvider{}, handler.EnqueueRequestsFromMapFunc(r.modelsOfProvider)).
		Complete(r)
}

// scope is what one reconcile found; setReadyCondition turns it into the status.
type scope struct {
	model *platformv1.Model
	// providerFound says whether the ModelProvider exists.
	providerFound bool
}

// Reconcile finds the model's provider and writes the status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	model := &platformv1.Model{}
	if err := r.Client.Get(ctx, req.NamespacedName, model); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !model.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := model.DeepCopy()
	s := &scope{model: model}
	defer func() {
		if reterr == nil {
			setReadyCondition(s)
			reconcileutil.Observed(&model.Status.ResourceStatus, model.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, model,
			base.Status.Conditions, model.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileProvider)
}

// reconcileProvider finds the ModelProvider of the model.
func (r *Reconciler) reconcileProvider(ctx context.Context, s *scope) (ctrl.Result, error) {
	key := client.ObjectKey{Namespace: s.model.Namespace, Name: string(s.model.Definition.Provider.Name)}
	err := r.Client.Get(ctx, key, &platformv1.ModelProvider{})
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	s.providerFound = err == nil
	return ctrl.Result{}, nil
}

// modelsOfProvider maps a ModelProvider to its Models.
func (r *Reconciler) modelsOfProvider(ctx context.Context, obj client.Object) []reconcile.Request {
	models := &platformv1.ModelList{}
	if err := r.Client.List(ctx, models, client.InNamespace(obj.GetNamespace()), client.MatchingFields{providerIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing models of a provider", "provider", obj.GetName())
		return nil
	}
	return reconcileutil.Requests(models)
}
