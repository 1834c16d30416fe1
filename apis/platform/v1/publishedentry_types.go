package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PublishedEntryDefinition is the immutable projection of an Entry that the Workplace reads. It
// has no administrative binding and no provider or runtime object: only the exact Flow version it
// submits to.
type PublishedEntryDefinition struct {
	// EntryPresentation is what the Entry shows and accepts, as published.
	// The tag has no name rather than ",inline" so that the service API's OpenAPI schemas (huma)
	// flatten it as encoding/json and controller-gen do.
	EntryPresentation `json:""`
	// ownerWorkspaceId is the id of the one Workspace the Entry belongs to and executes in.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	OwnerWorkspaceID string `json:"ownerWorkspaceId"`
	// resolvedTarget is the exact, pinned Flow version a submission starts.
	// +required
	ResolvedTarget FlowVersionReference `json:"resolvedTarget"`
	// continuationTarget is the exact Flow version follow-up messages start; omitted continues
	// with resolvedTarget.
	// +optional
	ContinuationTarget *FlowVersionReference `json:"continuationTarget,omitempty"`
	// entryGeneration is the metadata.generation of the Entry draft this projection was
	// published from.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EntryGeneration int64 `json:"entryGeneration,omitempty"`
	// publishedAt is when the projection was published.
	// +optional
	PublishedAt *metav1.Time `json:"publishedAt,omitempty"`
	// publishedBy is who published it: a Principal id, or the Entry controller for an automatic
	// publication.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	PublishedBy string `json:"publishedBy,omitempty"`
}

// PublishedTargetState says whether the pinned Flow version can run now.
// +kubebuilder:validation:Enum=Executable;Disabled;Unavailable
type PublishedTargetState string

const (
	// TargetExecutable: the pinned Flow version exists, is valid and its Flow is enabled.
	TargetExecutable PublishedTargetState = "Executable"
	// TargetDisabled: the Flow is disabled.
	TargetDisabled PublishedTargetState = "Disabled"
	// TargetUnavailable: the pinned version or something it needs is missing; the Ready
	// condition's reason is the stable reason code.
	TargetUnavailable PublishedTargetState = "Unavailable"
)

// PublishedEntryStatus is the observed state of a PublishedEntry.
type PublishedEntryStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; the Ready reason is
	// the stable reason code of targetState.
	ResourceStatus `json:",inline"`
	// targetState says whether the pinned Flow version is executable, disabled or unavailable;
	// submission rechecks it.
	// +optional
	TargetState PublishedTargetState `json:"targetState,omitempty"`
}

// PublishedEntry is the immutable projection of an Entry that the Workplace renders and submits
// through. It is named after its Entry; publishing again replaces it as a whole (delete, then
// create) rather than editing it, so no reader ever sees a mix of two publications.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform,shortName=pentry
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.definition.displayName`
// +kubebuilder:printcolumn:name="Flow",type=string,JSONPath=`.definition.resolvedTarget.name`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.definition.resolvedTarget.version`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.targetState`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PublishedEntry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the published projection; it never changes after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="published versions are immutable"
	Definition PublishedEntryDefinition `json:"definition"`
	// status is the observed state of the published Entry.
	// +optional
	Status PublishedEntryStatus `json:"status,omitempty"`
}

// PublishedEntryList is a list of PublishedEntries.
//
// +kubebuilder:object:root=true
type PublishedEntryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PublishedEntry `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PublishedEntry{}, &PublishedEntryList{})
}
