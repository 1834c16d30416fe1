package v1

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MinQuestionExpiry and MaxQuestionExpiry bound how long a question may wait.
const (
	MinQuestionExpiry = time.Second
	MaxQuestionExpiry = 30 * 24 * time.Hour
)

// maxDefaultAnswerBytes bounds the declared default answer of a question.
const maxDefaultAnswerBytes = 4096

// DefaultReminderLead is how long before its expiry a question is reminded of when its expiry
// declares no remindBefore: a quarter of its wait, at most an hour.
func DefaultReminderLead(expiresAfter time.Duration) time.Duration {
	return min(expiresAfter/4, time.Hour)
}

// ReminderLead is how long before the expiry the reminder goes out.
func (e *QuestionExpiry) ReminderLead() time.Duration {
	if e.RemindBefore != nil {
		return e.RemindBefore.Duration
	}
	return DefaultReminderLead(e.ExpiresAfter.Duration)
}

// ValidateFlowExpiries checks the expiry of every suspension of a Flow definition.
func ValidateFlowExpiries(def *FlowDefinition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, step := range def.Steps {
		if step.Suspend == nil || step.Suspend.Expiry == nil {
			continue
		}
		errs = append(errs, ValidateQuestionExpiry(step.Suspend.Expiry, step.Suspend.Kind, step.Suspend.Choices,
			path.Child("steps").Index(i).Child("suspend", "expiry"))...)
	}
	return errs
}

// ValidateToolApprovalExpiry checks a Tool's approvalExpiry: only with requiresApproval, and
// the expiry of an Approval question.
func ValidateToolApprovalExpiry(def *ToolDefinition, path *field.Path) field.ErrorList {
	if def.ApprovalExpiry == nil {
		return nil
	}
	p := path.Child("approvalExpiry")
	if !def.RequiresApproval {
		return field.ErrorList{field.Invalid(p, "", "approvalExpiry needs requiresApproval: true")}
	}
	return ValidateQuestionExpiry(def.ApprovalExpiry, ApprovalSuspend, nil, p)
}

// ValidateQuestionExpiry checks an expiry against the question it belongs to (its kind and
// choices): the bounds of its durations, the fallbacks the kind allows, and that a Proceed
// default answers the question as a person could.
func ValidateQuestionExpiry(e *QuestionExpiry, kind SuspendKind, choices []FlowChoice, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	after := e.ExpiresAfter.Duration
	if after < MinQuestionExpiry || after > MaxQuestionExpiry {
		errs = append(errs, field.Invalid(path.Child("expiresAfter"), e.ExpiresAfter.Duration.String(),
			fmt.Sprintf("from %s to %s (30 days)", MinQuestionExpiry, MaxQuestionExpiry)))
	}
	if e.RemindBefore != nil && (e.RemindBefore.Duration <= 0 || e.RemindBefore.Duration >= after) {
		errs = append(errs, field.Invalid(path.Child("remindBefore"), e.RemindBefore.Duration.String(),
			"more than zero and shorter than expiresAfter"))
	}
	hasDefault := e.Default != nil && len(e.Default.Raw) > 0 && string(e.Default.Raw) != "null"
	switch e.OnExpiry {
	case "", FailOnExpiry, EscalateOnExpiry:
	case RejectOnExpiry:
		if kind != ApprovalSuspend && kind != ConfirmationSuspend {
			errs = append(errs, field.Invalid(path.Child("onExpiry"), string(e.OnExpiry),
				fmt.Sprintf("only an Approval or a Confirmation can be rejected; a %s question expires with Fail, Proceed or Escalate", kind)))
		}
	case ProceedOnExpiry:
		if !hasDefault {
			errs = append(errs, field.Required(path.Child("default"), "onExpiry Proceed declares the answer it proceeds with"))
		} else if err := checkDefaultAnswer(e.Default.Raw, kind, choices); err != "" {
			errs = append(errs, field.Invalid(path.Child("default"), string(e.Default.Raw), err))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("onExpiry"), string(e.OnExpiry),
			[]string{string(FailOnExpiry), string(RejectOnExpiry), string(ProceedOnExpiry), string(EscalateOnExpiry)}))
	}
	if hasDefault && e.OnExpiry != ProceedOnExpiry {
		errs = append(errs, field.Forbidden(path.Child("default"), "only onExpiry Proceed has a default answer"))
	}
	return errs
}

// checkDefaultAnswer says why raw does not answer a question of kind, or "".
func checkDefaultAnswer(raw []byte, kind SuspendKind, choices []FlowChoice) string {
	if len(raw) > maxDefaultAnswerBytes {
		return fmt.Sprintf("at most %d bytes", maxDefaultAnswerBytes)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "not JSON"
	}
	switch kind {
	case TextSuspend:
		if s, ok := v.(string); !ok || s == "" {
			return "a Text question proceeds with a non-empty string"
		}
	case ChoiceSuspend:
		s, ok := v.(string)
		if !ok {
			return "a Choice proceeds with the value of one of its choices (a string)"
		}
		for _, c := range choices {
			if c.Value == s {
				return ""
			}
		}
		return "not the value of one of the step's choices"
	case ConfirmationSuspend, ApprovalSuspend:
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("a %s proceeds with true or false", kind)
		}
	case FileSuspend:
		return "a File question cannot proceed without a person's file; use Fail or Escalate"
	}
	return ""
}
