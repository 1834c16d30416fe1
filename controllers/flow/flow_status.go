package flow

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// updateStatus writes what a complete reconcile observed.
func updateStatus(s *scope) error {
	s.flow.Status.DefinitionDigest = s.flow.Definition.Digest()
	setReadyCondition(s)
	setPublishedCondition(s)
	reconcileutil.Observed(&s.flow.Status.ResourceStatus, s.flow.Generation)
	return nil
}

// setReadyCondition reports whether the flow can run: a valid definition (InvalidDefinition,
// every finding with its field path) whose Agents exist (AgentNotFound).
func setReadyCondition(s *scope) {
	def := &s.flow.Definition
	condition := metav1.Condition{
		Type:               platformv1.ReadyCondition,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: s.flow.Generation,
	}
	switch {
	case len(s.invalid) > 0:
		condition.Reason = platformv1.InvalidDefinitionReason
		condition.Message = reconcileutil.FindingsMessage(s.invalid)
	case len(s.missingAgents) > 0:
		condition.Reason = platformv1.AgentNotFoundReason
		condition.Message = reconcileutil.FindingsMessage(s.missingAgents)
	default:
		condition.Status = metav1.ConditionTrue
		condition.Reason = platformv1.ResolvedReason
		if def.FlowKind == platformv1.DirectFlow {
			condition.Message = fmt.Sprintf("Direct flow to Agent %q", def.Target.ID)
		} else {
			condition.Message = fmt.Sprintf("Orchestration flow of %d steps", len(def.Steps))
		}
	}
	meta.SetStatusCondition(&s.flow.Status.Conditions, condition)
}

// setPublishedCondition reports, for a Flow whose publication is Automatic, whether the version
// its draft names is published and active; a Manual Flow has no such condition.
func setPublishedCondition(s *scope) {
	def := &s.flow.Definition
	if def.Publication != platformv1.AutomaticPublication {
		meta.RemoveStatusCondition(&s.flow.Status.Conditions, platformv1.PublishedCondition)
		return
	}
	condition := metav1.Condition{Type: platformv1.PublishedCondition, Status: metav1.ConditionFalse, ObservedGeneration: s.flow.Generation,
		Reason: platformv1.PublicationFailedReason}
	switch {
	case s.publicationFailure != "":
		condition.Message = s.publicationFailure
	case def.Version == "":
		condition.Message = "definition.version: an automatically published Flow names the version to publish"
	case len(s.invalid) > 0 || len(s.missingAgents) > 0:
		condition.Reason, condition.Message = platformv1.DraftNotPublishedReason, "the draft is published once it is Ready"
	case s.flow.Status.ActiveVersion == def.Version:
		condition.Status, condition.Reason = metav1.ConditionTrue, platformv1.PublishedReason
		condition.Message = fmt.Sprintf("version %s is published and active", def.Version)
	default:
		condition.Reason, condition.Message = platformv1.DraftNotPublishedReason, fmt.Sprintf("version %s is being published", def.Version)
	}
	meta.SetStatusCondition(&s.flow.Status.Conditions, condition)
}
