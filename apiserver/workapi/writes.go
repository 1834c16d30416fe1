package workapi

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	workv1 "platform.dev/platform/apis/work/v1"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
)

// RunControl is what the writes of the group do to runs: the Work store's operations, which the
// service API uses too.
type RunControl interface {
	Pause(ctx context.Context, workspaceID, runID string) (work.FlowRun, error)
	Resume(ctx context.Context, workspaceID, runID string) (work.FlowRun, error)
	Cancel(ctx context.Context, workspaceID, runID, reason string) (work.FlowRun, error)
	Delete(ctx context.Context, workspaceID, runID string, version int64) error
	Run(ctx context.Context, workspaceID, id string) (work.FlowRun, error)
}

// The writes the spec allows on the Work plane: deleting a terminal Task or run, and pausing,
// resuming and cancelling a Task. Nothing else is writable: create, update and patch of these
// resources are not served (405 Method Not Allowed).

// checkPreconditions applies a delete's preconditions to an object at row version current and
// returns the version the delete must find (the row's compare-and-swap, as the service API's
// If-Match). A resourceVersion precondition compares the version part of the object's
// resourceVersion (see setRV) with the row's: the row keeps its version for as long as it lives,
// so the check never depends on the outbox, which is pruned.
func (a *API) checkPreconditions(res *resource, name string, current int64, opts *metav1.DeleteOptions) (int64, error) {
	if opts == nil || opts.Preconditions == nil {
		return current, nil
	}
	p := opts.Preconditions
	if p.UID != nil && string(*p.UID) != name {
		return 0, apierrors.NewConflict(workv1.Resource(res.plural), name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, name))
	}
	if p.ResourceVersion == nil {
		return current, nil
	}
	_, version, ok := parseResourceVersion(*p.ResourceVersion)
	if !ok || version == 0 {
		return 0, apierrors.NewConflict(workv1.Resource(res.plural), name, fmt.Errorf(
			"precondition failed: resourceVersion %q is not an object's (a list's or a bookmark's position names no version): read the object again", *p.ResourceVersion))
	}
	if version != current {
		return 0, apierrors.NewConflict(workv1.Resource(res.plural), name, fmt.Errorf(
			"precondition failed: the object changed since resourceVersion %s (its version is %d, not %d): read it again", *p.ResourceVersion, current, version))
	}
	return version, nil
}

// taskREST adds the deletion of a terminal Task.
type taskREST struct{ *watchableREST }

var _ rest.GracefulDeleter = (*taskREST)(nil)

// Delete deletes a completed, failed or cancelled Task with its runs, history, questions, Results,
// artifacts and notifications, as the service API does; an active Task is protected (409).
func (r *taskREST) Delete(ctx context.Context, name string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	t := obj.(*workv1.Task)
	_, ws, _, err := r.api.workspace(ctx)
	if err != nil {
		return nil, false, err
	}
	version, err := r.api.checkPreconditions(r.resource, name, t.Status.Version, opts)
	if err != nil {
		return nil, false, err
	}
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, false, err
		}
	}
	if !workplace.TaskTerminal(t.Status.State) {
		return nil, false, apierrors.NewConflict(workv1.Resource("tasks"), name,
			fmt.Errorf("a %s Task is protected: only a completed, failed or cancelled Task can be deleted (cancel it first)", t.Status.State))
	}
	if isDryRun(opts) {
		return t, true, nil
	}
	if r.api.Workplace == nil {
		return nil, false, apierrors.NewMethodNotSupported(workv1.Resource("tasks"), "delete")
	}
	err = r.api.Workplace.DeleteTask(ctx, ws.ID, name, version)
	switch {
	case errors.Is(err, workplace.ErrStale):
		return nil, false, apierrors.NewConflict(workv1.Resource("tasks"), name, errors.New("the Task changed meanwhile: read it again"))
	case errors.Is(err, workplace.ErrProtected):
		return nil, false, apierrors.NewConflict(workv1.Resource("tasks"), name, err)
	case errors.Is(err, workplace.ErrNotFound):
		return nil, false, apierrors.NewNotFound(workv1.Resource("tasks"), name)
	case err != nil:
		return nil, false, apierrors.NewInternalError(err)
	}
	return t, true, nil
}

