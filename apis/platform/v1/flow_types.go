package v1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlowKind says how a Flow routes work.
// +kubebuilder:validation:Enum=Direct;Orchestration
type FlowKind string

const (
	// DirectFlow hands the work to one target (an Agent) and maps its output to the result.
	// System-managed Direct Agent Flows normalize Agent-bound Entries at publication.
	DirectFlow FlowKind = "Direct"
	// OrchestrationFlow runs a graph of steps sequentially, with durable suspensions.
	OrchestrationFlow FlowKind = "Orchestration"
)

// FlowTargetKind is the kind of object a Direct Flow hands its work to.
// +kubebuilder:validation:Enum=Agent
type FlowTargetKind string

// AgentFlowTarget: the target of a Direct Flow is an Agent.
const AgentFlowTarget FlowTargetKind = "Agent"

// FlowStepType is the type of one step of an Orchestration Flow.
// +kubebuilder:validation:Enum=Input;Agent;Router;Condition;Transform;Output;Failure
type FlowStepType string

const (
	// InputStep receives the submitted input; a graph starts at exactly one Input step.
	InputStep FlowStepType = "Input"
	// AgentStep invokes an Agent with a prompt built from the step input.
	AgentStep FlowStepType = "Agent"
	// RouterStep evaluates its expression to a label and follows the edge with that label.
	RouterStep FlowStepType = "Router"
	// ConditionStep evaluates its boolean expression and follows the edge labelled "true" or
	// "false".
	ConditionStep FlowStepType = "Condition"
	// TransformStep replaces the data flowing through the graph by its expression's value.
	TransformStep FlowStepType = "Transform"
	// OutputStep ends the run successfully with the current data as the Work result.
	OutputStep FlowStepType = "Output"
	// FailureStep ends the run as failed with its message.
	FailureStep FlowStepType = "Failure"
)

// SuspendKind is the kind of human input a suspended step waits for; each becomes a
// PendingAction of the same kind.
// +kubebuilder:validation:Enum=Text;Choice;Confirmation;File;Approval
type SuspendKind string

const (
	// TextSuspend asks for free text (an inline composer).
	TextSuspend SuspendKind = "Text"
	// ChoiceSuspend asks to pick one of the listed choices (one-click buttons).
	ChoiceSuspend SuspendKind = "Choice"
	// ConfirmationSuspend asks for a yes or no (one click).
	ConfirmationSuspend SuspendKind = "Confirmation"
	// FileSuspend asks for a file.
	FileSuspend SuspendKind = "File"
	// ApprovalSuspend asks an approver to approve or reject.
	ApprovalSuspend SuspendKind = "Approval"
)

// FlowDefinition is the desired state of a Flow, and the immutable snapshot a FlowVersion
// publishes. The CRD checks the shape; the reconciler checks the graph (exactly one Input step,
// every step reachable, every path ends in an Output or Failure step, branch labels match) and
// reports InvalidDefinition.
//
// +kubebuilder:validation:XValidation:rule="self.flowKind != 'Direct' || has(self.target)",message="a Direct flow needs a target",fieldPath=".target"
// +kubebuilder:validation:XValidation:rule="self.flowKind != 'Direct' || (!has(self.steps) && !has(self.edges))",message="a Direct flow has no steps or edges",fieldPath=".steps"
// +kubebuilder:validation:XValidation:rule="self.flowKind != 'Orchestration' || (has(self.steps) && size(self.steps) > 0)",message="an Orchestration flow needs steps",fieldPath=".steps"
// +kubebuilder:validation:XValidation:rule="self.flowKind != 'Orchestration' || !has(self.target)",message="an Orchestration flow has no target; use Agent steps",fieldPath=".target"
// +kubebuilder:validation:XValidation:rule="!has(self.edges) || self.edges.all(e, has(self.steps) && self.steps.exists(s, s.name == e.from) && self.steps.exists(s, s.name == e.to))",message="every edge connects two steps of the flow",fieldPath=".edges"
type FlowDefinition struct {
	// flowKind says how the flow routes work: Direct (to one target) or Orchestration (a graph).
	// +required
	FlowKind FlowKind `json:"flowKind"`
	// displayName is the human-readable name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// description says what the flow does.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`
	// version is the semantic version the draft will be published as next.
	// +optional
	Version SemanticVersion `json:"version,omitempty"`
	// publication says who publishes the draft: Manual (the default) waits for an explicit
	// publish request; Automatic lets the Flow controller publish each generation as the
	// immutable version named by version, and activate it. A changed draft needs a new version.
	// +optional
	// +kubebuilder:default=Manual
	Publication PublicationPolicy `json:"publication,omitempty"`
	// enabled is false to refuse new runs of every version of the flow; true when omitted.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// target is what a Direct flow hands its work to.
	// +optional
	Target *FlowTarget `json:"target,omitempty"`
	// steps of an Orchestration flow, each named once.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Steps []FlowStep `json:"steps,omitempty"`
	// edges of an Orchestration flow: the step that runs after another.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	Edges []FlowEdge `json:"edges,omitempty"`
}

