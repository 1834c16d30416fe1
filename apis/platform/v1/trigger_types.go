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
	// IntervalSchedule fires every [days.]hh:mm:ss (`01:00:00`), counted from the Trigger's
	// creation or last enablement.
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

// MisfirePolicy says what happens to scheduled instants missed while the service was down or the
// Trigger was disabled.
// +kubebuilder:validation:Enum=fireOnce;skip
type MisfirePolicy string

const (
	// FireOnceMisfire submits one Work for all missed instants together.
	FireOnceMisfire MisfirePolicy = "fireOnce"
	// SkipMisfire drops missed instants and waits for the next one.
	SkipMisfire MisfirePolicy = "skip"
)

// ConcurrencyPolicy says what happens when an instant comes while Work of an earlier one still
// runs.
// +kubebuilder:validation:Enum=skip;allow
type ConcurrencyPolicy string

const (
	// SkipConcurrency records the occurrence as skipped.
	SkipConcurrency ConcurrencyPolicy = "skip"
	// AllowConcurrency submits anyway.
	AllowConcurrency ConcurrencyPolicy = "allow"
)

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
	// misfirePolicy handles instants missed while down or disabled; fireOnce when omitted.
	// +optional
	// +kubebuilder:default=fireOnce
	MisfirePolicy MisfirePolicy `json:"misfirePolicy,omitempty"`
	// concurrencyPolicy handles an instant that comes while earlier Work still runs; skip when
	// omitted.
	// +optional
	// +kubebuilder:default=skip
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`
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
// form of the expression; the reconciler parses it and the time zone and reports
// InvalidDefinition.
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

// OccurrenceOutcome is what happened at one firing of a Trigger.
// +kubebuilder:validation:Enum=Submitted;Skipped;Failed
type OccurrenceOutcome string

const (
	// OccurrenceSubmitted: Work was submitted.
	OccurrenceSubmitted OccurrenceOutcome = "Submitted"
	// OccurrenceSkipped: the concurrency or misfire policy skipped the instant.
	OccurrenceSkipped OccurrenceOutcome = "Skipped"
	// OccurrenceFailed: submission failed (for example the owner lost runs/execute).
	OccurrenceFailed OccurrenceOutcome = "Failed"
)

// TriggerOccurrence is one firing of a Trigger; the durable history lives in the Work store.
type TriggerOccurrence struct {
	// scheduledTime is the scheduled instant, which identifies the occurrence.
	// +required
	ScheduledTime metav1.Time `json:"scheduledTime"`
	// outcome of the firing.
	// +required
	Outcome OccurrenceOutcome `json:"outcome"`
	// workItemId is the id of the submitted WorkItem.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	WorkItemID string `json:"workItemId,omitempty"`
	// message explains a Skipped or Failed outcome.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// TriggerStatus is the observed state of a Trigger.
type TriggerStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is True when
	// the schedule is registered.
	ResourceStatus `json:",inline"`
	// nextFireTime is the next scheduled instant; absent when disabled or exhausted.
	// +optional
	NextFireTime *metav1.Time `json:"nextFireTime,omitempty"`
	// lastOccurrence is the latest firing.
	// +optional
	LastOccurrence *TriggerOccurrence `json:"lastOccurrence,omitempty"`
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
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextFireTime`
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
