package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TriggerSourceKind is what fires a Trigger.
// +kubebuilder:validation:Enum=schedule
type TriggerSourceKind string

// ScheduleTriggerSource fires on a schedule.
const ScheduleTriggerSource TriggerSourceKind = "schedule"

// ScheduleType is the kind of schedule of a Trigger.
// +kubebuilder:validation:Enum=once;interval;cron
type ScheduleType string

const (
	// OnceSchedule fires once, at a local date and time (`2026-01-31T09:00:00`) in timeZone.
	OnceSchedule ScheduleType = "once"
	// IntervalSchedule fires every [days.]hh:mm:ss (`01:00:00`) of elapsed time, counted from
	// the Trigger's creation, so that a restart does not shift it.
	IntervalSchedule ScheduleType = "interval"
	// CronSchedule fires on a five-field cron expression (`0 9 * * 1-5`) or a descriptor
	// (`@daily`) evaluated in timeZone.
	CronSchedule ScheduleType = "cron"
)

// TriggerTargetKind is what a Trigger submits work to.
// +kubebuilder:validation:Enum=flow
type TriggerTargetKind string

// FlowTriggerTarget submits autonomous Work to a Flow.
const FlowTriggerTarget TriggerTargetKind = "flow"

// MisfirePolicy says what happens to the instants the scheduler missed: those that came while
// the service was down, or that a later instant overtook before they fired. Instants that come
// while the Trigger is disabled or paused are not owed: nothing fires for them.
// +kubebuilder:validation:Enum=fireOnce;fireAll;skip
type MisfirePolicy string

const (
	// FireOnceMisfire submits the latest missed instant within catchUpWindow, once; the earlier
	// ones are recorded together as one Missed occurrence.
	FireOnceMisfire MisfirePolicy = "fireOnce"
	// FireAllMisfire submits every missed instant within catchUpWindow, oldest first, at most
	// catchUpLimit of them (the latest); the rest are recorded as one Missed occurrence.
	FireAllMisfire MisfirePolicy = "fireAll"
	// SkipMisfire submits no missed instant: they are recorded as one Missed occurrence and the
	// Trigger waits for the next one.
	SkipMisfire MisfirePolicy = "skip"
)

// ConcurrencyPolicy says what happens when an instant comes while the Work of an earlier
// occurrence of the Trigger is still active (pending, running, paused or waiting for a person).
// +kubebuilder:validation:Enum=skip;allow;replace
type ConcurrencyPolicy string

const (
	// SkipConcurrency records the occurrence as Skipped and submits nothing.
	SkipConcurrency ConcurrencyPolicy = "skip"
	// AllowConcurrency submits anyway: the Work of several occurrences runs side by side.
	AllowConcurrency ConcurrencyPolicy = "allow"
	// ReplaceConcurrency cancels the active Work of earlier occurrences, then submits.
	ReplaceConcurrency ConcurrencyPolicy = "replace"
)

// Defaults of the policy fields, as the CRD applies them.
const (
	DefaultCatchUpWindow      TimeSpan = "01:00:00"
	DefaultCatchUpLimit       int32    = 10
	DefaultPauseAfterFailures int32    = 5
)

// TriggerOwnerAnnotation holds the id of the Principal a Trigger fires as: the Principal that
// created it or last changed its definition (set by admission for a Principal's write through
// the kube API, by the service API for its caller). The owner's authorization is evaluated again
// at every firing.
const TriggerOwnerAnnotation = "platform/owner"

