package trigger

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

var schedulePath = field.NewPath("definition", "source", "schedule")

// evaluate checks the time zone and the expression of the schedule and returns the first fire
// time after now: for an interval, counted in whole periods from anchor (the Trigger's creation;
// its last enablement is not recorded yet); for a once schedule, the instant itself while it lies
// ahead (zero once past).
func evaluate(def *platformv1.TriggerDefinition, anchor, now time.Time) (time.Time, field.ErrorList) {
	sched := def.Source.Schedule
	if sched == nil {
		return time.Time{}, field.ErrorList{field.Required(schedulePath, "a schedule source needs a schedule")}
	}
	loc, err := time.LoadLocation(sched.TimeZone)
	if err != nil || sched.TimeZone == "" || sched.TimeZone == "Local" {
		return time.Time{}, field.ErrorList{field.Invalid(schedulePath.Child("timeZone"), sched.TimeZone, "not an IANA time zone name")}
	}
	expression := schedulePath.Child("expression")
	switch sched.Type {
	case platformv1.CronSchedule:
		cron, err := parseCron(sched.Expression)
		if err != nil {
			return time.Time{}, field.ErrorList{field.Invalid(expression, sched.Expression, err.Error())}
		}
		return cron.next(now.In(loc)), nil
	case platformv1.IntervalSchedule:
		period, err := parseInterval(sched.Expression)
		if err != nil {
			return time.Time{}, field.ErrorList{field.Invalid(expression, sched.Expression, err.Error())}
		}
		if anchor.IsZero() || anchor.After(now) {
			anchor = now
		}
		return anchor.Add((now.Sub(anchor)/period + 1) * period).In(loc), nil
	case platformv1.OnceSchedule:
		at, err := parseOnce(sched.Expression, loc)
		if err != nil {
			return time.Time{}, field.ErrorList{field.Invalid(expression, sched.Expression, err.Error())}
		}
		if !at.After(now) {
			return time.Time{}, nil
		}
		return at, nil
	}
	return time.Time{}, field.ErrorList{field.NotSupported(schedulePath.Child("type"), sched.Type,
		[]string{string(platformv1.OnceSchedule), string(platformv1.IntervalSchedule), string(platformv1.CronSchedule)})}
}

// setReadyCondition reports whether the trigger's definition resolves: a valid time zone and
// expression (InvalidDefinition) and an existing target Flow (FlowNotFound, FlowVersionNotFound).
// A disabled trigger that resolves is Ready with reason Disabled and no nextFireTime. Ready says
// the definition resolves; nothing schedules it yet.
func setReadyCondition(s *scope) {
	status := &s.trigger.Status
	status.NextFireTime = nil
	if !s.next.IsZero() && len(s.invalid) == 0 {
		status.NextFireTime = &metav1.Time{Time: s.next.Truncate(time.Second)}
	}
	gen := s.trigger.Generation
	enabled := s.trigger.Definition.Enabled == nil || *s.trigger.Definition.Enabled
	switch {
	case len(s.invalid) > 0:
		reconcileutil.SetReady(&status.ResourceStatus, gen, false, platformv1.InvalidDefinitionReason, reconcileutil.FindingsMessage(s.invalid))
	case s.targetProblem != "":
		reconcileutil.SetReady(&status.ResourceStatus, gen, false, s.targetReason, s.targetProblem)
	case !enabled:
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.DisabledReason, "the schedule is valid; the trigger is disabled and does not fire")
	case s.next.IsZero():
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.ResolvedReason, "the schedule is valid and fires no more")
	default:
		sched := s.trigger.Definition.Source.Schedule
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.ResolvedReason,
			fmt.Sprintf("%s schedule %q in %s; nothing schedules it yet", sched.Type, sched.Expression, sched.TimeZone))
	}
}
