package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ToolProtocol is the protocol a ToolProvider speaks.
// +kubebuilder:validation:Enum=Extension;MCP
type ToolProtocol string

const (
	// ExtensionProtocol is the platform's extension protocol.
	ExtensionProtocol ToolProtocol = "Extension"
	// MCPProtocol is the Model Context Protocol.
	MCPProtocol ToolProtocol = "MCP"
)

// ToolTransport is how the platform reaches a ToolProvider.
// +kubebuilder:validation:Enum=Stdio;StreamableHttp
type ToolTransport string

const (
	// StdioTransport starts the provider as a local process and talks over its stdin and stdout.
	StdioTransport ToolTransport = "Stdio"
	// StreamableHTTPTransport talks to the provider at a URL (Streamable HTTP).
	StreamableHTTPTransport ToolTransport = "StreamableHttp"
)

// ToolAuthenticationMode is how the platform authenticates to an HTTP ToolProvider.
// +kubebuilder:validation:Enum=None;StaticBearer
type ToolAuthenticationMode string

const (
	// NoToolAuthentication sends no credential.
	NoToolAuthentication ToolAuthenticationMode = "None"
	// StaticBearerToolAuthentication sends the Secret's value as a Bearer token, resolved on
	// every request.
	StaticBearerToolAuthentication ToolAuthenticationMode = "StaticBearer"
)

// ToolProviderDefinition is the desired state of a ToolProvider.
//
// +kubebuilder:validation:XValidation:rule="(self.transport == 'Stdio') == has(self.stdio)",message="stdio is set exactly when transport is Stdio",fieldPath=".stdio"
// +kubebuilder:validation:XValidation:rule="(self.transport == 'StreamableHttp') == has(self.http)",message="http is set exactly when transport is StreamableHttp",fieldPath=".http"
// +kubebuilder:validation:XValidation:rule="self.protocol != 'Extension' || self.transport == 'StreamableHttp'",message="an Extension provider is an HTTP service: its transport is StreamableHttp",fieldPath=".transport"
// +kubebuilder:validation:XValidation:rule="self.protocol == 'Extension' || !has(self.extension)",message="extension is set only when protocol is Extension",fieldPath=".extension"
type ToolProviderDefinition struct {
	// displayName is the human-readable name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// description says what the provider offers.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`
	// protocol is Extension or MCP.
	// +required
	Protocol ToolProtocol `json:"protocol"`
	// transport is Stdio or StreamableHttp.
	// +required
	Transport ToolTransport `json:"transport"`
	// stdio starts the provider as a local process.
	// +optional
	Stdio *StdioTransportSettings `json:"stdio,omitempty"`
	// http reaches the provider at a URL.
	// +optional
	HTTP *HTTPTransportSettings `json:"http,omitempty"`
	// extension configures a provider of protocol Extension: the Secrets it binds to the roles
	// the extension asks for.
	// +optional
	Extension *ExtensionSettings `json:"extension,omitempty"`
	// timeoutSeconds bounds connecting to the provider (starting the process or reaching the URL,
	// and the protocol handshake), one discovery and one tool call; 30 when omitted.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// StdioTransportSettings start a ToolProvider as a local process.
type StdioTransportSettings struct {
	// command is the executable, as a path or a name looked up in PATH.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Command string `json:"command"`
	// args are the command's arguments.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Args []string `json:"args,omitempty"`
	// env sets environment variables of the process, each named once.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []EnvVar `json:"env,omitempty"`
	// workingDirectory is the directory the process starts in.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	WorkingDirectory string `json:"workingDirectory,omitempty"`
}

// EnvVar is one environment variable of a process, given as a value or taken from a Secret.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.value) && has(self.secret))",message="an environment variable has a value or a secret, not both"
type EnvVar struct {
	// name of the variable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name"`
	// value of the variable.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value,omitempty"`
	// secret supplies the value from a Secret, resolved when the process starts.
	// +optional
	Secret *SecretReference `json:"secret,omitempty"`
}

// HTTPTransportSettings reach a ToolProvider over Streamable HTTP.
//
// +kubebuilder:validation:XValidation:rule="(self.authenticationMode == 'StaticBearer') == has(self.credential)",message="credential is set exactly when authenticationMode is StaticBearer",fieldPath=".credential"
type HTTPTransportSettings struct {
	// url is the absolute http(s) URL of the provider endpoint.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHost() != ''",message="url is an absolute http or https URL"
	URL string `json:"url"`
	// authenticationMode is None (the default) or StaticBearer.
	// +optional
	// +kubebuilder:default=None
	AuthenticationMode ToolAuthenticationMode `json:"authenticationMode,omitempty"`
	// credential is the Secret whose value is the Bearer token, visible from the provider's scope.
	// +optional
	Credential *SecretReference `json:"credential,omitempty"`
}

// ExtensionSettings configure a provider of protocol Extension.
type ExtensionSettings struct {
	// secrets binds a Secret, visible from the provider's scope, to each Secret role the
	// extension asks for in its discovery document. When a tool that needs a role is called, the
	// extension receives a one-use capability for that Secret, never the value itself.
	// +optional
	// +listType=map
	// +listMapKey=role
	// +kubebuilder:validation:MaxItems=16
	Secrets []ExtensionSecretBinding `json:"secrets,omitempty"`
}

// ExtensionSecretBinding binds one Secret role of an extension to a Secret.
type ExtensionSecretBinding struct {
	// role is the name the extension gives the Secret it asks for.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`
	Role string `json:"role"`
	// secret is the Secret whose value a capability for the role opens, resolved from the
	// provider's scope with the usual rules (scopes, grants) when the capability is redeemed.
	// +required
	Secret SecretReference `json:"secret"`
}

// ToolProviderStatus is the observed state of a ToolProvider.
type ToolProviderStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is False with
	// ProviderUnavailable when the last contact failed.
	ResourceStatus `json:",inline"`
	// serverName is the name the provider reported.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ServerName string `json:"serverName,omitempty"`
	// serverVersion is the version the provider reported.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ServerVersion string `json:"serverVersion,omitempty"`
	// protocolVersion is the protocol version negotiated with the provider.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// lastDiscoveryTime is when tools were last discovered.
	// +optional
	LastDiscoveryTime *metav1.Time `json:"lastDiscoveryTime,omitempty"`
	// tools is the number of Tools discovered and still present.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Tools int32 `json:"tools,omitempty"`
	// enabledTools is how many of the provider's Tools are enabled, as of the last discovery.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EnabledTools int32 `json:"enabledTools,omitempty"`
	// missingTools is how many of the provider's Tools the last discovery no longer found.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MissingTools int32 `json:"missingTools,omitempty"`
	// connection is the outcome of the platform's last contact with the provider.
	// +optional
	Connection *ToolProviderConnection `json:"connection,omitempty"`
}

