package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types shared by every Management kind.
const (
	// ReadyCondition is True when the object's definition is valid, everything it refers to
	// resolves and the Runtime plane can use it. Every kind reports it.
	ReadyCondition = "Ready"
)

// Reasons of the conditions of Management kinds. Reasons are CamelCase for machines; the
// condition message is the sentence for people.
const (
	// ResolvedReason: the definition is valid and every reference resolves (Ready is True).
	ResolvedReason = "Resolved"
	// ReconcilingReason: the object has not been reconciled since its last change.
	ReconcilingReason = "Reconciling"
	// InvalidDefinitionReason: the definition fails a check the CRD schema cannot express
	// (a Flow graph without exactly one Input step, an unknown IANA time zone, ...).
	InvalidDefinitionReason = "InvalidDefinition"

	// AgentNotFoundReason: a referenced Agent does not exist in the workspace.
	AgentNotFoundReason = "AgentNotFound"
	// FlowNotFoundReason: a referenced Flow does not exist in the workspace.
	FlowNotFoundReason = "FlowNotFound"
	// FlowVersionNotFoundReason: a referenced exact Flow version has not been published.
	FlowVersionNotFoundReason = "FlowVersionNotFound"
	// FlowDisabledReason: the referenced Flow exists but is disabled.
	FlowDisabledReason = "FlowDisabled"
	// NoActiveVersionReason: a Flow reference without a version found no active version.
	NoActiveVersionReason = "NoActiveVersion"
	// EntryNotFoundReason: a Dashboard refers to an Entry that is not published.
	EntryNotFoundReason = "EntryNotFound"
	// ModelProfileNotSetReason: an Agent selects no ModelProfile, so it has no model to call.
	ModelProfileNotSetReason = "ModelProfileNotSet"
	// ModelProfileNotFoundReason: a referenced ModelProfile does not exist.
	ModelProfileNotFoundReason = "ModelProfileNotFound"
	// ModelProfileNotReadyReason: a referenced ModelProfile exists but is not Ready.
	ModelProfileNotReadyReason = "ModelProfileNotReady"
	// ModelProviderNotFoundReason: a referenced ModelProvider does not exist.
	ModelProviderNotFoundReason = "ModelProviderNotFound"
	// ModelNotFoundReason: the provider has not discovered the requested model.
	ModelNotFoundReason = "ModelNotFound"
	// ProviderUnavailableReason: a model or tool provider could not be reached or refused, or a
	// referenced provider exists but is not Ready.
	ProviderUnavailableReason = "ProviderUnavailable"
	// CommandNotAllowedReason: a STDIO ToolProvider's command is not one the instance allows
	// (Platform:Tools:AllowedCommands), so it is never started.
	CommandNotAllowedReason = "CommandNotAllowed"
	// ToolNotFoundReason: a referenced Tool does not exist.
	ToolNotFoundReason = "ToolNotFound"
	// ToolDisabledReason: a referenced Tool exists but is not enabled.
	ToolDisabledReason = "ToolDisabled"
	// SecretNotFoundReason: a referenced Secret does not exist at the named scope.
	SecretNotFoundReason = "SecretNotFound"
	// SecretValueMissingReason: the Secret exists but its Vault holds no value for it.
	SecretValueMissingReason = "SecretValueMissing"
	// VaultNotFoundReason: the Vault a Secret refers to does not exist.
	VaultNotFoundReason = "VaultNotFound"
	// VaultUnavailableReason: the Vault exists but cannot be read (no master key, ...).
	VaultUnavailableReason = "VaultUnavailable"
	// UseNotGrantedReason: an ancestor Secret or Vault has no usePolicy grant for the consumer.
	UseNotGrantedReason = "UseNotGranted"
	// InvalidScopeRefReason: a reference's scopeRef names no scope of the instance, or a scope that
	// is neither the referrer's own nor one of its ancestors.
	InvalidScopeRefReason = "InvalidScopeRef"
	// MasterKeyMissingReason: the Local Vault has no master key yet (no key file, no variable).
	MasterKeyMissingReason = "MasterKeyMissing"
	// MasterKeyInvalidReason: the master key in the key file or the variable is not 32 bytes of
	// Base64.
	MasterKeyInvalidReason = "MasterKeyInvalid"
	// MasterKeyReplacedReason: values of the Vault were stored under another master key and cannot
	// be read with the current one.
	MasterKeyReplacedReason = "MasterKeyReplaced"
	// RefreshFailedReason: the last refresh of a source registry failed.
	RefreshFailedReason = "RefreshFailed"
	// StaleReason: a source registry has not validated its index within staleAfter.
	StaleReason = "Stale"
	// InstallFailedReason: a Pack installation failed and was rolled back.
	InstallFailedReason = "InstallFailed"
	// DisabledReason: the definition resolves but the object is turned off (a Tool agents may not
	// call, a Trigger that does not fire, a registry that is not refreshed); Ready stays True,
	// because Ready says the definition resolves, and the reason says it is off.
	DisabledReason = "Disabled"
	// ToolProviderNotFoundReason: a referenced ToolProvider does not exist.
	ToolProviderNotFoundReason = "ToolProviderNotFound"
	// DuplicateDefaultReason: another, older Dashboard of the workspace is already the default;
	// the workspace root keeps opening the oldest one.
	DuplicateDefaultReason = "DuplicateDefault"
	// ResourceNotFoundReason: a resource an InstalledPack manages does not exist any more.
	ResourceNotFoundReason = "ResourceNotFound"
	// ResourcesPreservedReason: an uninstall left modified, detached or referenced resources of
	// a Pack in place; its record stays, Degraded, listing them.
	ResourcesPreservedReason = "ResourcesPreserved"
)

