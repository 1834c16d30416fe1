package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrustPolicy is how much a registration's evidence counts in trust evaluation.
// +kubebuilder:validation:Enum=untrusted;trusted;authoritative
type TrustPolicy string

const (
	// UntrustedPolicy contributes declared evidence only.
	UntrustedPolicy TrustPolicy = "untrusted"
	// TrustedPolicy may verify a publisher.
	TrustedPolicy TrustPolicy = "trusted"
	// AuthoritativePolicy may also contribute official publisher status.
	AuthoritativePolicy TrustPolicy = "authoritative"
)

// RegistryAuthenticationMode is how index requests authenticate.
// +kubebuilder:validation:Enum=none;staticBearer
type RegistryAuthenticationMode string

const (
	// NoRegistryAuthentication sends no credential (public registry).
	NoRegistryAuthentication RegistryAuthenticationMode = "none"
	// StaticBearerRegistryAuthentication sends the credential Secret's value as a Bearer token,
	// only to the registration's origin.
	StaticBearerRegistryAuthentication RegistryAuthenticationMode = "staticBearer"
)

// SourceRegistryDefinition is a source registry registration (the spec's `properties`).
//
// +kubebuilder:validation:XValidation:rule="!self.indexUrl.startsWith('http://') || (has(self.endpointPolicy) && self.endpointPolicy.allowHttp)",message="an http:// indexUrl needs endpointPolicy.allowHttp",fieldPath=".indexUrl"
// +kubebuilder:validation:XValidation:rule="(self.authenticationMode == 'staticBearer') == has(self.credential)",message="credential is set exactly when authenticationMode is staticBearer",fieldPath=".credential"
// +kubebuilder:validation:XValidation:rule="!has(self.credential) || !has(self.credential.scopeRef) || self.credential.scopeRef == '/instance'",message="a registry credential is an instance-scoped Secret",fieldPath=".credential.scopeRef"
type SourceRegistryDefinition struct {
	// displayName is the human-readable name shown in the Console.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`
	// indexUrl is the absolute URL of the registry index, without credentials, query, fragment
	// or percent-encoding.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHost() != ''",message="indexUrl is an absolute http or https URL"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') && !self.contains('?') && !self.contains('#') && !self.contains('%')",message="indexUrl has no credentials, query, fragment or percent-encoding"
	IndexURL string `json:"indexUrl"`
	// enabled is false to stop refreshes and imports; true when omitted.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// trustPolicy is untrusted (the default), trusted or authoritative.
	// +optional
	// +kubebuilder:default=untrusted
	TrustPolicy TrustPolicy `json:"trustPolicy,omitempty"`
	// endpointPolicy relaxes the public-HTTPS-only default.
	// +optional
	// +kubebuilder:default={}
	EndpointPolicy *EndpointPolicy `json:"endpointPolicy,omitempty"`
	// authenticationMode is none (the default) or staticBearer.
	// +optional
	// +kubebuilder:default=none
	AuthenticationMode RegistryAuthenticationMode `json:"authenticationMode,omitempty"`
	// credential is the instance-scoped Secret used for staticBearer.
	// +optional
	Credential *SecretReference `json:"credential,omitempty"`
	// refreshPolicy configures periodic refresh, off by default.
	// +optional
	// +kubebuilder:default={}
	RefreshPolicy *RefreshPolicy `json:"refreshPolicy,omitempty"`
	// cachePolicy configures what the cache keeps.
	// +optional
	CachePolicy *CachePolicy `json:"cachePolicy,omitempty"`
}

// EndpointPolicy relaxes, independently, the two defaults of registry endpoints.
type EndpointPolicy struct {
	// allowHttp allows a plain http:// index; HTTPS is required by default.
	// +optional
	// +kubebuilder:default=false
	AllowHTTP bool `json:"allowHttp,omitempty"`
	// allowPrivateNetwork allows private addresses; public addresses only by default.
	// Link-local and multicast targets stay denied.
	// +optional
	// +kubebuilder:default=false
	AllowPrivateNetwork bool `json:"allowPrivateNetwork,omitempty"`
}

