package packs

import (
	"time"

	"platform.dev/platform/internal/pack"
)

// PackInfo presents an archive.
type PackInfo struct {
	Publisher   string   `json:"publisher"`
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	DisplayName string   `json:"displayName,omitempty"`
	Description string   `json:"description,omitempty"`
	Audience    string   `json:"audience"`
	Purpose     string   `json:"purpose"`
	Categories  []string `json:"categories,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Readme      string   `json:"readme,omitempty"`
	Digest      string   `json:"digest"`
	FileName    string   `json:"fileName,omitempty"`
}

// PackPreview is what installing (or rolling back to) an archive would change.
type PackPreview struct {
	Pack      PackInfo       `json:"pack"`
	Source    Source         `json:"source" doc:"Where the archive comes from"`
	ChangeSet pack.ChangeSet `json:"changeSet"`
}

// Source is where an installed archive came from; for an imported Source version, the registry
// provenance: registration, observation, imported version, manifest digest (and in digest the
// archive's).
type Source struct {
	Kind            string `json:"kind" enum:"Upload,Registry,Project"`
	FileName        string `json:"fileName,omitempty"`
	Digest          string `json:"digest,omitempty" doc:"The archive's digest"`
	Registry        string `json:"registry,omitempty" doc:"Name of the Source registry registration"`
	RegistrationUID string `json:"registrationUid,omitempty" doc:"UID of the Source registry registration"`
	ObservationID   string `json:"observationId,omitempty" doc:"The registry observation the Source version was imported from"`
	SourceVersion   string `json:"sourceVersion,omitempty" doc:"Id of the imported Source version"`
	ManifestDigest  string `json:"manifestDigest,omitempty" doc:"Digest of the registry manifest that named the archive"`
}

// ResourceView is one managed resource with its provenance.
type ResourceView struct {
	Kind              string `json:"kind"`
	Name              string `json:"name"`
	Path              string `json:"path,omitempty"`
	Fingerprint       string `json:"fingerprint,omitempty"`
	SuppliedByVersion string `json:"suppliedByVersion,omitempty"`
	MatchesInstalled  bool   `json:"matchesInstalled"`
	Condition         string `json:"condition" enum:"managed,modified,missing"`
}

// OperationView summarizes the latest operation of the journal.
type OperationView struct {
	Kind           string `json:"kind"`
	Phase          string `json:"phase"`
	Done           int    `json:"done"`
	Total          int    `json:"total"`
	FailedResource string `json:"failedResource,omitempty"`
	Error          string `json:"error,omitempty"`
}

// InstalledPackView is an installed Pack as the service API shows it.
type InstalledPackView struct {
	Publisher       string              `json:"publisher"`
	Name            string              `json:"name"`
	Version         string              `json:"version"`
	DisplayName     string              `json:"displayName,omitempty"`
	Description     string              `json:"description,omitempty"`
	Audience        string              `json:"audience,omitempty"`
	Purpose         string              `json:"purpose,omitempty"`
	Namespace       string              `json:"namespace"`
	Source          Source              `json:"source"`
	InstalledAt     *time.Time          `json:"installedAt,omitempty"`
	State           string              `json:"state" enum:"installing,installed,rolled back,degraded,uninstalling"`
	Readiness       string              `json:"readiness,omitempty"`
	RetainedVersion string              `json:"retainedVersion,omitempty"`
	Bindings        []pack.BindingState `json:"bindings"`
	Resources       []ResourceView      `json:"resources"`
	Preserved       []PreservedView     `json:"preserved,omitempty"`
	Operation       *OperationView      `json:"operation,omitempty"`
}

// ResourceRef names a resource.
type ResourceRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// PreservedView is a resource an uninstall leaves in place, and why.
type PreservedView struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// UninstallPreview is what an uninstall would remove and preserve.
type UninstallPreview struct {
	Remove   []ResourceRef   `json:"remove"`
	Preserve []PreservedView `json:"preserve"`
	// KeptInNamespace are resources the Pack did not install that are in its namespace: the
	// namespace stays for them (as it does for what is preserved).
	KeptInNamespace []string `json:"keptInNamespace,omitempty" doc:"Resources the Pack did not install that keep its namespace, as Kind name"`
}

// UninstallResult is how an uninstall ended.
type UninstallResult struct {
	State     string          `json:"state" enum:"removed,degraded,uninstalling"`
	Preserved []PreservedView `json:"preserved"`
	// KeptInNamespace: see UninstallPreview.
	KeptInNamespace []string `json:"keptInNamespace,omitempty" doc:"Resources the Pack did not install that keep its namespace, as Kind name"`
}

// BindingsRequest selects what satisfies the bindings of a Pack.
type BindingsRequest struct {
	Bindings map[string]pack.BindingSelection `json:"bindings" maxProperties:"64" doc:"By binding name: the ModelProfile or Secret (resource namespace and name) that satisfies it"`
}

// BindingsResult is the state of every binding after the change.
type BindingsResult struct {
	Bindings []pack.BindingState `json:"bindings"`
}

// List is the installed Packs of the workspace.
type List struct {
	Items []InstalledPackView `json:"items"`
}
