package entry

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// setReadyCondition reports whether the draft's targets exist: the binding's Agent
// (AgentNotFound) or Flow (FlowNotFound, FlowVersionNotFound for a pinned version that is not
// published), then the continuation's. The first finding is the reason; the message lists all,
// each with its field path. resolvedTarget is the exact Flow version a Flow binding resolves to.
func setReadyCondition(s *scope) {
	status := &s.entry.Status
	status.ResolvedTarget = s.resolvedTarget
	if len(s.missing) > 0 {
		messages := make([]string, 0, len(s.missing))
		for _, f := range s.missing {
			messages = append(messages, f.message)
		}
		reconcileutil.SetReady(&status.ResourceStatus, s.entry.Generation, false, s.missing[0].reason, strings.Join(messages, "; "))
		return
	}
	reconcileutil.SetReady(&status.ResourceStatus, s.entry.Generation, true, platformv1.ResolvedReason, targetMessage(&s.entry.Definition))
}

func targetMessage(def *platformv1.EntryDefinition) string {
	msg := "submits to " + bindingTarget(&def.Binding)
	if def.Continuation != nil {
		msg += ", continues with " + bindingTarget(def.Continuation)
	}
	return msg
}

func bindingTarget(b *platformv1.EntryBinding) string {
	if b.Agent != nil {
		return fmt.Sprintf("Agent %q", b.Agent.Name)
	}
	if b.Flow.Version != "" {
		return fmt.Sprintf("version %s of Flow %q", b.Flow.Version, b.Flow.Name)
	}
	return fmt.Sprintf("the active version of Flow %q", b.Flow.Name)
}

// setPublishedCondition reports whether the draft's current generation is published: True once
// it is, False with PublicationFailed when an automatic publication failed (the message has the
// field paths), and False with DraftNotPublished while a Manual draft waits for a publish request.
func setPublishedCondition(s *scope) {
	status := &s.entry.Status
	condition := metav1.Condition{Type: platformv1.PublishedCondition, Status: metav1.ConditionFalse, ObservedGeneration: s.entry.Generation}
	switch {
	case status.PublishedGeneration == s.entry.Generation:
		condition.Status, condition.Reason = metav1.ConditionTrue, platformv1.PublishedReason
		condition.Message = fmt.Sprintf("generation %d is published", s.entry.Generation)
	case s.publicationFailure != "":
		condition.Reason, condition.Message = platformv1.PublicationFailedReason, s.publicationFailure
	case status.PublishedGeneration == 0:
		condition.Reason, condition.Message = platformv1.DraftNotPublishedReason, "the draft has never been published"
	default:
		condition.Reason = platformv1.DraftNotPublishedReason
		condition.Message = fmt.Sprintf("generation %d is published; the draft's changes since are not", status.PublishedGeneration)
	}
	meta.SetStatusCondition(&status.Conditions, condition)
}
