package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons of an Agent.
const (
	// AgentReadyCondition is True when the agent's model profile and tools resolve and the agent
	// can be invoked. Reasons, in the order they are checked: ModelProfileNotSet,
	// ModelProfileNotFound, ModelProviderNotFound, ProviderUnavailable (the profile's provider is
	// not Ready), ModelProfileNotReady, ToolNotFound, ToolDisabled; Resolved when True.
	AgentReadyCondition = ReadyCondition
)

// AgentDefinition is the desired state of an Agent (the spec calls this section "definition").
type AgentDefinition struct {
	// displayName is the human-readable name shown in the Console and the Workplace.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`

	// description says what the agent is for.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`

	// handler names the runtime handler that executes the agent.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Handler string `json:"handler,omitempty"`

	// instructions is the system prompt given to the model.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Instructions string `json:"instructions,omitempty"`

	// modelProfile selects the ModelProfile the agent calls models through.
	// +optional
	ModelProfile *ModelProfileReference `json:"modelProfile,omitempty"`

	// tools the agent may call, each named once.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Tools []AgentTool `json:"tools,omitempty"`

	// budgets bound the model usage of the agent's calls, at most one per period.
	// +optional
	// +listType=map
	// +listMapKey=period
	// +kubebuilder:validation:MaxItems=3
	Budgets []Budget `json:"budgets,omitempty"`
}

// ModelProfileReference refers to a ModelProfile by name in the same workspace or by resource id.
// +kubebuilder:validation:XValidation:rule="has(self.name) != has(self.resourceId)",message="modelProfile names exactly one of name and resourceId"
// +kubebuilder:validation:XValidation:rule="!has(self.namespace) || has(self.name)",message="namespace goes with name: a resourceId is looked up in the agent's own namespace"
type ModelProfileReference struct {
	// name of a ModelProfile in the agent's workspace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// resourceId is the server-generated id of a ModelProfile.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ResourceID string `json:"resourceId,omitempty"`

	// namespace is the resource namespace of the named ModelProfile inside the agent's workspace
	// (an installed Pack's agent bound to a profile of `default`); omitted means the agent's own.
	// +optional
	Namespace ResourceNamespace `json:"namespace,omitempty"`
}

// AgentTool names one tool an agent may call.
type AgentTool struct {
	// name of a Tool in the agent's workspace; the Tool must be enabled for the agent to be Ready.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// AgentStatus is the observed state of an Agent.
type AgentStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning.
	ResourceStatus `json:",inline"`
	// resolvedModel is where the agent's model calls go, resolved through its ModelProfile and
	// that profile's ModelProvider; set while the agent is Ready, cleared when it is not.
	// +optional
	ResolvedModel *ResolvedModel `json:"resolvedModel,omitempty"`
}

// ResolvedModel is the end of the chain Agent -> ModelProfile -> ModelProvider. It names the
// resources and the external model id only: endpoint and credential stay on the provider.
type ResolvedModel struct {
	// modelProfile is the name of the ModelProfile the agent selects (also when the agent
	// selects it by resourceId).
	// +required
	ModelProfile ResourceName `json:"modelProfile"`
	// provider is the name of the profile's ModelProvider.
	// +required
	Provider ResourceName `json:"provider"`
	// providerType is the type of that provider.
	// +required
	ProviderType ModelProviderType `json:"providerType"`
	// model is the exact external model identifier the profile asks for; omitted means the
	// provider's default model.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Model string `json:"model,omitempty"`
}

// Agent is a model-backed worker of a workspace: instructions, a model profile and tools.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.definition.displayName`
// +kubebuilder:printcolumn:name="Model Profile",type=string,JSONPath=`.definition.modelProfile.name`,priority=1
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.status.resolvedModel.model`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Agent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the desired state of the agent.
	// +optional
	Definition AgentDefinition `json:"definition,omitempty"`

	// status is the observed state of the agent.
	// +optional
	Status AgentStatus `json:"status,omitempty"`
}

// AgentList is a list of Agents.
//
// +kubebuilder:object:root=true
type AgentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Agent `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Agent{}, &AgentList{})
}
