package sourceregistries

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/sourceregistries"
	"platform.dev/platform/internal/registry"
)

const importsPath = "/api/sourceregistries/discovery/imports"

// problem is Problem Details with the stable code of a registry refusal.
type problem struct {
	huma.ErrorModel
	Code string `json:"code,omitempty" doc:"Stable code of the refusal (RegistryRegistrationDisabled, RegistryDigestConflict, ...)"`
}

func (p *problem) Error() string             { return p.Detail }
func (p *problem) GetStatus() int            { return p.Status }
func (p *problem) ContentType(string) string { return "application/problem+json" }

// importStatus is the status of each refusal: 404 for what the selection names and does not
// exist, 410 for an observation cleanup removed, 409 for what the registry's state or the trust
// policy refuses, 502 for a registry that could not be read.
var importStatus = map[string]int{
	domain.CodeRegistrationNotFound:     http.StatusNotFound,
	domain.CodeObservationNotFound:      http.StatusNotFound,
	domain.CodeSelectionNotListed:       http.StatusNotFound,
	domain.CodeImportNotFound:           http.StatusNotFound,
	domain.CodeObservationEvicted:       http.StatusGone,
	domain.CodeRegistrationDisabled:     http.StatusConflict,
	domain.CodeRegistrationUntrusted:    http.StatusConflict,
	domain.CodeObservationOriginChanged: http.StatusConflict,
	domain.CodePublisherRevoked:         http.StatusConflict,
	domain.CodeDigestConflict:           http.StatusConflict,
	domain.CodeDigestMismatch:           http.StatusConflict,
	domain.CodeManifestMismatch:         http.StatusConflict,
	domain.CodeArchiveMismatch:          http.StatusConflict,
	domain.CodeImportAmbiguous:          http.StatusConflict,
}

// RefusalProblem is Problem Details of an import's refusal (a domain.Refusal) or of a registry
// request that failed (a registry.Error: its code, 409 for a document that differs from its
// digest, 502 otherwise); any other error goes to httpapi.Problem.
func RefusalProblem(err error) error {
	var refusal *domain.Refusal
	if errors.As(err, &refusal) {
		status, ok := importStatus[refusal.Code]
		if !ok {
			status = http.StatusConflict
		}
		return newProblem(status, refusal.Code, refusal.Detail)
	}
	var rerr *registry.Error
	if errors.As(err, &rerr) {
		status := http.StatusBadGateway
		if code := string(rerr.Code); importStatus[code] != 0 {
			status = importStatus[code]
		}
		// Without the request's URL: a Pack preview's caller need not learn where the instance's
		// registries are.
		detail := rerr.Detail
		if rerr.Document != "" {
			detail = rerr.Document + ": " + detail
		}
		return newProblem(status, string(rerr.Code), "the registry's answer cannot be used: "+detail)
	}
	return httpapi.Problem(err)
}

func newProblem(status int, code, detail string) *problem {
	return &problem{ErrorModel: huma.ErrorModel{Title: http.StatusText(status), Status: status, Detail: detail}, Code: code}
}

type importInput struct {
	Body ImportRequest
}

type importOutput struct {
	Status int
	Body   ImportedSourceVersion
}

type importIDInput struct {
	ID string `path:"id" format:"uuid" doc:"Id of the imported Source version (its name)"`
}

