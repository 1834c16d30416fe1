package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scope of Secrets and Vaults: both kinds are namespaced. A workspace-owned Secret or Vault lives
// in its workspace's namespace, as every workspace resource does, so the namespace is the owner
// scope `/workspaces/<id>`. Secrets and Vaults owned by a tenant or by the instance are the same
// kinds stored in a namespace reserved for that scope, `platform-tenant-<tenant id>` and
// `platform-instance` (package ownerscope), which only Platform administrators reach. Admission
// in the embedded kube API checks grants and references against the scope tree.

// SecretType is the type of a Secret's value.
// +kubebuilder:validation:Enum=opaque
type SecretType string

// OpaqueSecret is a value the platform never interprets.
const OpaqueSecret SecretType = "opaque"

// SecretDefinition is the metadata of a Secret. There is no value field, ever: the value is
// written only through the service API's write-only value route, into the Vault, and nothing
// reads it back.
type SecretDefinition struct {
	// displayName is the human-readable name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// vault is the Vault that stores the value; an ancestor Vault needs a usePolicy grant for the
	// Secret's scope.
	// +required
	Vault VaultReference `json:"vault"`
	// vaultKey is the entry name of the value inside the Vault (it may be a path); omitted means
	// the Secret's name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`
	VaultKey string `json:"vaultKey,omitempty"`
	// type of the value; opaque is the only type.
	// +optional
	// +kubebuilder:default=opaque
	Type SecretType `json:"type,omitempty"`
	// usePolicy lets descendant scopes use the Secret; nobody may by default.
	// +optional
	UsePolicy *UsePolicy `json:"usePolicy,omitempty"`
}

// SecretValueState says whether the Vault holds a value for a Secret.
// +kubebuilder:validation:Enum=Configured;Missing
type SecretValueState string

const (
	// SecretConfigured: the Vault holds a value.
	SecretConfigured SecretValueState = "Configured"
	// SecretMissing: no value has been written, or it was removed.
	SecretMissing SecretValueState = "Missing"
)

// SecretStatus is the observed state of a Secret. It never carries the value.
type SecretStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is False with
	// VaultNotFound, UseNotGranted or InvalidScopeRef (the Vault reference does not resolve),
	// VaultUnavailable or SecretValueMissing.
	ResourceStatus `json:",inline"`
	// state is Configured when the Vault holds a value, Missing otherwise.
	// +optional
	State SecretValueState `json:"state,omitempty"`
	// valueUpdatedTime is when the value was last written.
	// +optional
	ValueUpdatedTime *metav1.Time `json:"valueUpdatedTime,omitempty"`
}

// Secret is the metadata of a credential: which Vault entry holds the value and who may use it.
// Its name is its identity and cannot change. The value itself is write-only and never part of
// the object. Kubectl spells the kind `secrets.platform.dev` where core Secrets also exist.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.definition.displayName`
// +kubebuilder:printcolumn:name="Vault",type=string,JSONPath=`.definition.vault.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Secret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the metadata of the Secret.
	// +required
	Definition SecretDefinition `json:"definition"`
	// status is the observed state of the Secret.
	// +optional
	Status SecretStatus `json:"status,omitempty"`
}

// SecretList is a list of Secrets.
//
// +kubebuilder:object:root=true
type SecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Secret `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Secret{}, &SecretList{})
}
