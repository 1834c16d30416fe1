package sourceregistries

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"platform.dev/platform/internal/registry"
)

// Stable codes of an import's refusals (and of a Pack installed from an imported Source
// version), as Problem Details carry them. The registry client's own codes pass through for
// what it refuses (RegistryDigestMismatch, RegistryTimeout, ...).
const (
	// CodeRegistrationNotFound: no registration has the selection's UID (a deleted registration
	// keeps its cache and history for provenance, but nothing is imported from it).
	CodeRegistrationNotFound = "RegistryRegistrationNotFound"
	// CodeRegistrationDisabled: the registration is disabled (enabled: false).
	CodeRegistrationDisabled = "RegistryRegistrationDisabled"
	// CodeRegistrationUntrusted: the registration's trust policy is untrusted.
	CodeRegistrationUntrusted = "RegistryRegistrationUntrusted"
	// CodeObservationNotFound: no observation of the registration has the selection's id.
	CodeObservationNotFound = "RegistryObservationNotFound"
	// CodeObservationEvicted: the observation existed (a refresh recorded it) and cleanup
	// removed it; select a retained one.
	CodeObservationEvicted = "RegistryObservationEvicted"
	// CodeObservationOriginChanged: the registration's index URL moved to another origin since
	// the observation; its requests go to the new origin only.
	CodeObservationOriginChanged = "RegistryObservationOriginChanged"
	// CodeSelectionNotListed: the observation has no such catalog, or the catalog does not list
	// the publisher/Source/version.
	CodeSelectionNotListed = "RegistrySelectionNotListed"
	// CodePublisherRevoked: a revocation of the publisher is accepted (it dominates).
	CodePublisherRevoked = "RegistryPublisherRevoked"
	// CodeDigestConflict: the version's manifest digest differs from the first one seen, or
	// another accepted one.
	CodeDigestConflict = string(registry.CodeDigestConflict)
	// CodeDigestMismatch: the manifest's (or archive's) bytes do not have the digest that names
	// them.
	CodeDigestMismatch = string(registry.CodeDigestMismatch)
	// CodeManifestMismatch: the manifest describes another publisher, Source or version than the
	// shard lists it under.
	CodeManifestMismatch = "RegistryManifestMismatch"
	// CodeArchiveMismatch: the Pack archive is another Pack than the Source it was imported as.
	CodeArchiveMismatch = "RegistryArchiveMismatch"
	// CodeImportNotFound: no imported Source version has the id.
	CodeImportNotFound = "RegistryImportNotFound"
	// CodeImportAmbiguous: several imported Source versions match; name one by its id.
	CodeImportAmbiguous = "RegistryImportAmbiguous"
)

// Refusal is an import (or an install from an import) refused for a reason its Code names; its
// Detail is for people and holds no credential nor document.
type Refusal struct {
	Code   string
	Detail string
}

func (r *Refusal) Error() string { return r.Detail }

