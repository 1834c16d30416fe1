package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VaultProvider is where a Vault stores values.
// +kubebuilder:validation:Enum=Local
type VaultProvider string

// LocalVault stores values in the SQL store, encrypted with AES-256-GCM under the master key.
const LocalVault VaultProvider = "Local"

// VaultDefinition is the desired state of a Vault. Like Secrets, Vaults are namespaced: see the
// note in secret_types.go.
type VaultDefinition struct {
	// displayName is the human-readable name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// provider stores the values; Local is the only provider.
	// +optional
	// +kubebuilder:default=Local
	Provider VaultProvider `json:"provider,omitempty"`
	// usePolicy lets Secrets of descendant scopes store their values here; nobody may by default.
	// +optional
	UsePolicy *UsePolicy `json:"usePolicy,omitempty"`
}

// VaultAvailability says whether a Vault can store and read values.
// +kubebuilder:validation:Enum=Available;Unavailable
type VaultAvailability string

const (
	// VaultAvailable: the Vault is initialized and its key is loaded.
	VaultAvailable VaultAvailability = "Available"
	// VaultUnavailableState: the Vault is not initialized or its key cannot be loaded.
	VaultUnavailableState VaultAvailability = "Unavailable"
)

// VaultStatus is the observed state of a Vault.
type VaultStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is False with
	// MasterKeyMissing until the Local Vault's master key exists, MasterKeyInvalid when it is not
	// 32 bytes of Base64, MasterKeyReplaced when values of the Vault were stored under another key.
	ResourceStatus `json:",inline"`
	// availability is Available once the Vault can store and read values.
	// +optional
	Availability VaultAvailability `json:"availability,omitempty"`
}

// Vault is a store for Secret values. Values never pass through the kube API.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.definition.provider`
// +kubebuilder:printcolumn:name="Availability",type=string,JSONPath=`.status.availability`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Vault struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the desired state of the Vault.
	// +required
	Definition VaultDefinition `json:"definition"`
	// status is the observed state of the Vault.
	// +optional
	Status VaultStatus `json:"status,omitempty"`
}

// VaultList is a list of Vaults.
//
// +kubebuilder:object:root=true
type VaultList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Vault `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Vault{}, &VaultList{})
}