func (r *routes) registerImports() {
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "import-source-version", Method: http.MethodPost, Path: importsPath, Tags: []string{tagSourceRegistries},
		Summary: "Import one exact Source version from a retained observation",
		Description: "Platform administrators only. Retrieves only the selected manifest, through the registration's guarded client " +
			"(the same outbound rules as a refresh), checks its bytes against the shard's manifest digest and its content against the " +
			"shard's publisher, Source and version, and keeps an immutable Source version with the whole observation reference and a " +
			"trust snapshot; no Channel is materialized. Idempotent: the same selection in the same scope answers the same version " +
			"(200, created false) instead of 201. Refused, with a stable code: a registration that is missing " +
			"(RegistryRegistrationNotFound, 404), disabled (RegistryRegistrationDisabled, 409) or untrusted " +
			"(RegistryRegistrationUntrusted, 409); a missing or evicted observation (RegistryObservationNotFound 404, " +
			"RegistryObservationEvicted 410); a selection the observation does not list (RegistrySelectionNotListed, 404); an " +
			"accepted revocation of the publisher (RegistryPublisherRevoked, 409); a digest conflict (RegistryDigestConflict, 409); a " +
			"manifest that differs from the shard (RegistryDigestMismatch or RegistryManifestMismatch, 409); a registry that cannot be " +
			"read (its RegistryXxx code, 502).",
		DefaultStatus: http.StatusCreated,
		Errors:        []int{http.StatusNotFound, http.StatusGone, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusBadGateway},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *importInput) (*importOutput, error) {
		imp, created, err := r.importVersion(ctx, in.Body)
		if err != nil {
			return nil, RefusalProblem(err)
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		return &importOutput{Status: status, Body: importedFrom(imp, created)}, nil
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-imported-source-versions", Method: http.MethodGet, Path: importsPath, Tags: []string{tagSourceRegistries},
		Summary:     "List the Source versions imported from registries",
		Description: "Newest first, with their observation and trust snapshot; take is at most 100. Platform administrators only.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *ImportsInput) (*struct{ Body ImportsPage }, error) {
		c, err := r.cache()
		if err != nil {
			return nil, err
		}
		list, total, err := c.Imports(ctx, domain.ImportFilter{Publisher: in.Publisher, Source: in.SourceName, Version: in.Version, RegistrationUID: in.RegistrationUID}, in.Skip, in.Take)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		page := ImportsPage{Items: make([]ImportedSourceVersion, 0, len(list)), Total: total}
		for _, imp := range list {
			page.Items = append(page.Items, importedFrom(imp, false))
		}
		return &struct{ Body ImportsPage }{Body: page}, nil
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-imported-source-version", Method: http.MethodGet, Path: importsPath + "/{id}", Tags: []string{tagSourceRegistries},
		Summary:     "Read a Source version imported from a registry",
		Description: "With its observation and the trust snapshot taken at the import. Platform administrators only.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *importIDInput) (*struct{ Body ImportedSourceVersion }, error) {
		c, err := r.cache()
		if err != nil {
			return nil, err
		}
		imp, ok, err := c.ImportByID(ctx, in.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		if !ok {
			return nil, newProblem(http.StatusNotFound, domain.CodeImportNotFound, "no imported Source version has the id "+httpapi.Quote(in.ID))
		}
		return &struct{ Body ImportedSourceVersion }{Body: importedFrom(imp, false)}, nil
	})
}

// ScopeRefOf is the scope an import is kept in: the instance when omitted.
func ScopeRefOf(raw string) (string, error) {
	if raw == "" {
		return string(platformv1.InstanceScope), nil
	}
	s, err := ownerscope.Parse(platformv1.ScopeRef(raw))
	if err != nil {
		return "", httpapi.BodyInvalid("scopeRef", "/instance, /tenants/<tenant id> or /workspaces/<workspace id>")
	}
	return string(s.Ref()), nil
}