// FlowTarget is the target of a Direct flow.
type FlowTarget struct {
	// kind of the target; Agent is the only kind.
	// +required
	Kind FlowTargetKind `json:"kind"`
	// id of the target: the metadata.name of the Agent in the flow's workspace.
	// +required
	ID ResourceName `json:"id"`
}

// FlowStep is one step of an Orchestration flow.
//
// +kubebuilder:validation:XValidation:rule="(self.type == 'Agent') == has(self.agent)",message="agent is set on Agent steps and only on them",fieldPath=".agent"
// +kubebuilder:validation:XValidation:rule="!(self.type in ['Condition', 'Transform']) || has(self.expression)",message="Condition and Transform steps need an expression",fieldPath=".expression"
// +kubebuilder:validation:XValidation:rule="self.type in ['Router', 'Condition', 'Transform'] || !has(self.expression)",message="only Router, Condition and Transform steps have an expression",fieldPath=".expression"
// +kubebuilder:validation:XValidation:rule="self.type == 'Agent' || !has(self.prompt)",message="only Agent steps have a prompt",fieldPath=".prompt"
type FlowStep struct {
	// name identifies the step in the flow (a DNS label); edges refer to it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// type of the step.
	// +required
	Type FlowStepType `json:"type"`
	// displayName is the functional progress label shown while the step runs.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// agent is the Agent an Agent step invokes, in the flow's workspace.
	// +optional
	Agent *LocalObjectReference `json:"agent,omitempty"`
	// prompt is the message template an Agent step sends; `{{ input }}` and `{{ field }}`
	// placeholders take values from the step input. Omitted sends the input as is.
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	Prompt string `json:"prompt,omitempty"`
	// input is a CEL expression over `input` (the submitted input) and `steps` (earlier step
	// outputs) that builds this step's input; omitted passes the previous step's output.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Input string `json:"input,omitempty"`
	// expression is the CEL expression of a Router (yields an edge label), Condition (yields a
	// bool) or Transform (yields the new data) step.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression,omitempty"`
	// message is the failure message of a Failure step or the closing text of an Output step.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
	// suspend makes the step wait durably for human input before it runs; the answer is part of
	// the step input.
	// +optional
	Suspend *FlowSuspend `json:"suspend,omitempty"`
}

// FlowSuspend is a durable wait for human input, surfaced as a PendingAction.
//
// +kubebuilder:validation:XValidation:rule="(self.kind == 'Choice') == (has(self.choices) && size(self.choices) > 0)",message="a Choice suspension lists choices and no other kind does",fieldPath=".choices"
type FlowSuspend struct {
	// kind of input asked for.
	// +required
	Kind SuspendKind `json:"kind"`
	// prompt is the question shown to the person.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Prompt string `json:"prompt"`
	// choices offered by a Choice suspension, in display order.
	// +optional
	// +listType=map
	// +listMapKey=value
	// +kubebuilder:validation:MaxItems=32
	Choices []FlowChoice `json:"choices,omitempty"`
	// expiry says how long the question waits for an answer and what happens when nobody
	// answers in time; omitted waits 24 hours, then fails the run.
	// +optional
	Expiry *QuestionExpiry `json:"expiry,omitempty"`
}

// ExpiryFallback is what happens to a question nobody answered before it expired.
// +kubebuilder:validation:Enum=Fail;Reject;Proceed;Escalate
type ExpiryFallback string

