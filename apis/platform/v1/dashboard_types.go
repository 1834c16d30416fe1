package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DashboardRole is the presentation role of an Entry on a Dashboard. It is unrelated to the Entry
// field role PrimaryInput.
// +kubebuilder:validation:Enum=Primary;Featured;Standard
type DashboardRole string

const (
	// PrimaryDashboardRole is the one optional emphasized Entry at the top.
	PrimaryDashboardRole DashboardRole = "Primary"
	// FeaturedDashboardRole entries come after the Primary one.
	FeaturedDashboardRole DashboardRole = "Featured"
	// StandardDashboardRole entries come after the Featured ones.
	StandardDashboardRole DashboardRole = "Standard"
)

// DashboardDefinition is the desired state of a Dashboard.
//
// +kubebuilder:validation:XValidation:rule="!has(self.entries) || self.entries.filter(e, e.role == 'Primary').size() <= 1",message="a Dashboard has at most one Primary entry reference",fieldPath=".entries"
type DashboardDefinition struct {
	// displayName is the title of the Dashboard.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// description says what the Dashboard is for.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`
	// isDefault marks the Dashboard the workspace root opens (the seeded one is `home`); the
	// reconciler reports a workspace with more than one default.
	// +optional
	IsDefault bool `json:"isDefault,omitempty"`
	// entries are the published Entries the Dashboard shows, each once, with their role and order.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Entries []DashboardEntryReference `json:"entries,omitempty"`
}

// DashboardEntryReference places one published Entry on a Dashboard. The Entry stays independent
// of every Dashboard that shows it.
type DashboardEntryReference struct {
	// namespace is the resource namespace of the Entry inside the workspace (a Pack's
	// `publisher.name`); `default` when omitted.
	// +optional
	// +kubebuilder:default=default
	Namespace ResourceNamespace `json:"namespace,omitempty"`
	// name of the published Entry.
	// +required
	Name ResourceName `json:"name"`
	// role is Primary, Featured or Standard (the default).
	// +optional
	// +kubebuilder:default=Standard
	Role DashboardRole `json:"role,omitempty"`
	// order sorts the entries of one role, lowest first.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Order int32 `json:"order,omitempty"`
}

// DashboardStatus is the observed state of a Dashboard.
type DashboardStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is False with
	// EntryNotFound while a referenced Entry is not published.
	ResourceStatus `json:",inline"`
}

// Dashboard composes published Entries of a workspace, with roles and order. Switching
// Dashboard does not move or filter the workspace's work.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.definition.displayName`
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.definition.isDefault`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Dashboard struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the desired state of the Dashboard.
	// +required
	Definition DashboardDefinition `json:"definition"`
	// status is the observed state of the Dashboard.
	// +optional
	Status DashboardStatus `json:"status,omitempty"`
}

// DashboardList is a list of Dashboards.
//
// +kubebuilder:object:root=true
type DashboardList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Dashboard `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Dashboard{}, &DashboardList{})
}
