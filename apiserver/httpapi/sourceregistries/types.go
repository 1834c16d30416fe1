// Package sourceregistries is the Source registries area of the service API: registrations of
// the instance (Platform administrators only), their refresh and history, trust evidence, discovery
// from the cache and import of one exact Source version.
package sourceregistries

import (
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/sourceregistries"
)

// The request and response bodies of the Source registry routes. The Console builds on
// them (workplace/web/src/console/sourceregistries.ts), so they change only by addition.

// OfficialRegistration is the name of the built-in registration: created only when absent,
// never deleted.
const OfficialRegistration = domain.OfficialName

// Registration is one Source registry registration: GET, POST and PUT /api/sourceregistries.
// The ETag of a read is in the ETag header and repeated as etag.
type Registration struct {
	Name       string                              `json:"name" minLength:"1" maxLength:"63" pattern:"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" doc:"Name of the registration (metadata.name of the SourceRegistry)"`
	UID        string                              `json:"uid,omitempty" readOnly:"true" doc:"Registration UID, which observations, history and imports keep"`
	Properties platformv1.SourceRegistryDefinition `json:"properties" doc:"The registration's properties; a trust policy change is audited"`
	Status     *RegistrationStatus                 `json:"status,omitempty" readOnly:"true"`
	ETag       string                              `json:"etag,omitempty" readOnly:"true" doc:"The ETag to send in If-Match on the next write"`
}

// RegistrationStatus is the observed state of a registration, as the SourceRegistry kind holds it.
type RegistrationStatus struct {
	httpapi.ResourceState
	Origin               string          `json:"origin,omitempty" enum:"official,external,private,internal" doc:"Origin classification of indexUrl"`
	Official             bool            `json:"official" doc:"Whether this is the persisted built-in registration"`
	LastRefresh          *RefreshSummary `json:"lastRefresh,omitempty"`
	LastSuccessTime      *time.Time      `json:"lastSuccessTime,omitempty"`
	ConsecutiveFailures  int32           `json:"consecutiveFailures"`
	CurrentObservationID string          `json:"currentObservationId,omitempty"`
	Stale                bool            `json:"stale" doc:"Whether the current observation is older than staleAfter without a successful validation"`
	Freshness            string          `json:"freshness" enum:"fresh,stale,never,disabled"`
	NextRefreshTime      *time.Time      `json:"nextRefreshTime,omitempty" doc:"When the periodic worker will try next; absent when periodic refresh is off"`
}

// RefreshSummary is the latest refresh of a registration.
type RefreshSummary struct {
	Time      time.Time `json:"time"`
	Trigger   string    `json:"trigger" enum:"manual,scheduled"`
	Outcome   string    `json:"outcome" enum:"succeeded,notModified,recovered,failed"`
	ErrorCode string    `json:"errorCode,omitempty"`
	Digest    string    `json:"digest,omitempty"`
}

// RefreshRecord is one durable, immutable refresh history record:
// POST /api/sourceregistries/{name}/refresh answers one, GET .../refreshes lists them newest first.
type RefreshRecord struct {
	ID               string    `json:"id"`
	RegistrationUID  string    `json:"registrationUid"`
	RegistrationName string    `json:"registrationName"`
	Trigger          string    `json:"trigger" enum:"manual,scheduled"`
	Outcome          string    `json:"outcome" enum:"succeeded,notModified,recovered,failed"`
	StartedAt        time.Time `json:"startedAt"`
	FinishedAt       time.Time `json:"finishedAt"`
	DurationMs       int64     `json:"durationMs"`
	RetryCount       int32     `json:"retryCount"`
	CorrelationID    string    `json:"correlationId"`
	Digest           string    `json:"digest,omitempty" doc:"Canonical digest of the index validated (sha256:<hex>)"`
	ObservationID    string    `json:"observationId,omitempty" doc:"The observation the refresh produced or revalidated"`
	ErrorCode        string    `json:"errorCode,omitempty"`
}

// RefreshHistoryInput pages a registration's refresh history.
type RefreshHistoryInput struct {
	Name string `path:"name" maxLength:"63"`
	Skip int    `query:"skip" minimum:"0" default:"0"`
	Take int    `query:"take" minimum:"1" maximum:"100" default:"50"`
}

// RegistrationTrust is GET /api/sourceregistries/{name}/trust: the origin classification and the
// local policy, computed at the read.
type RegistrationTrust struct {
	RegistrationName string    `json:"registrationName"`
	RegistrationUID  string    `json:"registrationUid"`
	Origin           string    `json:"origin" enum:"official,external,private,internal"`
	OriginReasons    []string  `json:"originReasons" doc:"Reason codes of the classification (e.g. builtInRegistration, privateAddress, serviceDomain)"`
	TrustPolicy      string    `json:"trustPolicy" enum:"untrusted,trusted,authoritative"`
	Enabled          bool      `json:"enabled"`
	ObservationID    string    `json:"observationId,omitempty"`
	IndexDigest      string    `json:"indexDigest,omitempty"`
	EvaluatedAt      time.Time `json:"evaluatedAt"`
}

