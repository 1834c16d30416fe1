package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Task is a public, living Task of a workspace: what the work is and where it stands. Its name is
// the Task's id and its namespace the workspace's. metadata.resourceVersion is the workspace's
// Workplace outbox position at which it was read (a watch resumes from it).
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Task struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status TaskStatus `json:"status,omitempty"`
}

// TaskStatus is a Task's state and what can be done with it.
type TaskStatus struct {
	// Title is the Task's title.
	Title string `json:"title,omitempty"`
	// State is pending, running, paused, action-required, completed, failed or cancelled.
	State string `json:"state"`
	// Reason says why it failed or was cancelled, for people.
	Reason string `json:"reason,omitempty"`
	// WaitingOn is what the Task waits for when it is not done: the prompt of its open question,
	// "resume" when paused, empty otherwise.
	WaitingOn string `json:"waitingOn,omitempty"`
	// Interaction is the conversation the Task belongs to; empty for an autonomous Task.
	Interaction string `json:"interaction,omitempty"`
	// Entry is the Entry the work was submitted through (namespace/name), when any.
	Entry string `json:"entry,omitempty"`
	// Trigger is the Trigger whose occurrence submitted the work (namespace/name), when any.
	Trigger string `json:"trigger,omitempty"`
	// Visible says whether its reference appears in its conversation.
	Visible bool `json:"visible"`
	// Milestones counts the Task's durable Results.
	Milestones int32 `json:"milestones,omitempty"`
	// PendingActions are the open questions it waits on; never a token or its hash.
	PendingActions []PendingActionSummary `json:"pendingActions,omitempty"`
	// Version is the Task's own version, the ETag of the service API.
	Version int64 `json:"version"`
	// UpdatedAt is the time of its last change.
	UpdatedAt metav1.Time `json:"updatedAt,omitempty"`
	// EndedAt is when it reached a terminal state.
	EndedAt *metav1.Time `json:"endedAt,omitempty"`
	// Usage is the sum of the model calls of its runs.
	Usage *ModelUsage `json:"usage,omitempty"`
}

// ModelUsage is the usage of model calls: how many, their tokens and what they cost.
type ModelUsage struct {
	// ModelCalls counts the calls.
	ModelCalls int64 `json:"modelCalls"`
	// InputTokens and OutputTokens are what the endpoints reported; TotalTokens both together.
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	TotalTokens  int64 `json:"totalTokens"`
	// Cost is the cost in the currency of the latest priced call; absent when no call was
	// priced.
	Cost *Money `json:"cost,omitempty"`
	// Costs is the cost in each currency the calls were priced in, by currency code.
	Costs []Money `json:"costs,omitempty"`
}

// Money is an exact amount of a currency.
type Money struct {
	// Amount is a decimal string with six decimals ("0.001100").
	Amount string `json:"amount"`
	// Currency is an ISO 4217 code.
	Currency string `json:"currency"`
}

// PendingActionSummary is an open question, as a Task or an Interaction shows it.
type PendingActionSummary struct {
	// ID is the PendingAction's id.
	ID string `json:"id"`
	// Kind is input, confirmation, choice, file or approval.
	Kind string `json:"kind"`
	// Prompt is the question.
	Prompt string `json:"prompt,omitempty"`
	// ExpiresAt is when it stops being answerable.
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
}

// TaskList is a page of Tasks.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type TaskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Task `json:"items"`
}

// Interaction is a durable conversation opened from a published Entry, with its most recent
// messages.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Interaction struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status InteractionStatus `json:"status,omitempty"`
}

// MaxInteractionMessages bounds the messages an Interaction shows: the most recent ones (the
// service API pages through all of them).
const MaxInteractionMessages = 20

// InteractionStatus is a conversation's state and recent messages.
type InteractionStatus struct {
	// Title is the conversation's title.
	Title string `json:"title,omitempty"`
	// State is Active, Idle or Closed.
	State string `json:"state"`
	// Entry is the Entry it was opened from (namespace/name).
	Entry string `json:"entry,omitempty"`
	// Task is the Task the conversation works on, empty once it is deleted.
	Task string `json:"task,omitempty"`
	// Version is its own version.
	Version int64 `json:"version"`
	// UpdatedAt is the time of its last change.
	UpdatedAt metav1.Time `json:"updatedAt,omitempty"`
	// Messages are its most recent messages (at most MaxInteractionMessages), oldest first.
	Messages []InteractionMessage `json:"messages,omitempty"`
	// PendingActions are its open questions; never a token or its hash.
	PendingActions []PendingActionSummary `json:"pendingActions,omitempty"`
}

// InteractionMessage is one functional message of a conversation.
type InteractionMessage struct {
	// Seq numbers the conversation's messages.
	Seq int64 `json:"seq"`
	// Role is User, Platform or System: a label, never an identity.
	Role string `json:"role"`
	// Kind is text, answer, reply, question, error, cancelled or result.
	Kind string `json:"kind"`
	// Text is what the message says.
	Text string `json:"text,omitempty"`
	// CreatedAt is when it was added.
	CreatedAt metav1.Time `json:"createdAt"`
}

// InteractionList is a page of Interactions.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type InteractionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Interaction `json:"items"`
}

// FlowRun is one durable execution of a Flow version.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type FlowRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status FlowRunStatus `json:"status,omitempty"`
}