// TriggerDefinition is the desired state of a Trigger: when (source), what (target.input) and
// how (the target Flow).
type TriggerDefinition struct {
	// displayName is the human-readable name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// enabled is false to stop firing; true when omitted.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// source says when the Trigger fires.
	// +required
	Source TriggerSource `json:"source"`
	// target says what the Trigger submits.
	// +required
	Target TriggerTarget `json:"target"`
	// misfirePolicy handles the instants the scheduler missed (the service was down, or a later
	// instant overtook them): fireOnce (default), fireAll or skip.
	// +optional
	// +kubebuilder:default=fireOnce
	MisfirePolicy MisfirePolicy `json:"misfirePolicy,omitempty"`
	// concurrencyPolicy handles an instant that comes while the Work of an earlier occurrence is
	// still active: skip (default), allow or replace.
	// +optional
	// +kubebuilder:default=skip
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`
	// catchUpWindow is how late a missed instant may still be submitted, [days.]hh:mm:ss; older
	// ones are recorded as Missed. 01:00:00 when omitted; at most 7 days.
	// +optional
	// +kubebuilder:default="01:00:00"
	CatchUpWindow TimeSpan `json:"catchUpWindow,omitempty"`
	// catchUpLimit bounds the missed instants fireAll submits at once (the latest ones); 10 when
	// omitted.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	CatchUpLimit *int32 `json:"catchUpLimit,omitempty"`
	// jitter delays each firing by a deterministic amount from zero up to it, derived from the
	// Trigger's uid and the scheduled instant (the same on every replica and after a restart),
	// [days.]hh:mm:ss; none when omitted; at most one hour. Keep it below the schedule's period.
	// +optional
	Jitter TimeSpan `json:"jitter,omitempty"`
	// pauseAfterFailures pauses the Trigger after that many consecutive failed occurrences (an
	// occurrence that could not submit, or whose Work failed); 5 when omitted, 0 never pauses.
	// Enabling the Trigger again (POST .../enable) or changing its definition resumes it.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	PauseAfterFailures *int32 `json:"pauseAfterFailures,omitempty"`
}

// TriggerSource says when a Trigger fires.
//
// +kubebuilder:validation:XValidation:rule="self.kind != 'schedule' || has(self.schedule)",message="a schedule source needs a schedule",fieldPath=".schedule"
type TriggerSource struct {
	// kind of source; schedule when omitted.
	// +optional
	// +kubebuilder:default=schedule
	Kind TriggerSourceKind `json:"kind,omitempty"`
	// schedule of a schedule source.
	// +optional
	Schedule *TriggerSchedule `json:"schedule,omitempty"`
}

// TriggerSchedule is a once, interval or cron schedule in an IANA time zone. The CRD checks the
// form of the expression; admission parses it and the time zone (422 with the field path), and
// refuses a once instant in the past. Daylight saving rules: a local time skipped by a change
// fires when the gap ends, a repeated one fires once at its first occurrence; day-of-month and
// day-of-week fire on either when both are restricted (Vixie cron).
//
// +kubebuilder:validation:XValidation:rule="self.type != 'once' || self.expression.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?$')",message="a once schedule is a local date and time such as 2026-01-31T09:00:00",fieldPath=".expression"
// +kubebuilder:validation:XValidation:rule="self.type != 'interval' || self.expression.matches('^([0-9]{1,5}[.])?([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$')",message="an interval schedule is a duration [days.]hh:mm:ss such as 01:00:00",fieldPath=".expression"
// +kubebuilder:validation:XValidation:rule="self.type != 'cron' || self.expression.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[^ ]+( +[^ ]+){4})$')",message="a cron schedule has five fields or is a descriptor such as @daily",fieldPath=".expression"
type TriggerSchedule struct {
	// type of schedule: once, interval or cron.
	// +required
	Type ScheduleType `json:"type"`
	// expression is the local date-time (once), the [days.]hh:mm:ss period (interval) or the
	// cron expression (cron).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Expression string `json:"expression"`
	// timeZone is the strict IANA name of the zone the schedule is evaluated in (`Europe/Paris`,
	// `UTC`).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`
	TimeZone string `json:"timeZone"`
}

// TriggerTarget says what a Trigger submits.
//
// +kubebuilder:validation:XValidation:rule="self.kind != 'flow' || has(self.flow)",message="a flow target names the flow",fieldPath=".flow"
type TriggerTarget struct {
	// kind of target; flow when omitted.
	// +optional
	// +kubebuilder:default=flow
	Kind TriggerTargetKind `json:"kind,omitempty"`
	// flow is the Flow to run, in any namespace of the Trigger's own workspace (never another
	// workspace); without a version the active version at each firing.
	// +optional
	Flow *FlowReference `json:"flow,omitempty"`
	// input is the JSON object submitted as the Work input at each firing.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:pruning:PreserveUnknownFields
	Input *runtime.RawExtension `json:"input,omitempty"`
}

// OccurrenceOutcome is what happened at one occurrence of a Trigger.
// +kubebuilder:validation:Enum=Submitted;Skipped;Failed;Missed
type OccurrenceOutcome string

const (
	// OccurrenceSubmitted: Work was submitted.
	OccurrenceSubmitted OccurrenceOutcome = "Submitted"
	// OccurrenceSkipped: the concurrency policy skipped the instant (earlier Work was active).
	OccurrenceSkipped OccurrenceOutcome = "Skipped"
	// OccurrenceFailed: nothing was submitted, for the reason recorded (the owner lost
	// runs/execute, the Flow is missing or disabled, ...).
	OccurrenceFailed OccurrenceOutcome = "Failed"
	// OccurrenceMissed: instants the misfire policy did not submit; the occurrence stands for all
	// of them, up to its scheduled instant.
	OccurrenceMissed OccurrenceOutcome = "Missed"
)

