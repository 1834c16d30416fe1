package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EntryType selects how the one generic renderer presents an Entry.
// +kubebuilder:validation:Enum=Prompt;Form
type EntryType string

const (
	// PromptEntry is a conversational composer with optional suggestions.
	PromptEntry EntryType = "Prompt"
	// FormEntry is a form of the declared fields.
	FormEntry EntryType = "Form"
)

// TaskDisplay says when a compact Task reference appears in the conversation.
// +kubebuilder:validation:Enum=Visible;Hidden;Auto
type TaskDisplay string

const (
	// TaskVisible always shows the Task reference.
	TaskVisible TaskDisplay = "Visible"
	// TaskHidden never shows it; explicit hidden is authoritative.
	TaskHidden TaskDisplay = "Hidden"
	// TaskAuto shows it when the work is actionable, interrupted, durable or substantial.
	TaskAuto TaskDisplay = "Auto"
)

// ParticipantVisibility says whether the individual participants of a run are shown.
// +kubebuilder:validation:Enum=Visible;Hidden
type ParticipantVisibility string

const (
	// ParticipantsVisible lets progress labels name each participant.
	ParticipantsVisible ParticipantVisibility = "Visible"
	// ParticipantsHidden exposes no participant identifier; one assistant is presented.
	ParticipantsHidden ParticipantVisibility = "Hidden"
)

// ResultDisplay says whether durable Result payloads appear in the end-user conversation.
// +kubebuilder:validation:Enum=Auto;Visible
type ResultDisplay string

const (
	// ResultsAuto keeps durable Result payloads out of the conversation.
	ResultsAuto ResultDisplay = "Auto"
	// ResultsVisible shows them in the conversation.
	ResultsVisible ResultDisplay = "Visible"
)

// FollowUpPolicy says what a follow-up message does when it arrives while the conversation's
// work is still in progress (LangGraph's double-texting modes).
// +kubebuilder:validation:Enum=Enqueue;Reject;Interrupt
type FollowUpPolicy string

const (
	// FollowUpEnqueue records the message and starts its run when the work in progress ends.
	FollowUpEnqueue FollowUpPolicy = "Enqueue"
	// FollowUpReject refuses the message (409) while work is in progress; nothing is recorded.
	FollowUpReject FollowUpPolicy = "Reject"
	// FollowUpInterrupt cancels the run in progress, as a person's cancel does, and starts the
	// message's run at once.
	FollowUpInterrupt FollowUpPolicy = "Interrupt"
)

// EntryFieldRole is the functional role of an Entry field. It is unrelated to the Dashboard
// presentation role Primary.
// +kubebuilder:validation:Enum=PrimaryInput;Parameter
type EntryFieldRole string

const (
	// PrimaryInputRole marks the field that carries the main request (the composer text).
	PrimaryInputRole EntryFieldRole = "PrimaryInput"
	// ParameterRole marks every other field.
	ParameterRole EntryFieldRole = "Parameter"
)

// EntryFieldType is the input control of an Entry field.
// +kubebuilder:validation:Enum=Text;MultilineText;Choice;Number;Boolean
type EntryFieldType string

const (
	// TextField is a single line of text.
	TextField EntryFieldType = "Text"
	// MultilineTextField is several lines of text.
	MultilineTextField EntryFieldType = "MultilineText"
	// ChoiceField picks one of the field's choices.
	ChoiceField EntryFieldType = "Choice"
	// NumberField is a number.
	NumberField EntryFieldType = "Number"
	// BooleanField is a yes or no.
	BooleanField EntryFieldType = "Boolean"
)

// ExposureSurface is where an Entry is presented.
// +kubebuilder:validation:Enum=Workplace;Console
type ExposureSurface string

const (
	// WorkplaceSurface presents the Entry in the Workplace.
	WorkplaceSurface ExposureSurface = "Workplace"
	// ConsoleSurface presents the Entry in Console discovery.
	ConsoleSurface ExposureSurface = "Console"
)

