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
