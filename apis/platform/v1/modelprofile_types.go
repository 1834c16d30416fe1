package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ReasoningEffort is how much reasoning a model should spend before it answers.
// +kubebuilder:validation:Enum=None;Minimal;Low;Medium;High
type ReasoningEffort string

const (
	// NoReasoning asks for no reasoning.
	NoReasoning ReasoningEffort = "None"
	// MinimalReasoning asks for as little reasoning as the model allows.
	MinimalReasoning ReasoningEffort = "Minimal"
	// LowReasoning asks for little reasoning.
	LowReasoning ReasoningEffort = "Low"
	// MediumReasoning asks for the model's usual reasoning.
	MediumReasoning ReasoningEffort = "Medium"
	// HighReasoning asks for thorough reasoning.
	HighReasoning ReasoningEffort = "High"
)

// ModelProfileDefinition is the desired state of a ModelProfile: one provider reference and a
// portable generation, reasoning and output intent. It never copies provider details (endpoint,
// credential): it persists only the provider resource reference.
type ModelProfileDefinition struct {
	// displayName is the human-readable name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// description says what the profile is for.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`
	// provider is the one ModelProvider the profile uses, in the same workspace.
	// +required
	Provider LocalObjectReference `json:"provider"`
	// modelId is the exact external model identifier at the provider; omitted uses the
	// provider's default model (the Deterministic provider needs none).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ModelID string `json:"modelId,omitempty"`
	// generation is the sampling intent.
	// +optional
	Generation *GenerationIntent `json:"generation,omitempty"`
	// reasoning is the reasoning intent.
	// +optional
	Reasoning *ReasoningIntent `json:"reasoning,omitempty"`
	// output is the output format intent.
	// +optional
	Output *OutputIntent `json:"output,omitempty"`
	// providerOptions pass provider-specific settings, keyed by provider type; only the entry of
	// the referenced provider's type is used.
	// +optional
	// +listType=map
	// +listMapKey=provider
	// +kubebuilder:validation:MaxItems=4
	ProviderOptions []ProviderOptions `json:"providerOptions,omitempty"`
}

// GenerationIntent is the portable sampling intent. Decimal values are strings: CRDs avoid
// floating-point fields.
type GenerationIntent struct {
	// temperature is the sampling temperature from "0" to "2", with at most three decimals
	// ("0.7").
	// +optional
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:Pattern=`^([01](\.[0-9]{1,3})?|2(\.0{1,3})?)$`
	Temperature string `json:"temperature,omitempty"`
	// topP is the nucleus sampling mass from "0" to "1", with at most three decimals ("0.9").
	// +optional
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,3})?|1(\.0{1,3})?)$`
	TopP string `json:"topP,omitempty"`
	// maxOutputTokens caps the number of tokens of one response.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	MaxOutputTokens *int32 `json:"maxOutputTokens,omitempty"`
	// stopSequences end the response when produced.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=64
	StopSequences []string `json:"stopSequences,omitempty"`
}

// ReasoningIntent is the portable reasoning intent.
type ReasoningIntent struct {
	// effort is how much the model should reason: None, Minimal, Low, Medium or High.
	// +optional
	Effort ReasoningEffort `json:"effort,omitempty"`
	// maxReasoningTokens caps the tokens spent on reasoning where the provider supports a budget.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	MaxReasoningTokens *int32 `json:"maxReasoningTokens,omitempty"`
}

// OutputIntent is the portable output intent.
//
// +kubebuilder:validation:XValidation:rule="(self.format == 'JsonSchema') == has(self.jsonSchema)",message="jsonSchema is set exactly when format is JsonSchema",fieldPath=".jsonSchema"
type OutputIntent struct {
	// format of the output: Text (the default), Json or JsonSchema.
	// +optional
	// +kubebuilder:default=Text
	Format OutputFormat `json:"format,omitempty"`
	// jsonSchema is the JSON Schema the output conforms to, for the JsonSchema format.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	JSONSchema *runtime.RawExtension `json:"jsonSchema,omitempty"`
}

// ProviderOptions are provider-specific settings for one provider type.
type ProviderOptions struct {
	// provider is the provider type the options apply to.
	// +required
	Provider ModelProviderType `json:"provider"`
	// options is a JSON object passed to that provider's adapter.
	// +required
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:pruning:PreserveUnknownFields
	Options runtime.RawExtension `json:"options"`
}

// ModelProfileStatus is the observed state of a ModelProfile.
type ModelProfileStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is False with
	// ModelProviderNotFound, or ProviderUnavailable while the provider is not Ready.
	ResourceStatus `json:",inline"`
	// providerType is the type of the referenced provider, while it exists.
	// +optional
	ProviderType ModelProviderType `json:"providerType,omitempty"`
	// model is the discovered Model of the provider whose modelId the profile asks for; omitted
	// while discovery has not listed it (which does not make the profile not Ready).
	// +optional
	Model *LocalObjectReference `json:"model,omitempty"`
}

// ModelProfile is a portable generation, reasoning and output intent over one ModelProvider.
// Agents refer to a profile, never to a provider or a model directly.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.definition.provider.name`
// +kubebuilder:printcolumn:name="Model ID",type=string,JSONPath=`.definition.modelId`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ModelProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the desired state of the profile.
	// +required
	Definition ModelProfileDefinition `json:"definition"`
	// status is the observed state of the profile.
	// +optional
	Status ModelProfileStatus `json:"status,omitempty"`
}

// ModelProfileList is a list of ModelProfiles.
//
// +kubebuilder:object:root=true
type ModelProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModelProfile `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ModelProfile{}, &ModelProfileList{})
}
