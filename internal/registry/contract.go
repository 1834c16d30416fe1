// Package registry is the registry v1 contract (docs/registry-v1.md): the index, shard and
// manifest documents, their bounded strict readers, the resolution of the locations they name,
// and the guarded client every registry request goes through.
package registry

import (
	"slices"

	"platform.dev/platform/apis/platform/manifest"
)

// APIVersion is the contract version every registry document carries.
const APIVersion = "registry.platform.dev/v1"

// Kinds of registry documents.
const (
	KindIndex    = "Index"
	KindShard    = "Shard"
	KindManifest = "Manifest"
)

// Fixed byte limits of the contract: a document larger than its limit is refused, and no more
// than the limit (plus one byte, to notice) is ever read.
const (
	MaxIndexBytes    int64 = 1 << 20
	MaxShardBytes    int64 = 4 << 20
	MaxManifestBytes int64 = 64 << 10
	// MaxArchiveBytes is the largest Pack archive fetched, the Pack store's own bound.
	MaxArchiveBytes int64 = 8 << 20
)

// Count bounds of the contract, so that a document within its byte limit cannot still demand
// unbounded work.
const (
	MaxShards             = 256
	MaxPublishersPerShard = 1000
	MaxSourcesPerShard    = 2000
	MaxVersionsPerSource  = 500
	MaxNameLength         = 253
	MaxVersionLength      = 128
	MaxLocationLength     = 2048
	MaxDisplayLength      = 256
	MaxDescriptionLength  = 4096
	MaxCompatibility      = 16
)

// PublisherStatus is the status a shard asserts for a publisher; the registration's trust policy
// decides what of it is accepted.
type PublisherStatus string

const (
	Declared PublisherStatus = "Declared"
	Verified PublisherStatus = "Verified"
	Official PublisherStatus = "Official"
	Revoked  PublisherStatus = "Revoked"
)

// Index is the entry document of a registry: a serial that only grows and the shards.
type Index struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Serial increases with every published change; a client refuses a lower one (rollback).
	Serial int64      `json:"serial"`
	Shards []ShardRef `json:"shards"`
}

// ShardRef names one shard: where it is, relative to the index, and its digest.
type ShardRef struct {
	Name     string `json:"name"`
	Location string `json:"location"`
	Digest   string `json:"digest"`
}

// Shard lists publishers with their asserted status and Sources with their versions.
type Shard struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Name       string      `json:"name"`
	Publishers []Publisher `json:"publishers"`
	Sources    []Source    `json:"sources"`
}

// Publisher is a publisher as the shard asserts it.
type Publisher struct {
	Name        string          `json:"name"`
	DisplayName string          `json:"displayName,omitempty"`
	Status      PublisherStatus `json:"status"`
}

// Source is one Source of a publisher and its opaque versions, in the shard's order, which
// means nothing: versions are never ordered.
type Source struct {
	Publisher   string          `json:"publisher"`
	Name        string          `json:"name"`
	DisplayName string          `json:"displayName,omitempty"`
	Description string          `json:"description,omitempty"`
	Versions    []SourceVersion `json:"versions"`
}

// SourceVersion is one opaque version of a Source.
type SourceVersion struct {
	Version string `json:"version"`
	// Manifest is the manifest's location, relative to the shard.
	Manifest       string        `json:"manifest"`
	ManifestDigest string        `json:"manifestDigest"`
	Compatibility  Compatibility `json:"compatibility"`
	// IsCatalogLatest is the registry's own flag for this version; it is shown, never used to
	// order versions.
	IsCatalogLatest bool `json:"isCatalogLatest"`
}

// Compatibility says which platforms can install a version: the Pack manifest apiVersions its
// archive uses. A version is compatible when one of them is one this platform reads.
type Compatibility struct {
	PackAPIVersions []string `json:"packApiVersions"`
}

// SupportedPackAPIVersions are the Pack manifest apiVersions this platform reads.
var SupportedPackAPIVersions = []string{manifest.SpecAPIVersion}

// Compatible reports whether this platform can install a version with compatibility c.
func (c Compatibility) Compatible() bool {
	for _, v := range c.PackAPIVersions {
		if slices.Contains(SupportedPackAPIVersions, v) {
			return true
		}
	}
	return false
}

// Manifest describes one Source version and where its Pack archive is.
type Manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Publisher  string `json:"publisher"`
	Source     string `json:"source"`
	Version    string `json:"version"`
	Pack       Pack   `json:"pack"`
}

// Pack is the Pack archive of a manifest: its location, relative to the manifest, its digest
// and its size in bytes.
type Pack struct {
	Location string `json:"location"`
	Digest   string `json:"digest"`
	Size     int64  `json:"size"`
}
