// Package reconcileutil holds what every reconciler of the platform does the same way: run its
// phase functions, patch the status once, and turn conflicts, findings and Ready transitions into
// results, messages and events.
package reconcileutil

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Phase is one step of a reconcile over a scope S (the object and what earlier phases found).
type Phase[S any] func(ctx context.Context, s S) (ctrl.Result, error)

// RunPhases runs every phase in order. Errors are aggregated; without errors the shortest
// non-zero requeue wins. A phase that needs what an earlier one failed to find checks the scope
// and does nothing.
func RunPhases[S any](ctx context.Context, s S, phases ...Phase[S]) (ctrl.Result, error) {
	var (
		res  ctrl.Result
		errs []error
	)
	for _, phase := range phases {
		r, err := phase(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res = LowestNonZeroResult(res, r)
	}
	if len(errs) > 0 {
		return ctrl.Result{}, kerrors.NewAggregate(errs)
	}
	return res, nil
}

// LowestNonZeroResult returns the result that requeues first.
func LowestNonZeroResult(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case a.RequeueAfter > 0 && (b.RequeueAfter == 0 || a.RequeueAfter < b.RequeueAfter):
		return a
	}
	return b
}

// ConflictRequeue is how soon a reconcile that hit an update conflict runs again.
const ConflictRequeue = time.Second

// PatchStatus writes obj's status when obj differs from base, the deep copy taken right after
// the read, with base's resourceVersion as precondition: a status computed from a stale read is
// never written over a newer one.
func PatchStatus(ctx context.Context, c client.Client, base, obj client.Object) error {
	if equality.Semantic.DeepEqual(base, obj) {
		return nil
	}
	return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// WriteStatus is the deferred end of a reconcile: it patches obj's status when it differs from
// base (see PatchStatus), records the Ready transition between the conditions of base and obj
// once written, and folds the write's error into the reconcile's result (see Finish).
func WriteStatus(ctx context.Context, c client.Client, recorder events.EventRecorder, base, obj client.Object,
	before, after []metav1.Condition, res ctrl.Result, reconcileErr error) (ctrl.Result, error) {
	err := PatchStatus(ctx, c, base, obj)
	if err == nil {
		RecordReadyTransition(recorder, obj,
			meta.FindStatusCondition(before, platformv1.ReadyCondition),
			meta.FindStatusCondition(after, platformv1.ReadyCondition))
	}
	return Finish(res, reconcileErr, err)
}

// Requests are the reconcile requests of the items of list.
func Requests(list client.ObjectList) []reconcile.Request {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return requests
}

// Finish folds the error of a write at the end of a reconcile into its result. An update conflict
// requeues silently: the object changed since it was read and its newer version is reconciled
// next; a conflict is never an error, a condition or an event. An object deleted meanwhile has
// nothing left to write.
func Finish(res ctrl.Result, reconcileErr, writeErr error) (ctrl.Result, error) {
	switch {
	case writeErr == nil, apierrors.IsNotFound(writeErr):
		return res, reconcileErr
	case apierrors.IsConflict(writeErr):
		if reconcileErr != nil {
			return ctrl.Result{}, reconcileErr
		}
		return LowestNonZeroResult(res, ctrl.Result{RequeueAfter: ConflictRequeue}), nil
	}
	return ctrl.Result{}, kerrors.NewAggregate([]error{reconcileErr, writeErr})
}

// IgnoreConflict is Finish for a write in the middle of a reconcile: a conflict ends the reconcile
// with a silent requeue.
func IgnoreConflict(err error) (ctrl.Result, error) {
	return Finish(ctrl.Result{}, nil, err)
}

// RecordReadyTransition records an event on obj when its Ready condition appeared or changed
// status or reason (something happened); a reconcile that changes nothing records nothing.
func RecordReadyTransition(recorder events.EventRecorder, obj runtime.Object, before, after *metav1.Condition) {
	if after == nil || (before != nil && before.Status == after.Status && before.Reason == after.Reason) {
		return
	}
	eventType := corev1.EventTypeNormal
	if after.Status != metav1.ConditionTrue {
		eventType = corev1.EventTypeWarning
	}
	recorder.Eventf(obj, nil, eventType, after.Reason, "Reconcile", "%s", after.Message)
}

// maxFindings bounds how many findings a condition message lists.
const maxFindings = 8

// FindingsMessage renders findings as one line for a condition message: each as
// `<field path>: <detail>`, separated by "; ", at most maxFindings of them.
func FindingsMessage(findings field.ErrorList) string {
	parts := make([]string, 0, min(len(findings), maxFindings)+1)
	for i, f := range findings {
		if i == maxFindings {
			parts = append(parts, fmt.Sprintf("and %d more", len(findings)-maxFindings))
			break
		}
		detail := f.Detail
		if detail == "" {
			detail = f.ErrorBody()
		}
		parts = append(parts, f.Field+": "+oneLine(detail))
	}
	return strings.Join(parts, "; ")
}

// oneLine folds runs of white space, new lines included, into single spaces: condition messages
// are one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// HasReported says whether an object with these conditions has reported Ready at all. A reconcile
// that depends on an object that has not waits for it (its first status brings another reconcile)
// rather than report a transient "not Ready".
func HasReported(conditions []metav1.Condition) bool {
	return meta.FindStatusCondition(conditions, platformv1.ReadyCondition) != nil
}

// NotReady says why an object with these conditions is not Ready, for the message of an object
// that refers to it; it returns "" when the object is Ready.
func NotReady(conditions []metav1.Condition) string {
	ready := meta.FindStatusCondition(conditions, platformv1.ReadyCondition)
	switch {
	case ready == nil:
		return "has not reported Ready yet"
	case ready.Status == metav1.ConditionTrue:
		return ""
	case ready.Message == "":
		return "is not Ready (" + ready.Reason + ")"
	}
	return "is not Ready (" + ready.Reason + "): " + ready.Message
}

// failedReasons are the Ready reasons that nothing but an edit of the object itself can clear.
var failedReasons = map[string]bool{
	platformv1.InvalidDefinitionReason: true,
	platformv1.InstallFailedReason:     true,
}

// Provisioning is the provisioning state a Ready condition stands for: Provisioned when Ready,
// Failed when the definition itself is invalid (it stays so until the object is edited), Pending
// while the object waits on something else (a reference, a value, a key).
func Provisioning(ready *metav1.Condition) platformv1.ProvisioningState {
	switch {
	case ready == nil:
		return platformv1.ProvisioningPending
	case ready.Status == metav1.ConditionTrue:
		return platformv1.ProvisioningProvisioned
	case failedReasons[ready.Reason]:
		return platformv1.ProvisioningFailed
	}
	return platformv1.ProvisioningPending
}

// Observed ends the status of a complete reconcile, after its Ready condition is set: the status
// was computed from generation, and provisioning follows Ready. Every reconciler calls it, so
// that observedGeneration and provisioning mean the same for every kind.
func Observed(status *platformv1.ResourceStatus, generation int64) {
	status.ObservedGeneration = generation
	status.Provisioning = Provisioning(meta.FindStatusCondition(status.Conditions, platformv1.ReadyCondition))
}
