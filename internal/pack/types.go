// Package pack is the Pack format, V1 (a local contract: dependency resolution, signatures and
// gallery behaviour are later): reading an archive under the spec's limits, writing one
// deterministically, and planning what installing it into a resource namespace changes. It is
// pure: it reads no store and talks to no server, so preview, install, the controller and the
// Composer compute the same answers from the same inputs.
package pack

import (
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Limits of an archive (the spec's Limits table), enforced while reading.
const (
	MaxCompressedBytes   = 8 << 20
	MaxFiles             = 128
	MaxFileExpandedBytes = 4 << 20
	MaxExpandedBytes     = 16 << 20
)

// ManifestFile is the archive path of the Pack manifest.
const ManifestFile = "pack.yaml"

// InstallOrder is the dependency-safe order in which contained kinds are applied (and the
// reverse of the order in which they are removed or compensated).
var InstallOrder = []platformv1.PackResourceKind{"ModelProvider", "RuntimeProfile", "ModelProfile", "Agent", "Flow", "Entry"}

// Manifest is `pack.yaml`, with `audience` and `purpose` defaulted.
type Manifest struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   ManifestMetadata   `json:"metadata"`
	Definition ManifestDefinition `json:"definition"`
}

// ManifestMetadata identifies and presents the Pack.
type ManifestMetadata struct {
	Name        string   `json:"name"`
	Publisher   string   `json:"publisher"`
	Version     string   `json:"version"`
	Audience    string   `json:"audience"`
	Purpose     string   `json:"purpose"`
	DisplayName string   `json:"displayName,omitempty"`
	Description string   `json:"description,omitempty"`
	Categories  []string `json:"categories,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// ManifestDefinition lists what the Pack needs and contains. Requirements must be empty in V1.
type ManifestDefinition struct {
	Bindings     []BindingDeclaration `json:"bindings,omitempty"`
	Resources    []string             `json:"resources"`
	Requirements []any                `json:"requirements,omitempty"`
}

// BindingTargetKind is what a binding is satisfied by.
type BindingTargetKind string

const (
	ModelProfileBinding BindingTargetKind = "modelProfile"
	SecretBinding       BindingTargetKind = "secret"
)

// BindingDeclaration is a binding the Pack's resources refer to with
// `{ modelProfile: { binding: <name> } }` (or a Secret reference `{ binding: <name> }`).
type BindingDeclaration struct {
	Name        string            `json:"name"`
	TargetKind  BindingTargetKind `json:"targetKind"`
	DisplayName string            `json:"displayName,omitempty"`
	Required    bool              `json:"required"`
}

// Archive is a read and validated Pack archive.
type Archive struct {
	// Digest is `sha256:<hex>` of the archive bytes as received.
	Digest   platformv1.Digest
	Manifest Manifest
	// Readme is the optional README at the root (README.md or README), as text.
	Readme string
	// Resources in InstallOrder, then by name.
	Resources []Resource
}

// Resource is one contained manifest.
type Resource struct {
	// Path is its archive path, as listed in definition.resources.
	Path string
	Kind platformv1.PackResourceKind
	Name string
	// Object is the manifest normalized to the kube spelling (apiVersion platform.dev/v1,
	// metadata.labels), without metadata.namespace, with binding references left in place.
	Object map[string]any
	// Bindings are the names of the bindings it refers to.
	Bindings []string
	// References are its references by name to other resources (not through bindings).
	References []Reference
}

// Reason says why an archive is refused; a stable, typed value that the service API returns
// as the Problem's `reason` and tests match on.
type Reason string

const (
	ReasonNotZip            Reason = "NotZip"
	ReasonTooLarge          Reason = "CompressedTooLarge"
	ReasonTooManyFiles      Reason = "TooManyFiles"
	ReasonFileTooLarge      Reason = "FileTooLarge"
	ReasonExpandedTooLarge  Reason = "ExpandedTooLarge"
	ReasonAbsolutePath      Reason = "AbsolutePath"
	ReasonParentTraversal   Reason = "ParentTraversal"
	ReasonBackslash         Reason = "Backslash"
	ReasonDriveLetter       Reason = "DriveLetter"
	ReasonDuplicatePath     Reason = "DuplicatePath"
	ReasonCaseCollision     Reason = "CaseCollidingPath"
	ReasonLink              Reason = "Link"
	ReasonUnlistedEntry     Reason = "UnlistedEntry"
	ReasonMissingEntry      Reason = "MissingEntry"
	ReasonMissingManifest   Reason = "MissingManifest"
	ReasonInvalidManifest   Reason = "InvalidManifest"
	ReasonRequirements      Reason = "UnsupportedRequirements"
	ReasonUnsupportedKind   Reason = "UnsupportedKind"
	ReasonInvalidResource   Reason = "InvalidResource"
	ReasonDuplicateResource Reason = "DuplicateResource"
	ReasonUnknownBinding    Reason = "UnknownBinding"
)

// Error is a refused archive: the reason, the archive path it concerns (empty for the whole
// archive) and, for an invalid manifest or resource, the field path.
type Error struct {
	Reason Reason
	Path   string
	Field  string
	Detail string
}

func (e *Error) Error() string {
	s := string(e.Reason)
	if e.Path != "" {
		s += " " + e.Path
	}
	if e.Field != "" {
		s += " " + e.Field
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Action is what installing or updating does to one resource.
type Action string

const (
	ActionCreate    Action = "create"
	ActionUpdate    Action = "update"
	ActionUnchanged Action = "unchanged"
	// ActionConflict: a resource of that name exists and the Pack does not own it, or (on update)
	// a person changed it since it was installed. Any conflict blocks the operation.
	ActionConflict Action = "conflict"
	// ActionRemove: an update drops a resource the installed version supplied.
	ActionRemove Action = "remove"
)

// Readiness of an installation (the spec's names).
const (
	ReadinessReady              = "ready"
	ReadinessNeedsConfiguration = "needs configuration"
	ReadinessMissingRequirement = "missing requirement"
)

// FieldChange is one field that an update changes, by JSON path into the object.
type FieldChange struct {
	Path string `json:"path"`
	From any    `json:"from,omitempty"`
	To   any    `json:"to,omitempty"`
}

// Change is the plan for one resource.
type Change struct {
	Kind   platformv1.PackResourceKind `json:"kind"`
	Name   string                      `json:"name"`
	Path   string                      `json:"path,omitempty"`
	Action Action                      `json:"action"`
	// Reason explains a conflict or a removal in a sentence a person reads.
	Reason string        `json:"reason,omitempty"`
	Diff   []FieldChange `json:"diff,omitempty"`
}

// BindingSelection is what satisfies a binding: a ModelProfile or a Secret of the workspace,
// by resource namespace and name. A Secret binding stores only these two.
type BindingSelection struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// BindingState is a declared binding and whether it is satisfied.
type BindingState struct {
	BindingDeclaration
	Selection *BindingSelection `json:"selection,omitempty"`
	Satisfied bool              `json:"satisfied"`
}

// ChangeSet is the exact plan of an install or update, which preview returns and the
// controller carries out.
type ChangeSet struct {
	Publisher string `json:"publisher"`
	Name      string `json:"name"`
	Version   string `json:"version"`
	// FromVersion is the installed version an update starts from; empty for an install.
	FromVersion string `json:"fromVersion,omitempty"`
	// Namespace is the installation's resource namespace, `publisher.name`.
	Namespace string         `json:"namespace"`
	Changes   []Change       `json:"changes"`
	Bindings  []BindingState `json:"bindings"`
	Readiness string         `json:"readiness"`
	// Blocked is true when any change is a conflict: the operation would be refused.
	Blocked bool `json:"blocked"`
	// Missing are the references that neither the Pack nor the workspace satisfies (readiness
	// `missing requirement`).
	Missing []MissingRequirement `json:"missing,omitempty"`
}

// Further refusal reasons (beyond the contract's first list).
const (
	// ReasonInvalidPath: an empty name, an empty or `.` segment, a control character or invalid
	// UTF-8 in an entry name.
	ReasonInvalidPath Reason = "InvalidPath"
	// ReasonNotRegular: an entry that is neither a regular file nor a directory (device, pipe,
	// socket, or an unknown file type in the external attributes).
	ReasonNotRegular Reason = "NotRegularFile"
	// ReasonUnsupportedEntry: an encrypted entry or an unsupported compression method.
	ReasonUnsupportedEntry Reason = "UnsupportedEntry"
	// ReasonCorrupt: an entry whose content does not match its header (a size that lies, a bad
	// checksum, truncated data).
	ReasonCorrupt Reason = "CorruptEntry"
	// ReasonNamespaceSet: a contained resource sets metadata.namespace; the install decides it.
	ReasonNamespaceSet Reason = "NamespaceSet"
)

// Labels and annotations the installation writes on each object it applies.
const (
	// PackLabel is the ownership label, value `publisher.name`.
	PackLabel = "platform/pack"
	// VersionAnnotation is the Pack version that supplied the object.
	VersionAnnotation = "platform/pack-version"
	// FingerprintAnnotation is the Fingerprint of the object as the Pack applied it.
	FingerprintAnnotation = "platform/pack-fingerprint"
	// platformPrefix marks the labels and annotations that the platform writes and a Pack must not.
	platformPrefix = "platform/"
)

// Reference is a reference from a contained resource to another resource by name: resolved in
// the Pack's own resource namespace unless Namespace names another one.
type Reference struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Namespace is the resource namespace the reference names explicitly; empty means the Pack's.
	Namespace string `json:"namespace,omitempty"`
	// Field is the JSON path of the reference in the referring object.
	Field string `json:"field"`
}

// File is one resource to write into an archive: its archive path and its object (either
// spelling; written in the spec spelling).
type File struct {
	Path   string
	Object map[string]any
}

// LiveObject is what Plan needs of an object that exists in the installation namespace.
type LiveObject struct {
	Kind        platformv1.PackResourceKind
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Definition  map[string]any
}

// Installed is what an update starts from: the installed version's archive and each managed
// resource's fingerprint as installed, keyed by Key(kind, name).
type Installed struct {
	Archive      *Archive
	Fingerprints map[string]platformv1.Digest
}

// PlanInput is everything Plan decides from.
type PlanInput struct {
	Archive *Archive
	// Bindings are the binding selections by binding name.
	Bindings map[string]BindingSelection
	// Satisfied says, by binding name, whether the selected ModelProfile or Secret exists (the
	// caller checks). When nil, a binding with a selection counts as satisfied.
	Satisfied map[string]bool
	// Live are the objects of the Pack kinds in the installation namespace.
	Live []LiveObject
	// Installed is the installed record for an update; nil for an install.
	Installed *Installed
	// Exists answers, for a reference that names another resource namespace explicitly, whether
	// the workspace has that resource. When nil such references count as present.
	Exists func(kind, namespace, name string) bool
}

// MissingRequirement is a reference that neither the Pack nor the workspace satisfies.
type MissingRequirement struct {
	// From is the referring resource, `Kind/name`.
	From string `json:"from"`
	Reference
}

// Key is the identity of a resource inside a Pack: `Kind/name`.
func Key(kind platformv1.PackResourceKind, name string) string { return string(kind) + "/" + name }