// ToolProviderConnectionState is the outcome of the last contact with a ToolProvider.
// +kubebuilder:validation:Enum=Connected;Failed
type ToolProviderConnectionState string

const (
	// ToolProviderConnected: the last contact completed the protocol handshake.
	ToolProviderConnected ToolProviderConnectionState = "Connected"
	// ToolProviderConnectionFailed: the last contact failed; message says how.
	ToolProviderConnectionFailed ToolProviderConnectionState = "Failed"
)

// ToolProviderConnection is the outcome of the platform's last contact with a provider. It is
// written when the outcome changes and at every discovery, never for each call.
type ToolProviderConnection struct {
	// state is Connected or Failed.
	// +required
	State ToolProviderConnectionState `json:"state"`
	// message says why the last contact failed; it never holds credentials or the provider's
	// own output.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// lastTransitionTime is when state last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// ToolProvider declares a source of tools: an extension-protocol or MCP server reached over
// STDIO or Streamable HTTP. Its tools are discovered as Tool objects, disabled by default.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=platform
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.definition.protocol`
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.definition.transport`
// +kubebuilder:printcolumn:name="Tools",type=integer,JSONPath=`.status.tools`,priority=1
// +kubebuilder:printcolumn:name="Connection",type=string,JSONPath=`.status.connection.state`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ToolProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the desired state of the provider.
	// +required
	Definition ToolProviderDefinition `json:"definition"`
	// status is the observed state of the provider.
	// +optional
	Status ToolProviderStatus `json:"status,omitempty"`
}

// ToolProviderList is a list of ToolProviders.
//
// +kubebuilder:object:root=true
type ToolProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToolProvider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ToolProvider{}, &ToolProviderList{})
}