// ExposurePlacement is where in the Workplace an Entry is offered.
// +kubebuilder:validation:Enum=OwningSpace;TenantHome
type ExposurePlacement string

const (
	// OwningSpacePlacement offers the Entry in its owning Workspace.
	OwningSpacePlacement ExposurePlacement = "OwningSpace"
	// TenantHomePlacement also promotes it explicitly to the Tenant home.
	TenantHomePlacement ExposurePlacement = "TenantHome"
)

// ConsoleRole is a role an Entry plays in Console discovery.
// +kubebuilder:validation:Enum=Fallback
type ConsoleRole string

// FallbackConsoleRole offers the Entry as an explicit choice when a search has no authorized match.
const FallbackConsoleRole ConsoleRole = "Fallback"

// EntryPresentation is what an Entry shows and accepts; the draft and its published projection
// share it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.fields) || self.fields.filter(f, f.role == 'PrimaryInput').size() <= 1",message="at most one field has the role PrimaryInput",fieldPath=".fields"
type EntryPresentation struct {
	// displayName is the title shown to people.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// description says what the Entry is for.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`
	// type selects the Prompt or Form renderer; Prompt when omitted.
	// +optional
	// +kubebuilder:default=Prompt
	Type EntryType `json:"type,omitempty"`
	// task says when the compact Task reference appears.
	// +optional
	// +kubebuilder:default={}
	Task EntryTaskPolicy `json:"task,omitempty"`
	// participants says whether individual participants are shown.
	// +optional
	// +kubebuilder:default={}
	Participants EntryParticipantsPolicy `json:"participants,omitempty"`
	// results says whether durable Results appear in the conversation.
	// +optional
	// +kubebuilder:default={}
	Results EntryResultsPolicy `json:"results,omitempty"`
	// followUps says what a follow-up message does while work is in progress.
	// +optional
	// +kubebuilder:default={}
	FollowUps EntryFollowUpsPolicy `json:"followUps,omitempty"`
	// fields are the inputs of the Entry, in display order, each named once.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Fields []EntryField `json:"fields,omitempty"`
	// suggestions fill the composer of a Prompt Entry without sending.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	Suggestions []string `json:"suggestions,omitempty"`
	// exposure selects where the Entry is presented; Workplace in the owning space when omitted.
	// +optional
	// +kubebuilder:default={}
	Exposure EntryExposure `json:"exposure,omitempty"`
	// consoleRoles are the roles the Entry plays in Console discovery.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	ConsoleRoles []ConsoleRole `json:"consoleRoles,omitempty"`
}

// EntryTaskPolicy says when a Task reference appears.
type EntryTaskPolicy struct {
	// display is Visible, Hidden or Auto (the default).
	// +optional
	// +kubebuilder:default=Auto
	Display TaskDisplay `json:"display,omitempty"`
}

// EntryParticipantsPolicy says whether participants are shown.
type EntryParticipantsPolicy struct {
	// visibility is Visible or Hidden (the default).
	// +optional
	// +kubebuilder:default=Hidden
	Visibility ParticipantVisibility `json:"visibility,omitempty"`
}

// EntryResultsPolicy says whether durable Results appear in the conversation.
type EntryResultsPolicy struct {
	// display is Auto (the default) or Visible.
	// +optional
	// +kubebuilder:default=Auto
	Display ResultDisplay `json:"display,omitempty"`
}

// EntryFollowUpsPolicy says what a follow-up message does while the conversation's work is in
// progress. A question waiting for an answer blocks the composer under every policy.
type EntryFollowUpsPolicy struct {
	// policy is Enqueue (the default), Reject or Interrupt.
	// +optional
	// +kubebuilder:default=Enqueue
	Policy FollowUpPolicy `json:"policy,omitempty"`
}