// OccurrenceKind says what made an occurrence.
// +kubebuilder:validation:Enum=Scheduled;Manual
type OccurrenceKind string

const (
	// ScheduledOccurrence: an instant of the schedule; its identity is the Trigger's uid and the
	// instant, so that it is submitted at most once.
	ScheduledOccurrence OccurrenceKind = "Scheduled"
	// ManualOccurrence: Run now; an identity of its own.
	ManualOccurrence OccurrenceKind = "Manual"
)

// Reasons of occurrences that did not submit.
const (
	// OwnerMissingReason: the Trigger names no owner (it was written by a caller that is no
	// Principal, such as the administrator's certificate).
	OwnerMissingReason = "OwnerMissing"
	// NotAuthorizedReason: the owner no longer holds runs/execute in the workspace.
	NotAuthorizedReason = "NotAuthorized"
	// ConcurrencySkippedReason: earlier Work of the Trigger was active (concurrencyPolicy skip).
	ConcurrencySkippedReason = "ConcurrencySkipped"
	// MisfireReason: the misfire policy did not submit the instants.
	MisfireReason = "Misfire"
	// PausedReason: the Trigger paused after pauseAfterFailures consecutive failed occurrences.
	PausedReason = "Paused"
)

// TriggerOccurrence is one occurrence of a Trigger; the durable history lives in the Work store
// (GET /api/triggers/{name}/occurrences).
type TriggerOccurrence struct {
	// id is the occurrence's identity, derived from the Trigger's uid and the scheduled instant.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id,omitempty"`
	// kind is Scheduled or Manual (Run now).
	// +optional
	Kind OccurrenceKind `json:"kind,omitempty"`
	// scheduledTime is the scheduled instant (for Run now, when it was asked).
	// +required
	ScheduledTime metav1.Time `json:"scheduledTime"`
	// firedAt is when the occurrence was decided.
	// +optional
	FiredAt *metav1.Time `json:"firedAt,omitempty"`
	// outcome of the occurrence.
	// +required
	Outcome OccurrenceOutcome `json:"outcome"`
	// workItemId is the id of the submitted WorkItem.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	WorkItemID string `json:"workItemId,omitempty"`
	// taskId is the autonomous Task the Work became.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	TaskID string `json:"taskId,omitempty"`
	// reason of a Skipped, Failed or Missed outcome, for machines.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`
	// message explains a Skipped, Failed or Missed outcome.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// TriggerStatus is the observed state of a Trigger.
type TriggerStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is True when
	// the schedule is registered (or the Trigger is disabled or has fired its last instant).
	ResourceStatus `json:",inline"`
	// nextFireTime is the next scheduled instant; absent when disabled, paused or exhausted.
	// +optional
	NextFireTime *metav1.Time `json:"nextFireTime,omitempty"`
	// lastOccurrence is the latest occurrence.
	// +optional
	LastOccurrence *TriggerOccurrence `json:"lastOccurrence,omitempty"`
	// consecutiveFailures counts the failed occurrences since the last success, resume or change
	// of the definition.
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
}

// Trigger submits autonomous Work to a Flow of its workspace on a schedule. The Trigger owns
// when, Work owns what, the Flow owns how, Runtime owns execution.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.definition.source.schedule.type`
// +kubebuilder:printcolumn:name="Expression",type=string,JSONPath=`.definition.source.schedule.expression`
// +kubebuilder:printcolumn:name="Time Zone",type=string,JSONPath=`.definition.source.schedule.timeZone`,priority=1
// +kubebuilder:printcolumn:name="Flow",type=string,JSONPath=`.definition.target.flow.name`
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.definition.enabled`
// +kubebuilder:printcolumn:name="Next",type=string,JSONPath=`.status.nextFireTime`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastOccurrence.scheduledTime`
// +kubebuilder:printcolumn:name="Outcome",type=string,JSONPath=`.status.lastOccurrence.outcome`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Trigger struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the desired state of the Trigger.
	// +required
	Definition TriggerDefinition `json:"definition"`
	// status is the observed state of the Trigger.
	// +optional
	Status TriggerStatus `json:"status,omitempty"`
}

// TriggerList is a list of Triggers.
//
// +kubebuilder:object:root=true
type TriggerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Trigger `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Trigger{}, &TriggerList{})
}
