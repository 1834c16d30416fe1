package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// SessionPersistence says what an agent session remembers between turns.
// +kubebuilder:validation:Enum=None;Interaction
type SessionPersistence string

const (
	// NoSessionPersistence starts every run without earlier messages.
	NoSessionPersistence SessionPersistence = "None"
	// InteractionSessionPersistence carries the recent functional messages of the Interaction.
	InteractionSessionPersistence SessionPersistence = "Interaction"
)

// ToolChoice says whether the model may, must or must not call tools.
// +kubebuilder:validation:Enum=Auto;Required;None
type ToolChoice string

const (
	// AutoToolChoice lets the model decide.
	AutoToolChoice ToolChoice = "Auto"
	// RequiredToolChoice makes the model call at least one tool.
	RequiredToolChoice ToolChoice = "Required"
	// NoToolChoice forbids tool calls.
	NoToolChoice ToolChoice = "None"
)

// RuntimeProfileDefinition is the desired state of a RuntimeProfile.
type RuntimeProfileDefinition struct {
	// displayName is the human-readable name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// description says what the profile is for.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`
	// runtime names the agent runtime the profile configures: `maf`, the built-in one, is the
	// only runtime and what an omitted runtime means.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Runtime string `json:"runtime,omitempty"`
	// session configures what a session remembers.
	// +optional
	Session *SessionSettings `json:"session,omitempty"`
	// toolInvocation configures how tools are called.
	// +optional
	ToolInvocation *ToolInvocationSettings `json:"toolInvocation,omitempty"`
	// streaming configures streamed responses.
	// +optional
	Streaming *StreamingSettings `json:"streaming,omitempty"`
	// timeoutSeconds bounds one agent run.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// options is a JSON object of runtime-specific settings passed to the runtime as is.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:pruning:PreserveUnknownFields
	Options *runtime.RawExtension `json:"options,omitempty"`
}

const (
	// BuiltinRuntime is the name of the built-in agent runtime.
	BuiltinRuntime = "maf"
	// BuiltinRuntimeProfileName is the RuntimeProfile every workspace receives.
	BuiltinRuntimeProfileName = BuiltinRuntime + "-builtin"
)

// SessionSettings configure an agent session.
type SessionSettings struct {
	// persistence is None or Interaction (earlier messages of the Interaction are carried).
	// +optional
	Persistence SessionPersistence `json:"persistence,omitempty"`
	// maxHistoryMessages caps the earlier messages carried into a run.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	MaxHistoryMessages *int32 `json:"maxHistoryMessages,omitempty"`
}

// ToolInvocationSettings configure tool calls.
type ToolInvocationSettings struct {
	// choice is Auto, Required or None.
	// +optional
	Choice ToolChoice `json:"choice,omitempty"`
	// maxCalls caps the tool calls of one run.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	MaxCalls *int32 `json:"maxCalls,omitempty"`
	// parallel allows several tool calls in one model turn.
	// +optional
	Parallel *bool `json:"parallel,omitempty"`
	// timeoutSeconds bounds one tool call.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// StreamingSettings configure streamed responses.
type StreamingSettings struct {
	// enabled streams partial responses to clients that ask for them.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// RuntimeProfileStatus is the observed state of a RuntimeProfile.
type RuntimeProfileStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is False with
	// InvalidDefinition when the profile names a runtime the platform does not have.
	ResourceStatus `json:",inline"`
}

// RuntimeProfile configures how the agent runtime runs agents: sessions, tool invocation,
// streaming and runtime-specific options. Each active workspace receives `maf-builtin`.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.definition.runtime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RuntimeProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the desired state of the profile.
	// +required
	Definition RuntimeProfileDefinition `json:"definition"`
	// status is the observed state of the profile.
	// +optional
	Status RuntimeProfileStatus `json:"status,omitempty"`
}

// RuntimeProfileList is a list of RuntimeProfiles.
//
// +kubebuilder:object:root=true
type RuntimeProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RuntimeProfile `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RuntimeProfile{}, &RuntimeProfileList{})
}