// EntryField is one input of an Entry.
//
// +kubebuilder:validation:XValidation:rule="(self.type == 'Choice') == (has(self.choices) && size(self.choices) > 0)",message="a Choice field lists choices and no other type does",fieldPath=".choices"
type EntryField struct {
	// name is the key of the field in the submitted input.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_-]*$`
	Name string `json:"name"`
	// label is shown next to the control; omitted shows the name.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Label string `json:"label,omitempty"`
	// description is the help text of the field.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`
	// type is the input control; Text when omitted.
	// +optional
	// +kubebuilder:default=Text
	Type EntryFieldType `json:"type,omitempty"`
	// role is PrimaryInput for the main request, Parameter (the default) otherwise.
	// +optional
	// +kubebuilder:default=Parameter
	Role EntryFieldRole `json:"role,omitempty"`
	// required refuses a submission without a value.
	// +optional
	Required bool `json:"required,omitempty"`
	// default is the initial value, as text.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Default string `json:"default,omitempty"`
	// placeholder is the hint shown in an empty control.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Placeholder string `json:"placeholder,omitempty"`
	// choices of a Choice field, in display order.
	// +optional
	// +listType=map
	// +listMapKey=value
	// +kubebuilder:validation:MaxItems=32
	Choices []FlowChoice `json:"choices,omitempty"`
}

// ExposurePolicyVersion is the version of the exposure policy's shape and meaning; 1 is the only
// one so far, and an Entry that predates the field reads as version 1.
// +kubebuilder:validation:Enum=1
type ExposurePolicyVersion int32

// CurrentExposurePolicyVersion is the version of the exposure policy this API writes.
const CurrentExposurePolicyVersion ExposurePolicyVersion = 1

// EntryExposure is the exposure policy of an Entry. It never makes sibling Workspace resources
// visible; invocation always runs in the owning Workspace.
type EntryExposure struct {
	// version of the exposure policy; 1 (the only version so far) when omitted.
	// +optional
	// +kubebuilder:default=1
	Version ExposurePolicyVersion `json:"version,omitempty"`
	// surfaces where the Entry is presented; Workplace when omitted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:default={Workplace}
	Surfaces []ExposureSurface `json:"surfaces,omitempty"`
	// placement in the Workplace: OwningSpace (the default) or TenantHome (explicit promotion).
	// +optional
	// +kubebuilder:default=OwningSpace
	Placement ExposurePlacement `json:"placement,omitempty"`
}

// EntryBinding is the administrative binding of an Entry draft: exactly one Agent or one Flow.
// It is never exposed to the Workplace.
//
// +kubebuilder:validation:XValidation:rule="has(self.agent) != has(self.flow)",message="binding selects exactly one of agent and flow"
type EntryBinding struct {
	// agent binds the Entry to an Agent of the workspace; publication normalizes it through a
	// system-managed Direct Agent Flow.
	// +optional
	Agent *LocalObjectReference `json:"agent,omitempty"`
	// flow binds the Entry to a Flow, exactly (with version) or through its active version,
	// which publication pins.
	// +optional
	Flow *FlowReference `json:"flow,omitempty"`
}

// PublicationPolicy says who publishes a draft (of an Entry or a Flow).
// +kubebuilder:validation:Enum=Manual;Automatic
type PublicationPolicy string

const (
	// ManualPublication: the draft is published only by an explicit publish request
	// (POST /api/entries/{name}/publish, POST /api/flows/{name}/versions); edits stay invisible
	// until then.
	ManualPublication PublicationPolicy = "Manual"
	// AutomaticPublication: the controller publishes every generation of the draft as soon as it
	// can (an Entry once its binding resolves; a Flow as the immutable version its
	// definition.version names, activated), so a GitOps repository of Agent, Flow and Entry
	// manifests yields published Entries without an imperative call.
	AutomaticPublication PublicationPolicy = "Automatic"
)

// PublishedCondition is True when the draft's current generation is published.
const PublishedCondition = "Published"

// Reasons of the Published condition of an Entry.
const (
	// PublishedReason: the current generation of the draft is published.
	PublishedReason = "Published"
	// DraftNotPublishedReason: the draft has changes (or was never published) and its
	// publication is Manual; the Workplace sees the last publication, if any.
	DraftNotPublishedReason = "DraftNotPublished"
	// PublicationFailedReason: the automatic publication of the current generation failed; the
	// message says why, with the field path at fault.
	PublicationFailedReason = "PublicationFailed"
)