// VersionTrustInput is GET /api/sourceregistries/trust/sources/{publisher}/{source}/versions/{version}.
type VersionTrustInput struct {
	Publisher      string `path:"publisher" maxLength:"128"`
	Source         string `path:"source" maxLength:"128"`
	Version        string `path:"version" maxLength:"128" doc:"Opaque Source version"`
	ManifestDigest string `query:"manifestDigest" required:"true" pattern:"^sha256:[0-9a-f]{64}$" doc:"Canonical manifest digest"`
}

// VersionTrust is the publisher and exact-version evidence over every registration that lists
// the version (spec rule 8). It never carries credentials or cached documents.
type VersionTrust struct {
	Publisher      string     `json:"publisher"`
	SourceName     string     `json:"sourceName"`
	Version        string     `json:"version"`
	ManifestDigest string     `json:"manifestDigest"`
	PublisherState string     `json:"publisherStatus" enum:"None,Declared,Verified,Official,Revoked" doc:"Accepted publisher status over all evidence; an accepted revocation dominates"`
	Verification   string     `json:"verificationStatus" enum:"Unverified,Verified,Conflict" doc:"SourceVersion verification of this exact digest"`
	FirstSeen      *FirstSeen `json:"firstSeen,omitempty" doc:"The first digest recorded for this publisher/Source/version"`
	Snapshot       string     `json:"snapshotVerification" enum:"NotEvaluated" doc:"Not evaluated until a Channel is materialized"`
	Evidence       []Evidence `json:"evidence"`
	EvaluatedAt    time.Time  `json:"evaluatedAt"`
}

// FirstSeen is the append-only first-seen record of one publisher/Source/version.
type FirstSeen struct {
	ManifestDigest  string    `json:"manifestDigest"`
	RegistrationUID string    `json:"registrationUid"`
	ObservationID   string    `json:"observationId"`
	FirstSeenAt     time.Time `json:"firstSeenAt"`
}

// Evidence is what one registration's observation says, and what the policy accepts of it.
type Evidence struct {
	RegistrationName        string   `json:"registrationName"`
	RegistrationUID         string   `json:"registrationUid"`
	ObservationID           string   `json:"observationId"`
	IndexDigest             string   `json:"indexDigest"`
	CatalogName             string   `json:"catalogName"`
	CatalogDigest           string   `json:"catalogDigest"`
	TrustPolicy             string   `json:"trustPolicy"`
	Origin                  string   `json:"origin"`
	ManifestDigest          string   `json:"manifestDigest"`
	AssertedPublisherStatus string   `json:"assertedPublisherStatus"`
	AcceptedPublisherStatus string   `json:"acceptedPublisherStatus"`
	ReasonCodes             []string `json:"reasonCodes"`
}

// DiscoveryInput is GET /api/sourceregistries/discovery: it reads cached shards only.
type DiscoveryInput struct {
	Search             string `query:"search" maxLength:"256"`
	Publisher          string `query:"publisher" maxLength:"128"`
	Registry           string `query:"registry" maxLength:"63" doc:"Registration name"`
	CompatibleOnly     bool   `query:"compatibleOnly"`
	FreshOnly          bool   `query:"freshOnly"`
	ConflictsOnly      bool   `query:"conflictsOnly"`
	TrustPolicy        string `query:"trustPolicy" enum:"untrusted,trusted,authoritative,"`
	PublisherStatus    string `query:"publisherStatus" enum:"None,Declared,Verified,Official,Revoked,"`
	VerificationStatus string `query:"verificationStatus" enum:"Unverified,Verified,Conflict,"`
	Skip               int    `query:"skip" minimum:"0" default:"0"`
	Take               int    `query:"take" minimum:"1" maximum:"100" default:"25"`
}

// Observation is one discovery observation: one registration's current observation listing one
// opaque version of a Source. Equal observations of several registrations stay separate.
type Observation struct {
	RegistrationName        string `json:"registrationName"`
	RegistrationUID         string `json:"registrationUid"`
	ObservationID           string `json:"observationId"`
	IndexDigest             string `json:"indexDigest"`
	CatalogName             string `json:"catalogName" doc:"The shard (catalog) that lists the version"`
	Publisher               string `json:"publisher"`
	SourceName              string `json:"sourceName"`
	Version                 string `json:"version" doc:"Opaque; never ordered"`
	ManifestDigest          string `json:"manifestDigest"`
	IsCatalogLatest         bool   `json:"isCatalogLatest"`
	DisplayName             string `json:"displayName,omitempty"`
	Description             string `json:"description,omitempty"`
	Compatible              bool   `json:"compatible"`
	Freshness               string `json:"freshness" enum:"fresh,stale"`
	Stale                   bool   `json:"stale"`
	TrustPolicy             string `json:"trustPolicy"`
	Origin                  string `json:"origin"`
	AssertedPublisherStatus string `json:"assertedPublisherStatus"`
	PublisherStatus         string `json:"publisherStatus" doc:"Accepted publisher status"`
	VerificationStatus      string `json:"verificationStatus"`
	Conflict                bool   `json:"conflict" doc:"Another accepted digest exists for this publisher/Source/version"`
}

