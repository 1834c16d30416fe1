package reconcileutil

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// UnresolvableNamespace says why a reference into the resource namespace ns of a workspace cannot
// be resolved, or "" when it can. Only `default` (or omitted) maps to the workspace's own
// namespace; where a Pack's `publisher.name` namespace lives is not built yet, so such a
// reference is reported rather than guessed.
func UnresolvableNamespace(ns platformv1.ResourceNamespace) string {
	if ns == "" || ns == platformv1.DefaultResourceNamespace {
		return ""
	}
	return fmt.Sprintf("resources of namespace %s cannot be resolved yet; use the default namespace", ns)
}

// SetReady sets the Ready condition of status for generation.
func SetReady(status *platformv1.ResourceStatus, generation int64, ready bool, reason, message string) {
	condition := metav1.Condition{
		Type:               platformv1.ReadyCondition,
		Status:             metav1.ConditionFalse,
		Reason:             reason,
		Message:            oneLine(message),
		ObservedGeneration: generation,
	}
	if ready {
		condition.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, condition)
}