// EntryDefinition is the editable draft of an Entry (the spec's EntryDraft). Changes are invisible
// to the Workplace until the next publication writes a PublishedEntry.
type EntryDefinition struct {
	// publication says who publishes the draft: Manual (the default) waits for an explicit
	// publish request; Automatic lets the Entry controller publish each new generation once its
	// binding resolves.
	// +optional
	// +kubebuilder:default=Manual
	Publication PublicationPolicy `json:"publication,omitempty"`
	// EntryPresentation is what the Entry shows and accepts.
	// The tag has no name rather than ",inline" so that the service API's OpenAPI schemas (huma)
	// flatten it as encoding/json and controller-gen do.
	EntryPresentation `json:""`
	// binding selects the Agent or the Flow the Entry submits to.
	// +required
	Binding EntryBinding `json:"binding"`
	// continuation optionally selects another target for follow-up messages; omitted continues
	// with the initial target.
	// +optional
	Continuation *EntryBinding `json:"continuation,omitempty"`
	// budgets bound the model usage of the work started from the Entry, at most one per period.
	// They are governance, not presentation: a change applies to the next model call without a
	// publication.
	// +optional
	// +listType=map
	// +listMapKey=period
	// +kubebuilder:validation:MaxItems=3
	Budgets []Budget `json:"budgets,omitempty"`
}

// EntryStatus is the observed state of an Entry draft.
type EntryStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is True when
	// the binding resolves and the draft can be published.
	ResourceStatus `json:",inline"`
	// resolvedTarget is the exact Flow version the binding resolves to now (for an Agent
	// binding, a version of its system-managed Direct Agent Flow).
	// +optional
	ResolvedTarget *FlowVersionReference `json:"resolvedTarget,omitempty"`
	// publishedGeneration is the metadata.generation of the draft last published.
	// +optional
	PublishedGeneration int64 `json:"publishedGeneration,omitempty"`
	// publications records the latest publications of the draft, newest first: the generation
	// and revision published, when, by whom and the exact Flow versions pinned.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Publications []EntryPublicationRecord `json:"publications,omitempty"`
}

// EntryPublicationRecord is one publication of an Entry draft.
type EntryPublicationRecord struct {
	// generation is the metadata.generation of the draft that was published.
	// +required
	Generation int64 `json:"generation"`
	// revision is the metadata.resourceVersion of the draft that was published.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Revision string `json:"revision,omitempty"`
	// publishedAt is when it was published.
	// +required
	PublishedAt metav1.Time `json:"publishedAt"`
	// publishedBy is who published it: a Principal id, or the Entry controller for an automatic
	// publication.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	PublishedBy string `json:"publishedBy,omitempty"`
	// resolvedTarget is the exact Flow version the publication pinned.
	// +required
	ResolvedTarget FlowVersionReference `json:"resolvedTarget"`
	// continuationTarget is the exact Flow version pinned for follow-up messages, if any.
	// +optional
	ContinuationTarget *FlowVersionReference `json:"continuationTarget,omitempty"`
}

// Entry is the editable draft of an end-user entry point (the spec's EntryDraft): what it shows
// and whether it submits to an Agent or a Flow. Publication validates it and writes the
// PublishedEntry that the Workplace reads.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.definition.displayName`
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.definition.binding.agent.name`
// +kubebuilder:printcolumn:name="Flow",type=string,JSONPath=`.definition.binding.flow.name`
// +kubebuilder:printcolumn:name="Published",type=integer,JSONPath=`.status.publishedGeneration`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Entry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the editable draft of the Entry.
	// +required
	Definition EntryDefinition `json:"definition"`
	// status is the observed state of the draft.
	// +optional
	Status EntryStatus `json:"status,omitempty"`
}

// EntryList is a list of Entries.
//
// +kubebuilder:object:root=true
type EntryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Entry `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Entry{}, &EntryList{})
}