const (
	// FailOnExpiry fails the run: it cannot wait for an answer that can no longer come.
	FailOnExpiry ExpiryFallback = "Fail"
	// RejectOnExpiry answers no: an Approval is rejected (the model is told the person declined),
	// a Confirmation is answered false.
	RejectOnExpiry ExpiryFallback = "Reject"
	// ProceedOnExpiry answers with the declared default and the run goes on.
	ProceedOnExpiry ExpiryFallback = "Proceed"
	// EscalateOnExpiry re-addresses the question, once, to the workspace's Owners and Admins with
	// a new expiry of the same length; if they do not answer either, the run fails.
	EscalateOnExpiry ExpiryFallback = "Escalate"
)

// QuestionExpiry says how long a question (a Flow step's suspension or a tool call's approval)
// may wait and what happens when nobody answers it in time. The admission rules check the
// combination: Reject only for Approval and Confirmation questions, Proceed with a default that
// answers the question (a Choice's value, a Confirmation's or Approval's true or false, a Text's
// text), and a reminder that comes before the expiry.
type QuestionExpiry struct {
	// expiresAfter is how long the question waits for an answer: from 1s to 720h (30 days).
	// +required
	ExpiresAfter metav1.Duration `json:"expiresAfter"`
	// onExpiry is what happens then: Fail (the default) fails the run; Reject answers no;
	// Proceed answers with default; Escalate re-addresses the question once to the workspace's
	// Owners and Admins with a new expiry of the same length.
	// +optional
	// +kubebuilder:default=Fail
	OnExpiry ExpiryFallback `json:"onExpiry,omitempty"`
	// default is the answer recorded when the question expires with onExpiry Proceed: the
	// value of one of a Choice's choices, true or false for a Confirmation or an Approval, the
	// text of a Text question.
	// +optional
	// +kubebuilder:validation:XPreserveUnknownFields
	Default *apiextensionsv1.JSON `json:"default,omitempty"`
	// remindBefore is how long before the expiry a reminder notification goes out (once);
	// omitted reminds a quarter of expiresAfter before, at most an hour before.
	// +optional
	RemindBefore *metav1.Duration `json:"remindBefore,omitempty"`
}

// FlowChoice is one answer offered by a Choice suspension.
type FlowChoice struct {
	// value recorded when the choice is picked.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Value string `json:"value"`
	// label shown on the button; omitted shows the value.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Label string `json:"label,omitempty"`
}

// FlowEdge says which step runs after another.
type FlowEdge struct {
	// from is the name of the step the edge leaves.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	From string `json:"from"`
	// to is the name of the step the edge enters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	To string `json:"to"`
	// when is the branch label that selects this edge after a Router (its expression's value) or
	// a Condition ("true" or "false"); omitted on unconditional edges.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	When string `json:"when,omitempty"`
}

// FlowStatus is the observed state of a Flow.
type FlowStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning. Ready is False with
	// InvalidDefinition (the condition message lists each finding with its field path) or
	// AgentNotFound (a target or Agent step names an Agent the workspace does not have).
	ResourceStatus `json:",inline"`
	// activeVersion is the published version that references without a version resolve to. It
	// is set when a version is published with activate (through the status subresource), so
	// editing the draft never changes it.
	// +optional
	ActiveVersion SemanticVersion `json:"activeVersion,omitempty"`
	// latestVersion is the most recently published version.
	// +optional
	LatestVersion SemanticVersion `json:"latestVersion,omitempty"`
	// definitionDigest is the digest of the canonical draft definition at observedGeneration;
	// draft runs record it with their snapshot.
	// +optional
	DefinitionDigest Digest `json:"definitionDigest,omitempty"`
}

// Flow is the editable draft of how work is routed and processed: a Direct hand-off to an Agent,
// or an Orchestration graph of steps. Publishing writes an immutable FlowVersion.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.definition.flowKind`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.definition.version`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.activeVersion`
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.definition.enabled`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Flow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the desired state of the flow (its editable draft).
	// +required
	Definition FlowDefinition `json:"definition"`
	// status is the observed state of the flow.
	// +optional
	Status FlowStatus `json:"status,omitempty"`
}

// FlowList is a list of Flows.
//
// +kubebuilder:object:root=true
type FlowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Flow `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Flow{}, &FlowList{})
}
