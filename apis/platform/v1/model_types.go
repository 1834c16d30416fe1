package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModelDefinition identifies a discovered model. Discovery writes it; it never changes.
//
// +kubebuilder:validation:XValidation:rule="self.provider == oldSelf.provider && self.modelId == oldSelf.modelId",message="a Model's provider and modelId never change"
type ModelDefinition struct {
	// provider is the ModelProvider that serves the model, in the same workspace.
	// +required
	Provider LocalObjectReference `json:"provider"`
	// modelId is the exact external model identifier at the provider.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ModelID string `json:"modelId"`
	// displayName is the name the provider reports or an operator chose.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
}

// ModelAvailability says whether the last discovery still found a model.
// +kubebuilder:validation:Enum=Available;Missing
type ModelAvailability string

const (
	// ModelAvailable: the last discovery listed the model.
	ModelAvailable ModelAvailability = "Available"
	// ModelMissing: the last discovery did not list it; it may reappear.
	ModelMissing ModelAvailability = "Missing"
)

// ModelStatus is the observed state of a Model: its observed and effective specifications, kept
// apart from the provider's override.
type ModelStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning.
	ResourceStatus `json:",inline"`
	// availability says whether the last discovery found the model.
	// +optional
	Availability ModelAvailability `json:"availability,omitempty"`
	// lastSeenTime is when discovery last listed the model.
	// +optional
	LastSeenTime *metav1.Time `json:"lastSeenTime,omitempty"`
	// observedSpecification is what the provider reports about the model.
	// +optional
	ObservedSpecification *ModelSpecification `json:"observedSpecification,omitempty"`
	// effectiveSpecification is the observed one with the provider's override applied,
	// intersected with what the provider adapter and the runtime support.
	// +optional
	EffectiveSpecification *ModelSpecification `json:"effectiveSpecification,omitempty"`
}

// Model is a model a ModelProvider serves. Models are discovered and owned by their provider
// (an owner reference); people do not author them. By convention a Model is named
// `<provider>-<model id>` folded to a DNS subdomain.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.definition.provider.name`
// +kubebuilder:printcolumn:name="Model ID",type=string,JSONPath=`.definition.modelId`
// +kubebuilder:printcolumn:name="Availability",type=string,JSONPath=`.status.availability`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Model struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition identifies the model.
	// +required
	Definition ModelDefinition `json:"definition"`
	// status is the observed state of the model.
	// +optional
	Status ModelStatus `json:"status,omitempty"`
}

// ModelList is a list of Models.
//
// +kubebuilder:object:root=true
type ModelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Model `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Model{}, &ModelList{})
}