// ProvisioningState summarizes, in one word, how far the Runtime plane got with an object.
// +kubebuilder:validation:Enum=Pending;Provisioned;Failed
type ProvisioningState string

const (
	// ProvisioningPending: accepted, not yet (or no longer) provisioned.
	ProvisioningPending ProvisioningState = "Pending"
	// ProvisioningProvisioned: the Runtime plane holds the current generation.
	ProvisioningProvisioned ProvisioningState = "Provisioned"
	// ProvisioningFailed: provisioning of the current generation failed; see the conditions.
	ProvisioningFailed ProvisioningState = "Failed"
)

// ResourceStatus is the part of the status every Management kind has.
type ResourceStatus struct {
	// observedGeneration is the metadata.generation the status was last computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions describe the current state of the object; every kind reports Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// provisioning says whether the Runtime plane holds the current generation.
	// +optional
	Provisioning ProvisioningState `json:"provisioning,omitempty"`
}

// ResourceName is the metadata.name of another object (a DNS subdomain).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
type ResourceName string

// ResourceNamespace is a namespace inside a workspace, not a Kubernetes namespace (which is the
// workspace itself): `default` for what people author, `<publisher>.<name>` for an installed Pack.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=127
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
type ResourceNamespace string

// DefaultResourceNamespace is the namespace of the resources people author in a workspace.
const DefaultResourceNamespace ResourceNamespace = "default"

// ScopeRef names an owner scope: `/instance`, `/tenants/<tenant_id>` or
// `/workspaces/<workspace_id>`.
// +kubebuilder:validation:MaxLength=140
// +kubebuilder:validation:Pattern=`^(/instance|/tenants/[A-Za-z0-9][A-Za-z0-9._-]{0,127}|/workspaces/[A-Za-z0-9][A-Za-z0-9._-]{0,127})$`
type ScopeRef string

// InstanceScope is the ScopeRef of the instance.
const InstanceScope ScopeRef = "/instance"

// SemanticVersion is a strict semantic version 2.0.0 (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], no
// leading "v", no leading zeros).
// +kubebuilder:validation:MaxLength=128
// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$`
type SemanticVersion string

// TimeSpan is a duration in the form [days.]hh:mm:ss[.fffffff], for example `00:05:00` or
// `1.00:00:00`.
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^([0-9]{1,5}\.)?([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,7})?$`
type TimeSpan string

// Digest is a content digest `sha256:<64 lowercase hex digits>`.
// +kubebuilder:validation:MaxLength=71
// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
type Digest string

// LocalObjectReference refers to an object of a known kind in the same workspace.
type LocalObjectReference struct {
	// name of the object.
	// +required
	Name ResourceName `json:"name"`
}

// SecretReference refers to a Secret. An omitted scopeRef means the consumer's own scope; a
// Secret of an ancestor scope must be named with its exact scopeRef (names are never searched
// through parent scopes) and must grant use to the consumer's scope in its usePolicy.
type SecretReference struct {
	// name of the Secret.
	// +required
	Name ResourceName `json:"name"`
	// scopeRef is the scope that owns the Secret; omitted means the consumer's own scope.
	// +optional
	ScopeRef ScopeRef `json:"scopeRef,omitempty"`
	// namespace is the resource namespace of the Secret inside its scope; omitted means `default`.
	// +optional
	Namespace ResourceNamespace `json:"namespace,omitempty"`
}

// VaultReference refers to a Vault, with the same scope rules as a SecretReference.
type VaultReference struct {
	// name of the Vault.
	// +required
	Name ResourceName `json:"name"`
	// scopeRef is the scope that owns the Vault; omitted means the Secret's own scope.
	// +optional
	ScopeRef ScopeRef `json:"scopeRef,omitempty"`
}

// FlowReference refers to a Flow of the same workspace, exactly (with version) or through its
// active version (without). It never reaches another workspace.
type FlowReference struct {
	// name of the Flow.
	// +required
	Name ResourceName `json:"name"`
	// namespace is the resource namespace of the Flow inside the workspace (a Pack's
	// `publisher.name`); omitted means `default`.
	// +optional
	Namespace ResourceNamespace `json:"namespace,omitempty"`
	// version pins an exact published version; omitted means the Flow's active version at the
	// time of use.
	// +optional
	Version SemanticVersion `json:"version,omitempty"`
}

// FlowVersionReference is an exact, pinned reference to a published, immutable Flow version.
type FlowVersionReference struct {
	// name of the Flow.
	// +required
	Name ResourceName `json:"name"`
	// namespace is the resource namespace of the Flow inside the workspace; omitted means `default`.
	// +optional
	Namespace ResourceNamespace `json:"namespace,omitempty"`
	// version is the exact published version.
	// +required
	Version SemanticVersion `json:"version"`
}

// UsePolicy says which scopes below the owner may use a Secret or a Vault. Nobody has use by
// default: an omitted policy is an empty grant list.
type UsePolicy struct {
	// grants lists the scopes allowed to use the resource, each at most once.
	// +optional
	// +listType=map
	// +listMapKey=scopeRef
	// +kubebuilder:validation:MaxItems=64
	Grants []UseGrant `json:"grants,omitempty"`
}

// UseGrant allows one scope (and optionally its descendants) to use a resource. A grant may only
// target the owner's own branch: never a sibling, an ancestor or another tenant's branch (checked
// by admission, which knows the scope tree).
type UseGrant struct {
	// scopeRef is the scope given use.
	// +required
	ScopeRef ScopeRef `json:"scopeRef"`
	// includeDescendants extends the grant to every scope below scopeRef (a tenant's workspaces).
	// +optional
	IncludeDescendants bool `json:"includeDescendants,omitempty"`
}