// RefreshPolicy configures scheduled refresh. Omitted durations take the service defaults.
type RefreshPolicy struct {
	// periodicEnabled turns scheduled refresh on; off by default.
	// +optional
	// +kubebuilder:default=false
	PeriodicEnabled bool `json:"periodicEnabled,omitempty"`
	// interval between scheduled refreshes, [days.]hh:mm:ss.
	// +optional
	Interval TimeSpan `json:"interval,omitempty"`
	// timeout of one attempt, [days.]hh:mm:ss.
	// +optional
	Timeout TimeSpan `json:"timeout,omitempty"`
	// initialBackoff is the first wait after a failure, [days.]hh:mm:ss.
	// +optional
	InitialBackoff TimeSpan `json:"initialBackoff,omitempty"`
	// maximumBackoff caps the exponential backoff, [days.]hh:mm:ss.
	// +optional
	MaximumBackoff TimeSpan `json:"maximumBackoff,omitempty"`
	// jitter is the largest deterministic delay added per registration, [days.]hh:mm:ss.
	// +optional
	Jitter TimeSpan `json:"jitter,omitempty"`
	// staleAfter is how long an observation stays fresh without a successful validation,
	// [days.]hh:mm:ss.
	// +optional
	StaleAfter TimeSpan `json:"staleAfter,omitempty"`
	// maximumAttempts bounds the backoff retries after a failure before the normal interval
	// applies again.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaximumAttempts *int32 `json:"maximumAttempts,omitempty"`
}

// CachePolicy configures the registry cache.
type CachePolicy struct {
	// retainedObservations is the number of complete observations kept; the current one is never
	// removed.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	RetainedObservations *int32 `json:"retainedObservations,omitempty"`
}

// OriginClassification is the origin dimension of trust.
// +kubebuilder:validation:Enum=official;external;private;internal
type OriginClassification string

// RefreshOutcome is the result of one refresh.
// +kubebuilder:validation:Enum=succeeded;notModified;recovered;failed
type RefreshOutcome string

// RefreshTrigger says what started a refresh.
// +kubebuilder:validation:Enum=manual;scheduled
type RefreshTrigger string

// RefreshSummary describes the latest refresh; the durable history lives in the Work store.
type RefreshSummary struct {
	// time the refresh finished.
	// +required
	Time metav1.Time `json:"time"`
	// trigger is manual or scheduled.
	// +required
	Trigger RefreshTrigger `json:"trigger"`
	// outcome is succeeded, notModified (HTTP 304), recovered (success after failures) or failed.
	// +required
	Outcome RefreshOutcome `json:"outcome"`
	// errorCode is the stable code of a failure.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ErrorCode string `json:"errorCode,omitempty"`
	// digest is the digest of the index the refresh validated.
	// +optional
	Digest Digest `json:"digest,omitempty"`
}

// SourceRegistryStatus is the observed state of a registration.
type SourceRegistryStatus struct {
	// ResourceStatus holds observedGeneration, conditions and provisioning; Ready is False with
	// RefreshFailed or Stale.
	ResourceStatus `json:",inline"`
	// origin is the origin classification of indexUrl.
	// +optional
	Origin OriginClassification `json:"origin,omitempty"`
	// lastRefresh is the latest refresh.
	// +optional
	LastRefresh *RefreshSummary `json:"lastRefresh,omitempty"`
	// lastSuccessTime is when the index was last validated successfully.
	// +optional
	LastSuccessTime *metav1.Time `json:"lastSuccessTime,omitempty"`
	// consecutiveFailures counts failed attempts since the last success.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
	// currentObservationId is the id of the usable observation discovery reads.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CurrentObservationID string `json:"currentObservationId,omitempty"`
}

// SourceRegistry registers a Source registry: an instance-owned discovery endpoint whose index
// is cached, trust-evaluated and imported from. It is cluster-scoped because it belongs to the
// instance, not to a workspace; only Platform administrators manage it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=platform,shortName=sreg
// +kubebuilder:printcolumn:name="Index URL",type=string,JSONPath=`.definition.indexUrl`
// +kubebuilder:printcolumn:name="Trust",type=string,JSONPath=`.definition.trustPolicy`
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.definition.enabled`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.status.provisioning`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SourceRegistry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// definition is the registration.
	// +required
	Definition SourceRegistryDefinition `json:"definition"`
	// status is the observed state of the registration.
	// +optional
	Status SourceRegistryStatus `json:"status,omitempty"`
}

// SourceRegistryList is a list of SourceRegistries.
//
// +kubebuilder:object:root=true
type SourceRegistryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SourceRegistry `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SourceRegistry{}, &SourceRegistryList{})
}
