package entry

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// setPublishedReadyCondition reports whether a submission can start now, target by target
// (resolvedTarget, then continuationTarget): the version is published (FlowVersionNotFound), its
// Flow exists (FlowNotFound) and is enabled (FlowDisabled) and the version is Ready (its own
// reason). targetState says the same in one word: Executable, Disabled or Unavailable.
func setPublishedReadyCondition(s *publishedScope) {
	status := &s.entry.Status
	for _, t := range s.targets {
		state, reason, message := targetProblem(t)
		if state == "" {
			continue
		}
		status.TargetState = state
		reconcileutil.SetReady(&status.ResourceStatus, s.entry.Generation, false, reason, t.path+": "+message)
		return
	}
	status.TargetState = platformv1.TargetExecutable
	ref := s.entry.Definition.ResolvedTarget
	reconcileutil.SetReady(&status.ResourceStatus, s.entry.Generation, true, platformv1.ResolvedReason,
		fmt.Sprintf("submits to version %s of Flow %q, which is executable", ref.Version, ref.Name))
}

// targetProblem says why a pinned version cannot run; an empty state when it can.
func targetProblem(t pinnedTarget) (platformv1.PublishedTargetState, string, string) {
	switch {
	case t.unresolvable != "":
		return platformv1.TargetUnavailable, platformv1.FlowVersionNotFoundReason, t.unresolvable
	case t.version == nil:
		return platformv1.TargetUnavailable, platformv1.FlowVersionNotFoundReason,
			fmt.Sprintf("version %s of Flow %q is not published", t.ref.Version, t.ref.Name)
	case t.flow == nil:
		return platformv1.TargetUnavailable, platformv1.FlowNotFoundReason, fmt.Sprintf("Flow %q not found", t.ref.Name)
	case t.flow.Definition.Enabled != nil && !*t.flow.Definition.Enabled:
		return platformv1.TargetDisabled, platformv1.FlowDisabledReason, fmt.Sprintf("Flow %q is disabled", t.ref.Name)
	}
	if problem := reconcileutil.NotReady(t.version.Status.Conditions); problem != "" {
		ready := meta.FindStatusCondition(t.version.Status.Conditions, platformv1.ReadyCondition)
		return platformv1.TargetUnavailable, ready.Reason, fmt.Sprintf("FlowVersion %q %s", t.version.Name, problem)
	}
	return "", "", ""
}
