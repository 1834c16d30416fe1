package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModelProviderType is the wire protocol (adapter) a ModelProvider speaks.
// +kubebuilder:validation:Enum=OpenAICompatible;AzureOpenAI;Ollama;Deterministic
type ModelProviderType string

const (
	// OpenAICompatibleProvider speaks the OpenAI chat and models API at endpoint (OpenAI itself,
	// vLLM, LM Studio, llama.cpp server, gateways, ...).
	OpenAICompatibleProvider ModelProviderType = "OpenAICompatible"
	// AzureOpenAIProvider speaks Azure OpenAI at an Azure resource endpoint.
	AzureOpenAIProvider ModelProviderType = "AzureOpenAI"
	// OllamaProvider speaks Ollama's native API at endpoint.
	OllamaProvider ModelProviderType = "Ollama"
	// DeterministicProvider is the offline, in-process provider for tests and diagnostics; it
	// needs no endpoint and no credential.
	DeterministicProvider ModelProviderType = "Deterministic"
)

// InputModality is a kind of content a model accepts.
// +kubebuilder:validation:Enum=Text;Image;Audio;File
type InputModality string

// OutputFormat is the shape of a model's or a profile's output.
// +kubebuilder:validation:Enum=Text;Json;JsonSchema
type OutputFormat string

const (
	// TextOutput is free text.
	TextOutput OutputFormat = "Text"
	// JSONOutput is any JSON value (JSON mode).
	JSONOutput OutputFormat = "Json"
	// JSONSchemaOutput is JSON conforming to a schema (structured output).
	JSONSchemaOutput OutputFormat = "JsonSchema"
)

// ModelSpecification describes what a model can do. Every field is optional: in an override an
// omitted field keeps the observed value; in an observed specification it means unknown.
type ModelSpecification struct {
	// contextWindowTokens is the total number of tokens of input and output the model accepts.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ContextWindowTokens *int64 `json:"contextWindowTokens,omitempty"`
	// maxOutputTokens is the largest number of tokens the model produces in one response.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxOutputTokens *int64 `json:"maxOutputTokens,omitempty"`
	// inputModalities the model accepts.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	InputModalities []InputModality `json:"inputModalities,omitempty"`
	// outputFormats the model can produce.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	OutputFormats []OutputFormat `json:"outputFormats,omitempty"`
	// toolCalling says whether the model can call tools.
	// +optional
	ToolCalling *bool `json:"toolCalling,omitempty"`
	// streaming says whether the model can stream its response.
	// +optional
	Streaming *bool `json:"streaming,omitempty"`
	// reasoning says whether the model accepts a reasoning effort.
	// +optional
	Reasoning *bool `json:"reasoning,omitempty"`
	// temperature says whether the model accepts a sampling temperature.
	// +optional
	Temperature *bool `json:"temperature,omitempty"`
}

// ModelSpecificationOverride corrects or completes the observed specification of one model.
type ModelSpecificationOverride struct {
	// modelId is the exact external model identifier the override applies to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ModelID string `json:"modelId"`
	// specification holds the overridden values; omitted fields keep the observed ones.
	// +required
	Specification ModelSpecification `json:"specification"`
}

// ModelProviderDefinition is the desired state of a ModelProvider.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'Deterministic' || has(self.endpoint)",message="every provider type but Deterministic needs an endpoint",fieldPath=".endpoint"
type ModelProviderDefinition struct {
	// type is the protocol the provider speaks: OpenAICompatible, AzureOpenAI, Ollama or
	// Deterministic.
	// +required
	Type ModelProviderType `json:"type"`
	// displayName is the human-readable name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// description says what the provider is for.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`
	// endpoint is the absolute http(s) base URL of the provider API.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHost() != ''",message="endpoint is an absolute http or https URL"
	Endpoint string `json:"endpoint,omitempty"`
	// credential is the Secret holding the API key; the value is resolved only for requests to
	// endpoint.
	// +optional
	Credential *SecretReference `json:"credential,omitempty"`
	// specificationOverrides correct the observed specification of models, keyed by exact
	// external model id.
	// +optional
	// +listType=map
	// +listMapKey=modelId
	// +kubebuilder:validation:MaxItems=64
	SpecificationOverrides []ModelSpecificationOverride `json:"specificationOverrides,omitempty"`
	// pricing is what the provider's models cost per million tokens: the cost of every model
	// call is its tokens times these prices. A model without a price costs nothing.
	// +optional
	Pricing *ModelPricing `json:"pricing,omitempty"`
}

// ModelProviderStatus is the observed state of a ModelProvider. Reads never contact the provider;
// discovery and connectivity tests are explicit.
type ModelProviderStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning. Ready is a static
	// check of the definition: False with InvalidDefinition (no usable endpoint) or SecretNotFound
	// (the credential Secret does not exist); connectivity is not part of it.
	ResourceStatus `json:",inline"`
	// lastDiscoveryTime is when models were last discovered.
	// +optional
	LastDiscoveryTime *metav1.Time `json:"lastDiscoveryTime,omitempty"`
	// models is the number of Models discovered and still present.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Models int32 `json:"models,omitempty"`
}

// ModelProvider declares where models are served and how to reach them. It cannot be deleted
// while a ModelProfile refers to it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.definition.type`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.definition.endpoint`
// +kubebuilder:printcolumn:name="Models",type=integer,JSONPath=`.status.models`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ModelProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the desired state of the provider.
	// +required
	Definition ModelProviderDefinition `json:"definition"`
	// status is the observed state of the provider.
	// +optional
	Status ModelProviderStatus `json:"status,omitempty"`
}

// ModelProviderList is a list of ModelProviders.
//
// +kubebuilder:object:root=true
type ModelProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModelProvider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ModelProvider{}, &ModelProviderList{})
}