// FlowRunStatus is where a run stands.
type FlowRunStatus struct {
	// Flow is the Flow it executes.
	Flow string `json:"flow"`
	// FlowVersion is the Flow version it executes; empty for a Draft Run.
	FlowVersion string `json:"flowVersion,omitempty"`
	// State is the run's state.
	State string `json:"state"`
	// CurrentStep is the step it is at.
	CurrentStep string `json:"currentStep,omitempty"`
	// Reason says why it failed or was cancelled.
	Reason string `json:"reason,omitempty"`
	// Task is the Task it works on; Interaction its conversation.
	Task        string `json:"task,omitempty"`
	Interaction string `json:"interaction,omitempty"`
	// ParentFlowRun is the terminal predecessor of a continuation.
	ParentFlowRun string `json:"parentFlowRun,omitempty"`
	// Version is the run's own version.
	Version int64 `json:"version"`
	// UpdatedAt is the time of its last change.
	UpdatedAt metav1.Time `json:"updatedAt,omitempty"`
	// Usage is the usage of its model calls, as the service API's read of the run shows it.
	Usage *ModelUsage `json:"usage,omitempty"`
}

// FlowRunList is a page of FlowRuns.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type FlowRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlowRun `json:"items"`
}

// PendingAction is a durable question a suspended run waits on. It never shows the resume token
// or its hash: answering goes through the service API with the token.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PendingAction struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status PendingActionStatus `json:"status,omitempty"`
}

// PendingActionStatus is a question and where it stands.
type PendingActionStatus struct {
	// Kind is text, choice, confirmation, file or approval.
	Kind string `json:"kind"`
	// Prompt is the question.
	Prompt string `json:"prompt,omitempty"`
	// State is created (open), completed, expired or cancelled.
	State string `json:"state"`
	// Step is the Flow step that asked.
	Step string `json:"step,omitempty"`
	// Task, Interaction and FlowRun are the work it belongs to.
	Task        string `json:"task,omitempty"`
	Interaction string `json:"interaction,omitempty"`
	FlowRun     string `json:"flowRun,omitempty"`
	// ExpiresAt is when it stops being answerable; AnsweredAt when it was answered.
	ExpiresAt  *metav1.Time `json:"expiresAt,omitempty"`
	AnsweredAt *metav1.Time `json:"answeredAt,omitempty"`
	// Version is its own version.
	Version int64 `json:"version"`
}

// PendingActionList is a page of PendingActions.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PendingActionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PendingAction `json:"items"`
}

// WorkItem is a submitted piece of work and the state of the run that executes it.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WorkItem struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status WorkItemStatus `json:"status,omitempty"`
}

// WorkItemStatus is what was submitted and where it stands.
type WorkItemStatus struct {
	// Type and Title are the submission's.
	Type  string `json:"type,omitempty"`
	Title string `json:"title,omitempty"`
	// Flow and FlowVersion are the Flow it runs (FlowVersion empty for a draft).
	Flow        string `json:"flow,omitempty"`
	FlowVersion string `json:"flowVersion,omitempty"`
	// State is the state of its run.
	State string `json:"state"`
	// Reason says why it failed or was cancelled.
	Reason string `json:"reason,omitempty"`
	// Task, Interaction and FlowRun are the work it belongs to.
	Task        string `json:"task,omitempty"`
	Interaction string `json:"interaction,omitempty"`
	FlowRun     string `json:"flowRun,omitempty"`
	// UpdatedAt is the time of its last change.
	UpdatedAt metav1.Time `json:"updatedAt,omitempty"`
}

// WorkItemList is a page of WorkItems.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WorkItemList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkItem `json:"items"`
}

// Notification tells one Principal about something that needs attention; a caller sees only
// their own.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Notification struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status NotificationStatus `json:"status,omitempty"`
}

// NotificationStatus is what a notification says.
type NotificationStatus struct {
	// Kind is question, task-completed or task-failed.
	Kind string `json:"kind"`
	// Title is what it says.
	Title string `json:"title,omitempty"`
	// Attention says whether it still needs attention; Read whether it was read.
	Attention bool `json:"attention"`
	Read      bool `json:"read"`
	// Resolution says how its question stopped waiting (answered, expired, closed).
	Resolution string `json:"resolution,omitempty"`
	// Task, Interaction and PendingAction are what it is about.
	Task          string `json:"task,omitempty"`
	Interaction   string `json:"interaction,omitempty"`
	PendingAction string `json:"pendingAction,omitempty"`
}

// NotificationList is a page of Notifications.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type NotificationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Notification `json:"items"`
}

// TriggerOccurrence is one firing of a Trigger: what it submitted, or why it did not.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type TriggerOccurrence struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status TriggerOccurrenceStatus `json:"status,omitempty"`
}

// TriggerOccurrenceStatus is an occurrence's outcome.
type TriggerOccurrenceStatus struct {
	// Trigger is the Trigger's name.
	Trigger string `json:"trigger"`
	// Kind is how it fired (a schedule, an interval, Run now).
	Kind string `json:"kind,omitempty"`
	// Outcome is Submitted, Skipped, Failed or Missed; Reason and Message say why.
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// ScheduledAt is the instant it stands for; FiredAt when it fired.
	ScheduledAt metav1.Time `json:"scheduledAt,omitempty"`
	FiredAt     metav1.Time `json:"firedAt,omitempty"`
	// WorkItem, Task and FlowRun are what it submitted.
	WorkItem string `json:"workItem,omitempty"`
	Task     string `json:"task,omitempty"`
	FlowRun  string `json:"flowRun,omitempty"`
}

// TriggerOccurrenceList is a page of TriggerOccurrences.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type TriggerOccurrenceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TriggerOccurrence `json:"items"`
}