func isDryRun(opts *metav1.DeleteOptions) bool {
	return opts != nil && len(opts.DryRun) > 0 && opts.DryRun[0] == metav1.DryRunAll
}

// flowRunREST adds the deletion of a terminal run.
type flowRunREST struct{ *watchableREST }

var _ rest.GracefulDeleter = (*flowRunREST)(nil)

// Delete deletes a completed, failed or cancelled run; others are protected (409).
func (r *flowRunREST) Delete(ctx context.Context, name string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	f := obj.(*workv1.FlowRun)
	_, ws, _, err := r.api.workspace(ctx)
	if err != nil {
		return nil, false, err
	}
	version, err := r.api.checkPreconditions(r.resource, name, f.Status.Version, opts)
	if err != nil {
		return nil, false, err
	}
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, false, err
		}
	}
	if !work.Terminal(f.Status.State) {
		return nil, false, apierrors.NewConflict(workv1.Resource("flowruns"), name,
			fmt.Errorf("a %s run is protected: only a completed, failed or cancelled run can be deleted", f.Status.State))
	}
	if isDryRun(opts) {
		return f, true, nil
	}
	if r.api.Runs == nil {
		return nil, false, apierrors.NewMethodNotSupported(workv1.Resource("flowruns"), "delete")
	}
	err = r.api.Runs.Delete(ctx, ws.ID, name, version)
	switch {
	case errors.Is(err, work.ErrStale):
		return nil, false, apierrors.NewConflict(workv1.Resource("flowruns"), name, errors.New("the run changed meanwhile: read it again"))
	case errors.Is(err, work.ErrNotFound):
		return nil, false, apierrors.NewNotFound(workv1.Resource("flowruns"), name)
	case err != nil:
		return nil, false, apierrors.NewConflict(workv1.Resource("flowruns"), name, err)
	}
	return f, true, nil
}

// taskOperations are the subresources that act on a Task. They are subresources that take a POST
// (kubectl create --raw, or a client's SubResource("cancel").Create), like pods/eviction, rather
// than annotations a client patches: a Task here is a view of SQL rows with no desired state to
// record, an operation is refused at once when it does not apply (409, as in the service API),
// and the authorizer tells it from a read (runs/execute, not runs/read).
var taskOperations = []string{"pause", "resume", "cancel"}

// taskOperationREST serves tasks/<op>: POST a Task (its name is enough) to pause, resume or
// cancel it; the answer is the Task afterwards.
type taskOperationREST struct {
	api *API
	op  string
}

var _ rest.NamedCreater = (*taskOperationREST)(nil)

func (r *taskOperationREST) New() runtime.Object { return &workv1.Task{} }
func (r *taskOperationREST) Destroy()            {}

func (r *taskOperationREST) Create(ctx context.Context, name string, _ runtime.Object, _ rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	tasks := &readREST{resource: tasksResource, api: r.api}
	obj, err := tasks.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if opts != nil && len(opts.DryRun) > 0 {
		return obj, nil
	}
	if r.api.Runs == nil {
		return nil, apierrors.NewMethodNotSupported(workv1.Resource("tasks/"+r.op), "create")
	}
	_, ws, _, err := r.api.workspace(ctx)
	if err != nil {
		return nil, err
	}
	var runID string
	if err := r.api.reader.queryRow(ctx, `SELECT current_run_id FROM work_tasks WHERE id = ? AND workspace_id = ?`, name, ws.ID).Scan(&runID); err != nil {
		return nil, apierrors.NewNotFound(workv1.Resource("tasks"), name)
	}
	switch r.op {
	case "pause":
		_, err = r.api.Runs.Pause(ctx, ws.ID, runID)
	case "resume":
		_, err = r.api.Runs.Resume(ctx, ws.ID, runID)
		if err == nil && r.api.Wake != nil {
			r.api.Wake()
		}
	case "cancel":
		_, err = r.api.Runs.Cancel(ctx, ws.ID, runID, "cancelled by a person")
	}
	switch {
	case errors.Is(err, work.ErrNotFound):
		return nil, apierrors.NewNotFound(workv1.Resource("tasks"), name)
	case err != nil:
		return nil, apierrors.NewConflict(workv1.Resource("tasks"), name, fmt.Errorf("%s: %w", r.op, err))
	}
	return tasks.Get(ctx, name, &metav1.GetOptions{})
}
