package runtimeprofile

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// updateStatus writes what a complete reconcile observed.
func updateStatus(s *scope) {
	setReadyCondition(s)
	reconcileutil.Observed(&s.profile.Status.ResourceStatus, s.profile.Generation)
}

// runtimeOf is the runtime a definition configures; omitted means the built-in one.
func runtimeOf(def *platformv1.RuntimeProfileDefinition) string {
	if def.Runtime == "" {
		return platformv1.BuiltinRuntime
	}
	return def.Runtime
}

// validateDefinition checks that the profile configures a runtime the platform has: the
// built-in `maf` runtime is the only one.
func validateDefinition(def *platformv1.RuntimeProfileDefinition, path *field.Path) field.ErrorList {
	if runtimeOf(def) != platformv1.BuiltinRuntime {
		err := field.NotSupported(path.Child("runtime"), def.Runtime, []string{platformv1.BuiltinRuntime})
		err.Detail = "the platform has no runtime " + def.Runtime + "; " + platformv1.BuiltinRuntime + " is the built-in one"
		return field.ErrorList{err}
	}
	return nil
}

// setReadyCondition reports whether agents can run with the profile (InvalidDefinition when it
// names a runtime the platform does not have).
func setReadyCondition(s *scope) {
	condition := metav1.Condition{
		Type:               platformv1.ReadyCondition,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: s.profile.Generation,
	}
	if len(s.invalid) > 0 {
		condition.Reason = platformv1.InvalidDefinitionReason
		condition.Message = reconcileutil.FindingsMessage(s.invalid)
	} else {
		condition.Status = metav1.ConditionTrue
		condition.Reason = platformv1.ResolvedReason
		condition.Message = "configures the " + runtimeOf(&s.profile.Definition) + " runtime"
	}
	meta.SetStatusCondition(&s.profile.Status.Conditions, condition)
}
