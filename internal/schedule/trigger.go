package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Bounds of the policy durations.
const (
	MaxCatchUpWindow = 7 * 24 * time.Hour
	MaxJitter        = time.Hour
)

// Policies are the policy fields of a Trigger, with their defaults applied.
type Policies struct {
	Misfire            platformv1.MisfirePolicy
	Concurrency        platformv1.ConcurrencyPolicy
	CatchUpWindow      time.Duration
	CatchUpLimit       int
	Jitter             time.Duration
	PauseAfterFailures int
}

// Trigger is a Trigger's definition, checked.
type Trigger struct {
	Schedule Schedule
	Policies Policies
	// Key changes when the schedule does (its type, expression or time zone).
	Key string
}

var definitionPath = field.NewPath("definition")

// CompileTrigger checks what the CRD schema cannot about a Trigger's definition (the time zone,
// the expression, the policy durations) and returns it ready to schedule. anchor is where an
// interval counts from: the Trigger's creation. Errors carry their field paths under definition.
func CompileTrigger(def *platformv1.TriggerDefinition, anchor time.Time) (Trigger, field.ErrorList) {
	var errs field.ErrorList
	out := Trigger{Policies: Policies{
		Misfire: def.MisfirePolicy, Concurrency: def.ConcurrencyPolicy,
		CatchUpLimit: int(platformv1.DefaultCatchUpLimit), PauseAfterFailures: int(platformv1.DefaultPauseAfterFailures),
	}}
	sched := def.Source.Schedule
	if sched == nil {
		errs = append(errs, field.Required(definitionPath.Child("source", "schedule"), "a schedule source needs a schedule"))
	} else {
		var schedErrs field.ErrorList
		out.Schedule, schedErrs = Parse(definitionPath.Child("source", "schedule"), *sched, anchor)
		errs = append(errs, schedErrs...)
		sum := sha256.Sum256([]byte(string(sched.Type) + "\x00" + sched.Expression + "\x00" + sched.TimeZone))
		out.Key = hex.EncodeToString(sum[:8])
	}
	switch out.Policies.Misfire {
	case "":
		out.Policies.Misfire = platformv1.FireOnceMisfire
	case platformv1.FireOnceMisfire, platformv1.FireAllMisfire, platformv1.SkipMisfire:
	default:
		errs = append(errs, field.NotSupported(definitionPath.Child("misfirePolicy"), def.MisfirePolicy,
			[]string{string(platformv1.FireOnceMisfire), string(platformv1.FireAllMisfire), string(platformv1.SkipMisfire)}))
	}
	switch out.Policies.Concurrency {
	case "":
		out.Policies.Concurrency = platformv1.SkipConcurrency
	case platformv1.SkipConcurrency, platformv1.AllowConcurrency, platformv1.ReplaceConcurrency:
	default:
		errs = append(errs, field.NotSupported(definitionPath.Child("concurrencyPolicy"), def.ConcurrencyPolicy,
			[]string{string(platformv1.SkipConcurrency), string(platformv1.AllowConcurrency), string(platformv1.ReplaceConcurrency)}))
	}
	window := def.CatchUpWindow
	if window == "" {
		window = platformv1.DefaultCatchUpWindow
	}
	switch d, err := ParseTimeSpan(window); {
	case err != nil:
		errs = append(errs, field.Invalid(definitionPath.Child("catchUpWindow"), def.CatchUpWindow, err.Error()))
	case d > MaxCatchUpWindow:
		errs = append(errs, field.Invalid(definitionPath.Child("catchUpWindow"), def.CatchUpWindow, "at most 7.00:00:00"))
	default:
		out.Policies.CatchUpWindow = d
	}
	if def.Jitter != "" {
		d, err := ParseTimeSpan(def.Jitter)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(definitionPath.Child("jitter"), def.Jitter, err.Error()))
		case d > MaxJitter:
			errs = append(errs, field.Invalid(definitionPath.Child("jitter"), def.Jitter, "at most 01:00:00"))
		default:
			out.Policies.Jitter = d
		}
	}
	if def.CatchUpLimit != nil {
		if n := *def.CatchUpLimit; n < 1 || n > 1000 {
			errs = append(errs, field.Invalid(definitionPath.Child("catchUpLimit"), n, "from 1 to 1000"))
		} else {
			out.Policies.CatchUpLimit = int(n)
		}
	}
	if def.PauseAfterFailures != nil {
		if n := *def.PauseAfterFailures; n < 0 || n > 1000 {
			errs = append(errs, field.Invalid(definitionPath.Child("pauseAfterFailures"), n, "from 0 to 1000"))
		} else {
			out.Policies.PauseAfterFailures = int(n)
		}
	}
	if len(errs) > 0 {
		return Trigger{}, errs
	}
	return out, nil
}

// CheckAhead refuses a once schedule whose instant is not after now: it would never fire.
func (t Trigger) CheckAhead(def *platformv1.TriggerDefinition, now time.Time) field.ErrorList {
	at, ok := At(t.Schedule)
	if !ok || at.After(now) {
		return nil
	}
	return field.ErrorList{field.Invalid(definitionPath.Child("source", "schedule", "expression"), def.Source.Schedule.Expression,
		fmt.Sprintf("the instant lies in the past (now is %s): a once schedule would never fire", now.UTC().Format(time.RFC3339)))}
}
