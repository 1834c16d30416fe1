package trigger

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// setStatus writes what the reconcile found: the next instant, the latest occurrence, the count
// of consecutive failures and the Ready condition. Ready is False for a definition that does not
// resolve (InvalidDefinition, FlowNotFound, FlowVersionNotFound) and for a paused Trigger
// (Paused); a disabled Trigger that resolves is Ready with reason Disabled; otherwise Ready says
// whether the schedule is registered.
func setStatus(s *scope) {
	status := &s.trigger.Status
	status.NextFireTime = nil
	if !s.next.IsZero() && len(s.invalid) == 0 {
		status.NextFireTime = &metav1.Time{Time: s.next.Truncate(time.Second)}
	}
	if s.last != nil {
		status.LastOccurrence = s.last.Status()
	}
	status.ConsecutiveFailures = int32(s.failures)
	gen := s.trigger.Generation
	enabled := s.trigger.Definition.Enabled == nil || *s.trigger.Definition.Enabled
	sched := s.trigger.Definition.Source.Schedule
	switch {
	case len(s.invalid) > 0:
		reconcileutil.SetReady(&status.ResourceStatus, gen, false, platformv1.InvalidDefinitionReason, reconcileutil.FindingsMessage(s.invalid))
	case s.targetProblem != "":
		reconcileutil.SetReady(&status.ResourceStatus, gen, false, s.targetReason, s.targetProblem)
	case !enabled:
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.DisabledReason, "the schedule is valid; the trigger is disabled and does not fire")
	case s.paused:
		reconcileutil.SetReady(&status.ResourceStatus, gen, false, platformv1.PausedReason, fmt.Sprintf(
			"paused after %d consecutive failed occurrences (pauseAfterFailures); enable it again (POST .../enable) or change its definition to resume",
			s.compiled.Policies.PauseAfterFailures))
	case s.next.IsZero():
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.ResolvedReason, "the schedule is valid and fires no more")
	case !s.scheduled:
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.ResolvedReason,
			fmt.Sprintf("%s schedule %q in %s is valid; this controller manager has no Work store, so nothing fires", sched.Type, sched.Expression, sched.TimeZone))
	default:
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.ResolvedReason,
			fmt.Sprintf("%s schedule %q in %s is registered", sched.Type, sched.Expression, sched.TimeZone))
	}
}
