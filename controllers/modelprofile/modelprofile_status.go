package modelprofile

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// updateStatus writes what a complete reconcile observed.
func updateStatus(s *scope) {
	setReferences(s)
	setReadyCondition(s)
	reconcileutil.Observed(&s.profile.Status.ResourceStatus, s.profile.Generation)
}

// setReferences reports what the profile's references resolve to: the provider's type while the
// provider exists, and the discovered Model while discovery lists it.
func setReferences(s *scope) {
	status := &s.profile.Status
	status.ProviderType = ""
	if s.provider != nil {
		status.ProviderType = s.provider.Definition.Type
	}
	status.Model = nil
	if s.model != nil {
		status.Model = &platformv1.LocalObjectReference{Name: platformv1.ResourceName(s.model.Name)}
	}
}

// setReadyCondition reports whether agents can call models through the profile: its provider
// exists (ModelProviderNotFound) and is Ready (ProviderUnavailable).
func setReadyCondition(s *scope) {
	provider := s.profile.Definition.Provider.Name
	condition := metav1.Condition{
		Type:               platformv1.ReadyCondition,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: s.profile.Generation,
	}
	switch {
	case s.provider == nil:
		condition.Reason = platformv1.ModelProviderNotFoundReason
		condition.Message = fmt.Sprintf("ModelProvider %q not found", provider)
	case reconcileutil.NotReady(s.provider.Status.Conditions) != "":
		condition.Reason = platformv1.ProviderUnavailableReason
		condition.Message = fmt.Sprintf("ModelProvider %q %s", provider, reconcileutil.NotReady(s.provider.Status.Conditions))
	default:
		condition.Status = metav1.ConditionTrue
		condition.Reason = platformv1.ResolvedReason
		model := "the default model"
		if id := s.profile.Definition.ModelID; id != "" {
			model = "model " + id
		}
		condition.Message = fmt.Sprintf("%s of ModelProvider %q (%s)", model, provider, s.provider.Definition.Type)
	}
	meta.SetStatusCondition(&s.profile.Status.Conditions, condition)
}
