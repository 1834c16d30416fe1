package agent

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// updateStatus writes what a complete reconcile observed.
func updateStatus(s *scope) {
	setReadyCondition(s)
	reconcileutil.Observed(&s.agent.Status.ResourceStatus, s.agent.Generation)
}

// setReadyCondition reports whether the agent can be invoked, checking the chain in order:
// a selected profile, the profile, its provider, the provider's readiness, the profile's
// readiness, then the tools. The first break is the reason; resolvedModel is set only when Ready.
//
// The reconcile waits for a profile or provider that has not reported Ready yet rather than
// report it (such one would count as not Ready here). One that was Ready at an older generation
// still counts as Ready until its own reconcile says otherwise, so that editing a provider does
// not make every agent flap.
func setReadyCondition(s *scope) {
	agent := s.agent
	ref := agent.Definition.ModelProfile
	var (
		status  = metav1.ConditionFalse
		reason  string
		message string
	)
	switch {
	case ref == nil:
		reason, message = platformv1.ModelProfileNotSetReason, "definition.modelProfile selects no ModelProfile, so the agent has no model to call"
	case s.profile == nil && ref.Name != "" && ref.Namespace != "":
		reason, message = platformv1.ModelProfileNotFoundReason, fmt.Sprintf("ModelProfile %q not found in resource namespace %s", ref.Name, ref.Namespace)
	case s.profile == nil && ref.Name != "":
		reason, message = platformv1.ModelProfileNotFoundReason, fmt.Sprintf("ModelProfile %q not found", ref.Name)
	case s.profile == nil:
		reason, message = platformv1.ModelProfileNotFoundReason, fmt.Sprintf("no ModelProfile has resourceId %q", ref.ResourceID)
	case s.provider == nil:
		reason, message = platformv1.ModelProviderNotFoundReason, fmt.Sprintf("ModelProvider %q of ModelProfile %q not found",
			s.profile.Definition.Provider.Name, s.profile.Name)
	case reconcileutil.NotReady(s.provider.Status.Conditions) != "":
		reason, message = platformv1.ProviderUnavailableReason, fmt.Sprintf("ModelProvider %q %s",
			s.provider.Name, reconcileutil.NotReady(s.provider.Status.Conditions))
	case reconcileutil.NotReady(s.profile.Status.Conditions) != "":
		reason, message = platformv1.ModelProfileNotReadyReason, fmt.Sprintf("ModelProfile %q %s",
			s.profile.Name, reconcileutil.NotReady(s.profile.Status.Conditions))
	case len(s.missingTools) > 0:
		reason, message = platformv1.ToolNotFoundReason, "tools not found: "+strings.Join(s.missingTools, ", ")
	case len(s.disabledTools) > 0:
		reason, message = platformv1.ToolDisabledReason, "tools not enabled: "+strings.Join(s.disabledTools, ", ")
	default:
		status, reason = metav1.ConditionTrue, platformv1.ResolvedReason
		message = resolvedMessage(s)
	}
	meta.SetStatusCondition(&agent.Status.Conditions, metav1.Condition{
		Type:               platformv1.AgentReadyCondition,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: agent.Generation,
	})
	agent.Status.ResolvedModel = nil
	if status == metav1.ConditionTrue {
		agent.Status.ResolvedModel = &platformv1.ResolvedModel{
			ModelProfile: platformv1.ResourceName(s.profile.Name),
			Provider:     platformv1.ResourceName(s.provider.Name),
			ProviderType: s.provider.Definition.Type,
			Model:        s.profile.Definition.ModelID,
		}
	}
}

func resolvedMessage(s *scope) string {
	model := "the default model"
	if id := s.profile.Definition.ModelID; id != "" {
		model = "model " + id
	}
	return fmt.Sprintf("calls %s of ModelProvider %q (%s) through ModelProfile %q",
		model, s.provider.Name, s.provider.Definition.Type, s.profile.Name)
}
