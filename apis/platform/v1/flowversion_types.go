package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlowVersionDefinition is a published, immutable version of a Flow: its exact version and a
// snapshot of the Flow definition at publication.
//
// +kubebuilder:validation:XValidation:rule="!has(self.snapshot.version) || self.snapshot.version == self.version",message="snapshot.version, when set, equals version",fieldPath=".snapshot.version"
type FlowVersionDefinition struct {
	// flowName is the name of the Flow this version was published from, in the same workspace.
	// +required
	FlowName ResourceName `json:"flowName"`
	// version is the exact semantic version of this publication, unique per Flow.
	// +required
	Version SemanticVersion `json:"version"`
	// flowGeneration is the metadata.generation of the Flow draft that was published.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FlowGeneration int64 `json:"flowGeneration,omitempty"`
	// digest is the digest of the canonical snapshot; runs record it next to the version.
	// +optional
	Digest Digest `json:"digest,omitempty"`
	// snapshot is the Flow definition as published.
	// +required
	Snapshot FlowDefinition `json:"snapshot"`
}

// FlowVersionStatus is the observed state of a FlowVersion.
type FlowVersionStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is True when
	// the snapshot's graph is valid and the Agents it refers to exist.
	ResourceStatus `json:",inline"`
}

// FlowVersion is a published, immutable version of a Flow; published Entries and exact Flow
// references pin one. Whether it is the active version is recorded on the Flow
// (status.activeVersion), so activating another version never rewrites a FlowVersion. By
// convention it is named `<flow>-<version>` with `+` replaced by `-`.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform,shortName=fv
// +kubebuilder:printcolumn:name="Flow",type=string,JSONPath=`.definition.flowName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.definition.version`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.definition.snapshot.flowKind`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FlowVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the published version; it never changes after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="published versions are immutable"
	Definition FlowVersionDefinition `json:"definition"`
	// status is the observed state of the version.
	// +optional
	Status FlowVersionStatus `json:"status,omitempty"`
}

// FlowVersionList is a list of FlowVersions.
//
// +kubebuilder:object:root=true
type FlowVersionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlowVersion `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FlowVersion{}, &FlowVersionList{})
}