func refuse(code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Selection names one version as one retained observation of one registration lists it.
type Selection struct {
	RegistrationUID, ObservationID, CatalogName, Publisher, Source, Version string
}

// ObservationRef is the whole observation an import was made from, kept with it.
type ObservationRef struct {
	RegistrationUID  string    `json:"registrationUid"`
	RegistrationName string    `json:"registrationName"`
	ObservationID    string    `json:"observationId"`
	IndexURL         string    `json:"indexUrl"`
	IndexSerial      int64     `json:"indexSerial"`
	IndexDigest      string    `json:"indexDigest"`
	FetchedAt        time.Time `json:"fetchedAt"`
	ValidatedAt      time.Time `json:"validatedAt"`
	CatalogName      string    `json:"catalogName"`
	CatalogDigest    string    `json:"catalogDigest"`
	// ManifestURL is where the manifest was finally read: the base of the archive's location.
	ManifestURL     string `json:"manifestUrl"`
	IsCatalogLatest bool   `json:"isCatalogLatest"`
	Compatible      bool   `json:"compatible"`
	TrustPolicy     string `json:"trustPolicy"`
	Origin          string `json:"origin"`
}

// Imported is an immutable Source version imported from a registry: the selection, the manifest
// as read (its bytes have ManifestDigest), the observation it came from and the trust evaluated
// at the import. Nothing updates it; a later definition is imported by selecting another
// observation. A Source URL refresh of it is refused: it has no URL of its own to refresh from,
// only this observation (the Packs routes install it only from its manifest's archive).
type Imported struct {
	ID             string
	ScopeRef       string
	Selection      Selection
	ManifestDigest string
	Manifest       []byte
	Observation    ObservationRef
	// Trust is the trust snapshot (the service API's version trust evidence) as JSON.
	Trust      json.RawMessage
	ImportedAt time.Time
}

// ReadManifest is the imported manifest, read again from its stored bytes.
func (i *Imported) ReadManifest() (*registry.Manifest, error) {
	m, _, err := registry.ReadManifest(bytes.NewReader(i.Manifest), i.ManifestDigest)
	return m, err
}

// snapshot is what the trust_snapshot column keeps: the observation reference and the trust.
type snapshot struct {
	Observation ObservationRef  `json:"observation"`
	Trust       json.RawMessage `json:"trust"`
}

// MaxImportsPage is the most imported Source versions one read returns.
const MaxImportsPage = 100

// SaveImport stores imp unless an import of the same scope and selection exists, and returns the
// stored one: created is false when it existed (an import is idempotent, also under a race).
func (s *Store) SaveImport(ctx context.Context, imp Imported) (Imported, bool, error) {
	if imp.ID == "" {
		imp.ID = newID()
	}
	if imp.ImportedAt.IsZero() {
		imp.ImportedAt = s.now()
	}
	snap, err := json.Marshal(snapshot{Observation: imp.Observation, Trust: imp.Trust})
	if err != nil {
		return imp, false, err
	}
	sel := imp.Selection
	res, err := s.DB.DB().ExecContext(ctx, s.DB.Rebind(`INSERT INTO registry_imports
		(id, scope_ref, registration_uid, observation_id, catalog_name, publisher, source, version, manifest_digest, manifest, trust_snapshot, imported_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (scope_ref, registration_uid, observation_id, catalog_name, publisher, source, version) DO NOTHING`),
		imp.ID, imp.ScopeRef, sel.RegistrationUID, sel.ObservationID, sel.CatalogName, sel.Publisher, sel.Source, sel.Version,
		imp.ManifestDigest, imp.Manifest, snap, millis(imp.ImportedAt))
	if err != nil {
		return imp, false, fmt.Errorf("recording an import: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return imp, false, err
	}
	stored, ok, err := s.ImportBySelection(ctx, imp.ScopeRef, sel)
	if err == nil && !ok {
		err = errors.New("an import vanished after it was recorded")
	}
	return stored, n == 1, err
}

const importColumns = `id, scope_ref, registration_uid, observation_id, catalog_name, publisher, source, version, manifest_digest, manifest, trust_snapshot, imported_at`

type scanner interface{ Scan(dest ...any) error }

func scanImport(row scanner) (Imported, error) {
	var i Imported
	var snap []byte
	var at int64
	sel := &i.Selection
	if err := row.Scan(&i.ID, &i.ScopeRef, &sel.RegistrationUID, &sel.ObservationID, &sel.CatalogName, &sel.Publisher, &sel.Source, &sel.Version,
		&i.ManifestDigest, &i.Manifest, &snap, &at); err != nil {
		return i, err
	}
	var sn snapshot
	if err := json.Unmarshal(snap, &sn); err != nil {
		return i, fmt.Errorf("an import's snapshot is not readable: %w", err)
	}
	i.Observation, i.Trust, i.ImportedAt = sn.Observation, sn.Trust, fromMillis(at)
	return i, nil
}

// ImportBySelection is the import of sel in scopeRef; ok is false when there is none.
func (s *Store) ImportBySelection(ctx context.Context, scopeRef string, sel Selection) (Imported, bool, error) {
	i, err := scanImport(s.DB.DB().QueryRowContext(ctx, s.DB.Rebind(`SELECT `+importColumns+` FROM registry_imports
		WHERE scope_ref = ? AND registration_uid = ? AND observation_id = ? AND catalog_name = ? AND publisher = ? AND source = ? AND version = ?`),
		scopeRef, sel.RegistrationUID, sel.ObservationID, sel.CatalogName, sel.Publisher, sel.Source, sel.Version))
	if errors.Is(err, sql.ErrNoRows) {
		return i, false, nil
	}
	return i, err == nil, err
}

// ImportByID is one imported Source version; ok is false when there is none.
func (s *Store) ImportByID(ctx context.Context, id string) (Imported, bool, error) {
	i, err := scanImport(s.DB.DB().QueryRowContext(ctx, s.DB.Rebind(`SELECT `+importColumns+` FROM registry_imports WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return i, false, nil
	}
	return i, err == nil, err
}

// ImportFilter narrows a list of imports; empty fields match everything.
type ImportFilter struct {
	Publisher, Source, Version, RegistrationUID string
}

// Imports is a page of imported Source versions matching f, newest first (ids are time-ordered),
// and how many match in all; take is at most MaxImportsPage.
func (s *Store) Imports(ctx context.Context, f ImportFilter, skip, take int) ([]Imported, int, error) {
	if take <= 0 || take > MaxImportsPage {
		take = MaxImportsPage
	}
	where := `WHERE (? = '' OR publisher = ?) AND (? = '' OR source = ?) AND (? = '' OR version = ?) AND (? = '' OR registration_uid = ?)`
	args := []any{f.Publisher, f.Publisher, f.Source, f.Source, f.Version, f.Version, f.RegistrationUID, f.RegistrationUID}
	var total int
	if err := s.DB.DB().QueryRowContext(ctx, s.DB.Rebind(`SELECT COUNT(*) FROM registry_imports `+where), args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("counting imports: %w", err)
	}
	rows, err := s.DB.DB().QueryContext(ctx, s.DB.Rebind(`SELECT `+importColumns+` FROM registry_imports `+where+` ORDER BY id DESC LIMIT ? OFFSET ?`),
		append(args, take, max(skip, 0))...)
	if err != nil {
		return nil, 0, fmt.Errorf("reading imports: %w", err)
	}
	defer rows.Close()
	out := []Imported{}
	for rows.Next() {
		i, err := scanImport(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, i)
	}
	return out, total, rows.Err()
}

// WasRecorded reports whether a refresh of the registration ever produced or validated the
// observation: then a missing observation was evicted by cleanup rather than never there.
func (s *Store) WasRecorded(ctx context.Context, registrationUID, observationID string) (bool, error) {
	var n int
	err := s.DB.DB().QueryRowContext(ctx, s.DB.Rebind(`SELECT COUNT(*) FROM registry_refreshes WHERE registration_uid = ? AND observation_id = ?`),
		registrationUID, observationID).Scan(&n)
	return n > 0, err
}

// Listed is one version as a cached observation lists it: the shard (catalog) with its digest
// and location, the asserted status of its publisher and the version's entry.
type Listed struct {
	Shard           ShardRef
	PublisherStatus registry.PublisherStatus
	Version         registry.SourceVersion
}

// Lookup finds sel in the cached documents of obs (no network): the catalog the index names and
// the version its shard lists. A refusal with CodeSelectionNotListed when either is absent.
func (s *Store) Lookup(ctx context.Context, obs Observation, sel Selection) (Listed, error) {
	var idx registry.Index
	if err := json.Unmarshal(obs.Index, &idx); err != nil {
		return Listed{}, fmt.Errorf("a cached index is not readable: %w", err)
	}
	var out Listed
	for _, ref := range idx.Shards {
		if ref.Name == sel.CatalogName {
			out.Shard = ShardRef{Name: ref.Name, Location: ref.Location, Digest: ref.Digest}
		}
	}
	if out.Shard.Name == "" {
		return out, refuse(CodeSelectionNotListed, "observation %s has no catalog %q", obs.ID, sel.CatalogName)
	}
	shards, err := s.Shards(ctx, obs.ID)
	if err != nil {
		return out, err
	}
	for _, sh := range shards {
		if sh.Name != sel.CatalogName {
			continue
		}
		var doc registry.Shard
		if err := json.Unmarshal(sh.Document, &doc); err != nil {
			return out, fmt.Errorf("a cached shard is not readable: %w", err)
		}
		for _, p := range doc.Publishers {
			if p.Name == sel.Publisher {
				out.PublisherStatus = p.Status
			}
		}
		for _, src := range doc.Sources {
			if src.Publisher != sel.Publisher || src.Name != sel.Source {
				continue
			}
			for _, v := range src.Versions {
				if v.Version == sel.Version {
					out.Version = v
					return out, nil
				}
			}
		}
	}
	return out, refuse(CodeSelectionNotListed, "catalog %q of observation %s does not list %s/%s version %q", sel.CatalogName, obs.ID, sel.Publisher, sel.Source, sel.Version)
}

// SourceFetcher is the import's view of the guarded registry client: the one selected manifest,
// and later the archive it names. Fetchers' fetchers implement it.
type SourceFetcher interface {
	// FetchManifest reads the manifest l lists, relative to its shard relative to indexURL, and
	// checks its bytes against the shard's digest and its content against the shard's entry.
	FetchManifest(ctx context.Context, indexURL string, publisher, source string, l Listed) (*FetchedManifest, error)
	// FetchArchive reads the Pack archive m names, relative to manifestURL, and checks its size
	// and digest against the manifest.
	FetchArchive(ctx context.Context, manifestURL string, m *registry.Manifest) ([]byte, error)
}

// FetchedManifest is a manifest as read: its bytes (which have the shard's digest), what it
// says, and where it was finally read from.
type FetchedManifest struct {
	Bytes    []byte
	Manifest *registry.Manifest
	URL      string
}

// The import and the Packs routes reach the manifest and archive through the refresh's fetcher:
// Clients.Fetcher must keep answering both, with the registration's credential.
var _ SourceFetcher = (*clientFetcher)(nil)

func (f *clientFetcher) origin() *url.URL {
	u := f.c.IndexURL()
	return &url.URL{Scheme: u.Scheme, Host: u.Host}
}

func (f *clientFetcher) FetchManifest(ctx context.Context, indexURL string, publisher, source string, l Listed) (*FetchedManifest, error) {
	base, err := url.Parse(indexURL)
	if err != nil {
		return nil, &registry.Error{Code: registry.CodeURLRefused, Document: "index", Detail: "the observation's index URL is not a URL"}
	}
	origin := f.origin()
	// Locations resolve against the URLs the observation's documents were named by; every
	// result must stay on the registration's origin.
	shardURL, err := registry.Resolve(origin, base, l.Shard.Location)
	if err != nil {
		return nil, err
	}
	u, err := registry.Resolve(origin, shardURL, l.Version.Manifest)
	if err != nil {
		return nil, err
	}
	got, err := f.c.Get(ctx, u, "manifest", registry.MaxManifestBytes, registry.Validators{})
	if err != nil {
		return nil, err
	}
	m, _, err := registry.ReadManifest(bytes.NewReader(got.Body), l.Version.ManifestDigest)
	if err != nil {
		return nil, err
	}
	if !m.Matches(publisher, source, l.Version.Version) {
		return nil, refuse(CodeManifestMismatch, "the manifest describes %s/%s version %q, not %s/%s version %q as the shard lists it",
			m.Publisher, m.Source, clipVersion(m.Version), publisher, source, l.Version.Version)
	}
	return &FetchedManifest{Bytes: got.Body, Manifest: m, URL: got.URL.String()}, nil
}

func (f *clientFetcher) FetchArchive(ctx context.Context, manifestURL string, m *registry.Manifest) ([]byte, error) {
	base, err := url.Parse(manifestURL)
	if err != nil {
		return nil, &registry.Error{Code: registry.CodeURLRefused, Document: "archive", Detail: "the manifest's URL is not a URL"}
	}
	return f.c.FetchArchive(ctx, base, m)
}

func clipVersion(v string) string {
	if len(v) > registry.MaxVersionLength {
		return v[:registry.MaxVersionLength] + "…"
	}
	return v
}