// importVersion imports the selection of req, or answers the import of the same selection that
// exists. Checks come first, from the cache and the registration (no network); the manifest is
// the one request, last.
func (r *routes) importVersion(ctx context.Context, req ImportRequest) (domain.Imported, bool, error) {
	scopeRef, err := ScopeRefOf(req.ScopeRef)
	if err != nil {
		return domain.Imported{}, false, err
	}
	c, err := r.cache()
	if err != nil {
		return domain.Imported{}, false, err
	}
	s := req.Selection
	sel := domain.Selection{RegistrationUID: s.RegistrationUID, ObservationID: s.ObservationID, CatalogName: s.CatalogName,
		Publisher: s.Publisher, Source: s.SourceName, Version: s.Version}
	// Idempotent: an imported version is immutable, so the same selection is the same version
	// whatever changed since (trust is evaluated again at every read of the registry's routes).
	if imp, ok, err := c.ImportBySelection(ctx, scopeRef, sel); err != nil || ok {
		return imp, false, err
	}
	var list platformv1.SourceRegistryList
	if err := r.Kube().List(ctx, &list); err != nil {
		return domain.Imported{}, false, err
	}
	var reg *platformv1.SourceRegistry
	for i := range list.Items {
		if string(list.Items[i].UID) == sel.RegistrationUID {
			reg = &list.Items[i]
		}
	}
	if reg == nil {
		return domain.Imported{}, false, &domain.Refusal{Code: domain.CodeRegistrationNotFound,
			Detail: "no Source registry registration has the UID " + httpapi.Quote(sel.RegistrationUID) + "; a deleted one keeps its cache for provenance but nothing is imported from it"}
	}
	if reg.Definition.Enabled != nil && !*reg.Definition.Enabled {
		return domain.Imported{}, false, &domain.Refusal{Code: domain.CodeRegistrationDisabled,
			Detail: "Source registry registration " + httpapi.Quote(reg.Name) + " is disabled: enable it to import from it"}
	}
	// "Untrusted" refuses every import from the registration: its policy makes all it asserts
	// declared evidence only, so nothing it lists can be a verified SourceVersion (rule 8c needs
	// an accepted digest). Its observations stay visible in discovery, flagged with their policy;
	// a Platform administrator who trusts it sets trusted (or authoritative), which is audited.
	policy := trustPolicyOf(reg)
	if policy == platformv1.UntrustedPolicy {
		return domain.Imported{}, false, &domain.Refusal{Code: domain.CodeRegistrationUntrusted,
			Detail: "Source registry registration " + httpapi.Quote(reg.Name) + " is untrusted: its evidence is declared only, so nothing is imported from it; set its trustPolicy to trusted to import"}
	}
	obs, ok, err := c.ObservationByID(ctx, sel.ObservationID)
	if err != nil {
		return domain.Imported{}, false, err
	}
	if !ok || obs.RegistrationUID != sel.RegistrationUID {
		evicted, err := c.WasRecorded(ctx, sel.RegistrationUID, sel.ObservationID)
		if err != nil {
			return domain.Imported{}, false, err
		}
		if evicted && !ok {
			return domain.Imported{}, false, &domain.Refusal{Code: domain.CodeObservationEvicted,
				Detail: "observation " + sel.ObservationID + " of " + httpapi.Quote(reg.Name) + " is no longer retained (cleanup removed it); import from a retained observation"}
		}
		return domain.Imported{}, false, &domain.Refusal{Code: domain.CodeObservationNotFound,
			Detail: "registration " + httpapi.Quote(reg.Name) + " has no observation " + sel.ObservationID}
	}
	listed, err := c.Lookup(ctx, obs, sel)
	if err != nil {
		return domain.Imported{}, false, err
	}
	entries, err := r.entries(ctx)
	if err != nil {
		return domain.Imported{}, false, err
	}
	if domain.AcceptedPublisherStatus(policy, listed.PublisherStatus) == string(registry.Revoked) || revokedAnywhere(entries, sel.Publisher) {
		return domain.Imported{}, false, &domain.Refusal{Code: domain.CodePublisherRevoked,
			Detail: "publisher " + httpapi.Quote(sel.Publisher) + " is revoked by a registration whose policy accepts it: a revocation dominates"}
	}
	if err := conflict(ctx, c, entries, sel, listed.Version.ManifestDigest); err != nil {
		return domain.Imported{}, false, err
	}
	// The observation's requests go to its registry's origin; when the registration moved to
	// another origin, its requests (and credential) go only there.
	current, err := url.Parse(reg.Definition.IndexURL)
	if err != nil {
		return domain.Imported{}, false, err
	}
	then, err := url.Parse(obs.IndexURL)
	if err != nil || !registry.SameOrigin(current, then) {
		return domain.Imported{}, false, &domain.Refusal{Code: domain.CodeObservationOriginChanged,
			Detail: "registration " + httpapi.Quote(reg.Name) + " now points at another origin than when observation " + obs.ID + " was made; refresh it and import from a new observation"}
	}
	fetcher, err := r.sourceFetcher(ctx, reg, obs.IndexURL)
	if err != nil {
		return domain.Imported{}, false, err
	}
	fetched, err := fetcher.FetchManifest(ctx, obs.IndexURL, sel.Publisher, sel.Source, listed)
	if err != nil {
		return domain.Imported{}, false, err
	}
	trust, err := r.versionTrust(ctx, entries, sel.Publisher, sel.Source, sel.Version, listed.Version.ManifestDigest)
	if err != nil {
		return domain.Imported{}, false, err
	}
	trustJSON, err := json.Marshal(trust)
	if err != nil {
		return domain.Imported{}, false, err
	}
	origin, _ := domain.ClassifyOrigin(reg, r.Config())
	return c.SaveImport(ctx, domain.Imported{
		ScopeRef: scopeRef, Selection: sel, ManifestDigest: listed.Version.ManifestDigest, Manifest: fetched.Bytes, Trust: trustJSON,
		Observation: domain.ObservationRef{
			RegistrationUID: string(reg.UID), RegistrationName: reg.Name, ObservationID: obs.ID, IndexURL: obs.IndexURL, IndexSerial: obs.Serial,
			IndexDigest: obs.IndexDigest, FetchedAt: obs.FetchedAt, ValidatedAt: obs.ValidatedAt, CatalogName: listed.Shard.Name,
			CatalogDigest: listed.Shard.Digest, ManifestURL: fetched.URL, IsCatalogLatest: listed.Version.IsCatalogLatest,
			Compatible: listed.Version.Compatibility.Compatible(), TrustPolicy: string(policy), Origin: origin,
		},
	})
}

