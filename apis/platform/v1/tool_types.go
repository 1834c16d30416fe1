package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ToolDefinition identifies a discovered tool and says whether agents may call it.
//
// +kubebuilder:validation:XValidation:rule="self.provider == oldSelf.provider && self.toolName == oldSelf.toolName",message="a Tool's provider and toolName never change"
type ToolDefinition struct {
	// provider is the ToolProvider that serves the tool, in the same workspace.
	// +required
	Provider LocalObjectReference `json:"provider"`
	// toolName is the exact name of the tool at the provider.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ToolName string `json:"toolName"`
	// enabled lets agents call the tool; discovered tools are disabled until someone enables them.
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled,omitempty"`
	// requiresApproval makes every call of the tool inside a run wait for a person: the run
	// suspends on a PendingAction of kind approval, and a rejection returns to the model with the
	// reason. Such a tool is not offered at /mcp, where nobody could approve the call.
	// +optional
	RequiresApproval bool `json:"requiresApproval,omitempty"`
	// approvalExpiry says how long the approval of a call waits and what happens when nobody
	// decides in time (Fail, Reject, Proceed with default true or false, Escalate); omitted
	// waits 24 hours, then fails the run. Only with requiresApproval.
	// +optional
	ApprovalExpiry *QuestionExpiry `json:"approvalExpiry,omitempty"`
	// displayName is the name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
}

// ToolAvailability says whether the last discovery still found a tool.
// +kubebuilder:validation:Enum=Available;Missing
type ToolAvailability string

const (
	// ToolAvailable: the last discovery listed the tool.
	ToolAvailable ToolAvailability = "Available"
	// ToolMissing: the last discovery did not list it; calls fail until it reappears.
	ToolMissing ToolAvailability = "Missing"
)

// ToolStatus is the observed state of a Tool, as the provider describes it.
type ToolStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning.
	ResourceStatus `json:",inline"`
	// availability says whether the last discovery found the tool.
	// +optional
	Availability ToolAvailability `json:"availability,omitempty"`
	// description is the description the provider gives the model.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Description string `json:"description,omitempty"`
	// inputSchema is the JSON Schema of the tool's arguments.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	InputSchema *runtime.RawExtension `json:"inputSchema,omitempty"`
	// lastSeenTime is when discovery last listed the tool.
	// +optional
	LastSeenTime *metav1.Time `json:"lastSeenTime,omitempty"`
	// title is the human-readable title the provider gives the tool.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`
}

// Tool is one tool a ToolProvider offers. Tools are discovered and owned by their provider (an
// owner reference) and disabled by default; agents may only call enabled tools, through governed
// execution. By convention a Tool is named `<provider>-<tool name>` folded to a DNS subdomain.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.definition.provider.name`
// +kubebuilder:printcolumn:name="Tool",type=string,JSONPath=`.definition.toolName`
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.definition.enabled`
// +kubebuilder:printcolumn:name="Approval",type=boolean,JSONPath=`.definition.requiresApproval`,priority=1
// +kubebuilder:printcolumn:name="Availability",type=string,JSONPath=`.status.availability`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Tool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition identifies the tool and whether it is enabled.
	// +required
	Definition ToolDefinition `json:"definition"`
	// status is the observed state of the tool.
	// +optional
	Status ToolStatus `json:"status,omitempty"`
}

// ToolList is a list of Tools.
//
// +kubebuilder:object:root=true
type ToolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Tool{}, &ToolList{})
}