// DiscoveryPage is a page of observations, grouped by publisher/Source then opaque version in
// the registry's order; total counts every match.
type DiscoveryPage struct {
	Items []Observation `json:"items"`
	Total int           `json:"total"`
}

// PublishersInput pages the publisher summaries.
type PublishersInput struct {
	Skip int `query:"skip" minimum:"0" default:"0"`
	Take int `query:"take" minimum:"1" maximum:"100" default:"25"`
}

// PublisherSummary is one publisher seen in cached observations.
type PublisherSummary struct {
	Publisher       string   `json:"publisher"`
	PublisherStatus string   `json:"publisherStatus"`
	Sources         int      `json:"sources"`
	Registrations   []string `json:"registrations"`
}

// SourceInput is GET /api/sourceregistries/discovery/sources/{publisher}/{source}.
type SourceInput struct {
	Publisher string `path:"publisher" maxLength:"128"`
	Source    string `path:"source" maxLength:"128"`
}

// SourceDetail is one exact Source: every observation of each of its opaque versions.
type SourceDetail struct {
	Publisher    string        `json:"publisher"`
	SourceName   string        `json:"sourceName"`
	Observations []Observation `json:"observations"`
}

// ImportSelection names one retained observation of one version.
type ImportSelection struct {
	RegistrationUID string `json:"registrationUid" format:"uuid"`
	ObservationID   string `json:"observationId" format:"uuid"`
	CatalogName     string `json:"catalogName" minLength:"1" maxLength:"256"`
	Publisher       string `json:"publisher" minLength:"1" maxLength:"128"`
	SourceName      string `json:"sourceName" minLength:"1" maxLength:"128"`
	Version         string `json:"version" minLength:"1" maxLength:"128"`
}

// ImportRequest is POST /api/sourceregistries/discovery/imports.
type ImportRequest struct {
	Selection ImportSelection `json:"selection"`
	ScopeRef  string          `json:"scopeRef,omitempty" maxLength:"512" doc:"Where the Source version is kept; the instance when omitted"`
}

// ImportedSourceVersion is an immutable Source version imported from a registry. created is
// false when the same selection was already imported (the import is idempotent). It keeps the
// observation it came from and the trust snapshot taken at the import; never a URL, credential
// or cached document.
type ImportedSourceVersion struct {
	Name             string       `json:"name" doc:"Id of the imported Source version: the sourceVersion the Packs preview and install name"`
	ScopeRef         string       `json:"scopeRef" doc:"Where the Source version is kept: /instance, /tenants/<id> or /workspaces/<id>"`
	Publisher        string       `json:"publisher"`
	SourceName       string       `json:"sourceName"`
	Version          string       `json:"version" doc:"Opaque; never ordered"`
	ManifestDigest   string       `json:"manifestDigest"`
	ArchiveDigest    string       `json:"archiveDigest,omitempty" doc:"The Pack archive's digest the manifest names"`
	ArchiveSize      int64        `json:"archiveSize,omitempty" doc:"The Pack archive's size in bytes the manifest names"`
	RegistrationUID  string       `json:"registrationUid"`
	RegistrationName string       `json:"registrationName"`
	ObservationID    string       `json:"observationId"`
	IndexDigest      string       `json:"indexDigest" doc:"Canonical digest of the observation's index"`
	IndexSerial      int64        `json:"indexSerial" doc:"Serial of the observation's index"`
	CatalogName      string       `json:"catalogName"`
	CatalogDigest    string       `json:"catalogDigest" doc:"Digest of the catalog (shard) that lists the version"`
	IsCatalogLatest  bool         `json:"isCatalogLatest" doc:"The registry's own flag at the observation; nothing else is implied"`
	Compatible       bool         `json:"compatible"`
	TrustPolicy      string       `json:"trustPolicy" doc:"The registration's trust policy at the import"`
	Origin           string       `json:"origin" doc:"The registration's origin classification at the import"`
	Trust            VersionTrust `json:"trust" doc:"The trust snapshot taken at the import"`
	ImportedAt       time.Time    `json:"importedAt"`
	Created          bool         `json:"created" doc:"Whether this request imported it (201) rather than found it imported (200)"`
}

// ImportsInput pages the imported Source versions.
type ImportsInput struct {
	Publisher       string `query:"publisher" maxLength:"128"`
	SourceName      string `query:"sourceName" maxLength:"128"`
	Version         string `query:"version" maxLength:"128"`
	RegistrationUID string `query:"registrationUid" maxLength:"64"`
	Skip            int    `query:"skip" minimum:"0" default:"0"`
	Take            int    `query:"take" minimum:"1" maximum:"100" default:"25"`
}

// ImportsPage is a page of imported Source versions, newest first; total counts every match.
type ImportsPage struct {
	Items []ImportedSourceVersion `json:"items"`
	Total int                     `json:"total"`
}