// sourceFetcher is the registration's guarded client, for the origin of indexURL (the
// observation's, on the registration's origin).
func (r *routes) sourceFetcher(ctx context.Context, reg *platformv1.SourceRegistry, indexURL string) (domain.SourceFetcher, error) {
	return SourceFetcher(ctx, r.Server, reg, indexURL)
}

// SourceFetcher is reg's guarded registry client as the import and the Packs routes use it:
// the same outbound rules as its refresh (endpoint policy, credential, limits), for the origin of
// indexURL.
func SourceFetcher(ctx context.Context, s *httpapi.Server, reg *platformv1.SourceRegistry, indexURL string) (domain.SourceFetcher, error) {
	_, fetchers := s.RegistryRefresher()
	if fetchers == nil {
		return nil, huma.Error503ServiceUnavailable("this server runs without a Source registry client")
	}
	at := reg.DeepCopy()
	at.Definition.IndexURL = indexURL
	f, err := fetchers(ctx, at)
	if err != nil {
		return nil, err
	}
	sf, ok := f.(domain.SourceFetcher)
	if !ok {
		return nil, huma.Error503ServiceUnavailable("this server's Source registry client cannot fetch manifests")
	}
	return sf, nil
}

// revokedAnywhere: an accepted revocation of the publisher by any enabled registration's
// current observation dominates.
func revokedAnywhere(entries []domain.Entry, publisher string) bool {
	for _, e := range entries {
		if e.Publisher == publisher && e.PublisherStatus == string(registry.Revoked) {
			return true
		}
	}
	return false
}

// conflict refuses a version whose digest differs from the first one recorded for it, or from
// another one a current observation lists.
func conflict(ctx context.Context, c *domain.Store, entries []domain.Entry, sel domain.Selection, digest string) error {
	first, ok, err := c.FirstSeenOf(ctx, sel.Publisher, sel.Source, sel.Version)
	if err != nil {
		return err
	}
	if ok && first.ManifestDigest != digest {
		return &domain.Refusal{Code: domain.CodeDigestConflict, Detail: "the manifest digest " + digest + " of " + sel.Publisher + "/" + sel.Source +
			" version " + httpapi.Quote(sel.Version) + " differs from the first one seen, " + first.ManifestDigest + ": a blocking conflict"}
	}
	for _, e := range entries {
		if e.Publisher == sel.Publisher && e.SourceName == sel.Source && e.Version == sel.Version && e.ManifestDigest != digest {
			return &domain.Refusal{Code: domain.CodeDigestConflict, Detail: "registration " + httpapi.Quote(e.RegistrationName) + " lists " + sel.Publisher + "/" +
				sel.Source + " version " + httpapi.Quote(sel.Version) + " with another manifest digest, " + e.ManifestDigest + ": a blocking conflict"}
		}
	}
	return nil
}

func importedFrom(imp domain.Imported, created bool) ImportedSourceVersion {
	o := imp.Observation
	out := ImportedSourceVersion{
		Name: imp.ID, ScopeRef: imp.ScopeRef, Publisher: imp.Selection.Publisher, SourceName: imp.Selection.Source, Version: imp.Selection.Version,
		ManifestDigest: imp.ManifestDigest, RegistrationUID: imp.Selection.RegistrationUID, RegistrationName: o.RegistrationName,
		ObservationID: imp.Selection.ObservationID, CatalogName: imp.Selection.CatalogName, CatalogDigest: o.CatalogDigest,
		IndexDigest: o.IndexDigest, IndexSerial: o.IndexSerial, IsCatalogLatest: o.IsCatalogLatest, Compatible: o.Compatible,
		TrustPolicy: o.TrustPolicy, Origin: o.Origin, ImportedAt: imp.ImportedAt, Created: created,
	}
	if m, err := imp.ReadManifest(); err == nil {
		out.ArchiveDigest, out.ArchiveSize = m.Pack.Digest, m.Pack.Size
	}
	_ = json.Unmarshal(imp.Trust, &out.Trust)
	return out
}
