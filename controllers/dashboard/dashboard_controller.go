package dashboard

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

// +kubebuilder:rbac:groups=platform.dev,resources=dashboards,verbs=get;list;watch
// +kubebuilder:rbac:groups=platform.dev,resources=dashboards/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=publishedentries,verbs=get;list;watch

// Reconciler reports whether each Dashboard's Entries are published and whether it is the one
// default of its workspace. It owns nothing outside the status, so it needs no finalizer.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler and its watches with mgr: a PublishedEntry or
// another Dashboard of the workspace (its isDefault) can change any Dashboard's status.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("dashboard reconciler: Client and Recorder are required")
	}
	toDashboards := handler.EnqueueRequestsFromMapFunc(r.dashboardsOfWorkspace)
	return ctrl.NewControllerManagedBy(mgr).
		For(&platformv1.Dashboard{}).
		Watches(&platformv1.Dashboard{}, toDashboards).
		Watches(&platformv1.PublishedEntry{}, toDashboards).
		Complete(r)
}

// scope is what one reconcile found; setReadyCondition turns it into the status.
type scope struct {
	dashboard *platformv1.Dashboard
	// missing lists, by index, the entry references that do not resolve, with why.
	missing []missingEntry
	// defaultDashboard is the name of the older default Dashboard of the workspace when this one
	// is a default too; empty otherwise.
	defaultDashboard string
}

type missingEntry struct {
	index   int
	problem string
}

// Reconcile resolves the entries and the default and writes the status once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	dashboard := &platformv1.Dashboard{}
	if err := r.Client.Get(ctx, req.NamespacedName, dashboard); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !dashboard.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := dashboard.DeepCopy()
	s := &scope{dashboard: dashboard}
	defer func() {
		if reterr == nil {
			setReadyCondition(s)
			reconcileutil.Observed(&dashboard.Status.ResourceStatus, dashboard.Generation)
		}
		res, reterr = reconcileutil.WriteStatus(ctx, r.Client, r.Recorder, base, dashboard,
			base.Status.Conditions, dashboard.Status.Conditions, res, reterr)
	}()
	return reconcileutil.RunPhases(ctx, s, r.reconcileEntries, r.reconcileDefault)
}

// reconcileEntries finds the PublishedEntry of every reference: a Dashboard shows published
// Entries, never drafts.
func (r *Reconciler) reconcileEntries(ctx context.Context, s *scope) (ctrl.Result, error) {
	for i, ref := range s.dashboard.Definition.Entries {
		ns, problem, err := reconcileutil.ResolveNamespace(ctx, r.Client, s.dashboard.Namespace, ref.Namespace)
		if err != nil {
			return ctrl.Result{}, err
		}
		if problem != "" {
			s.missing = append(s.missing, missingEntry{i, problem})
			continue
		}
		err = r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(ref.Name)}, &platformv1.PublishedEntry{})
		switch {
		case client.IgnoreNotFound(err) != nil:
			return ctrl.Result{}, err
		case err != nil:
			s.missing = append(s.missing, missingEntry{i, "Entry " + string(ref.Name) + " is not published"})
		}
	}
	return ctrl.Result{}, nil
}

// reconcileDefault finds an older default Dashboard when this one is a default.
func (r *Reconciler) reconcileDefault(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.dashboard.Definition.IsDefault {
		return ctrl.Result{}, nil
	}
	dashboards := &platformv1.DashboardList{}
	if err := r.Client.List(ctx, dashboards, client.InNamespace(s.dashboard.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	s.defaultDashboard = olderDefault(s.dashboard, dashboards.Items)
	return ctrl.Result{}, nil
}

// dashboardsOfWorkspace maps an object to the Dashboards of its workspace.
func (r *Reconciler) dashboardsOfWorkspace(ctx context.Context, obj client.Object) []reconcile.Request {
	requests, err := reconcileutil.WorkspaceRequests(ctx, r.Client, obj.GetNamespace(), func() client.ObjectList { return &platformv1.DashboardList{} })
	if err != nil {
		log.FromContext(ctx).Error(err, "listing dashboards of a workspace")
	}
	return requests
}
