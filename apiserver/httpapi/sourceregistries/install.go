package sourceregistries

import (
	"context"
	"fmt"
	"net/url"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/sourceregistries"
	"platform.dev/platform/internal/registry"
)

// SourceRef names an imported Source version in the JSON body of the Packs preview and install
// ({"source": {...}}): by its id (sourceVersion), or by publisher, sourceName and version when
// exactly one imported version the workspace may use has them. Given together, they must agree.
type SourceRef struct {
	SourceVersion string `json:"sourceVersion,omitempty"`
	Publisher     string `json:"publisher,omitempty"`
	SourceName    string `json:"sourceName,omitempty"`
	Version       string `json:"version,omitempty"`
}

// ImportedArchive is the Pack archive of an imported Source version, fetched and checked, with
// the provenance an InstalledPack records.
type ImportedArchive struct {
	Bytes  []byte
	Source platformv1.PackSource
	// Publisher, SourceName and Version are what the archive must be: the Source version it was
	// imported as.
	Publisher, SourceName, Version string
}

// maxImportMatches bounds the imported versions a reference by publisher, Source and version reads.
const maxImportMatches = 20

// FetchImportedArchive resolves ref for the request's workspace and fetches the archive its
// manifest names through the registration's guarded client (the outbound rules of a refresh),
// checking its size and digest against the manifest. Trust is evaluated again now: a registration
// since deleted, disabled or made untrusted, an accepted revocation of the publisher or a
// registration moved to another origin refuses it, as an import would be. Errors are Problem
// Details with a stable code.
//
// This is the only way an imported Source version is read again from its registry: a Source URL
// refresh of it (spec Errors) does not exist and is refused by construction, since the Packs
// routes take an imported version only through this function, which reads only its recorded
// manifest's archive; a later definition is a new import of another observation.
func FetchImportedArchive(ctx context.Context, s *httpapi.Server, ref SourceRef) (*ImportedArchive, error) {
	r := &routes{s}
	c, err := r.cache()
	if err != nil {
		return nil, err
	}
	imp, err := r.resolveImport(ctx, c, ref)
	if err != nil {
		return nil, RefusalProblem(err)
	}
	out, err := r.fetchArchive(ctx, imp)
	if err != nil {
		return nil, RefusalProblem(err)
	}
	return out, nil
}

func (r *routes) resolveImport(ctx context.Context, c *domain.Store, ref SourceRef) (domain.Imported, error) {
	var imp domain.Imported
	if ref.SourceVersion != "" {
		found, ok, err := c.ImportByID(ctx, ref.SourceVersion)
		if err != nil {
			return imp, err
		}
		if !ok || !r.inScope(ctx, found.ScopeRef) {
			return imp, &domain.Refusal{Code: domain.CodeImportNotFound, Detail: "no imported Source version " + httpapi.Quote(ref.SourceVersion) + " is usable in the workspace"}
		}
		sel := found.Selection
		for _, f := range []struct{ given, is, name string }{{ref.Publisher, sel.Publisher, "publisher"}, {ref.SourceName, sel.Source, "sourceName"}, {ref.Version, sel.Version, "version"}} {
			if f.given != "" && f.given != f.is {
				return imp, httpapi.BodyInvalid("source."+f.name, fmt.Sprintf("the imported Source version %s has %s %s", found.ID, f.name, httpapi.Quote(f.is)))
			}
		}
		return found, nil
	}
	if ref.Publisher == "" || ref.SourceName == "" || ref.Version == "" {
		return imp, httpapi.BodyInvalid("source.sourceVersion", "the id of an imported Source version, or publisher, sourceName and version")
	}
	list, _, err := c.Imports(ctx, domain.ImportFilter{Publisher: ref.Publisher, Source: ref.SourceName, Version: ref.Version}, 0, maxImportMatches)
	if err != nil {
		return imp, err
	}
	var usable []domain.Imported
	for _, i := range list {
		if r.inScope(ctx, i.ScopeRef) {
			usable = append(usable, i)
		}
	}
	switch len(usable) {
	case 0:
		return imp, &domain.Refusal{Code: domain.CodeImportNotFound, Detail: fmt.Sprintf("no imported Source version %s/%s %s is usable in the workspace; import it first",
			ref.Publisher, ref.SourceName, httpapi.Quote(ref.Version))}
	case 1:
		return usable[0], nil
	}
	return imp, &domain.Refusal{Code: domain.CodeImportAmbiguous, Detail: fmt.Sprintf("%d imported Source versions are %s/%s %s; name one by source.sourceVersion",
		len(usable), ref.Publisher, ref.SourceName, httpapi.Quote(ref.Version))}
}

// inScope reports whether the request's workspace may use a Source version kept in scopeRef:
// the instance's by every workspace, a tenant's by its workspaces, a workspace's by itself.
func (r *routes) inScope(ctx context.Context, scopeRef string) bool {
	scope, err := ownerscope.Parse(platformv1.ScopeRef(scopeRef))
	if err != nil {
		return false
	}
	if scope.Kind == ownerscope.Instance {
		return true
	}
	rc, _ := httpapi.RequestContextFrom(ctx)
	if rc.WorkspaceID == "" {
		return false
	}
	if scope.Kind == ownerscope.Workspace {
		return rc.WorkspaceID == scope.ID
	}
	ids := r.Identity()
	if ids == nil {
		return false
	}
	ws, err := ids.Workspace(ctx, rc.WorkspaceID)
	return err == nil && ws.TenantID == scope.ID
}

func (r *routes) fetchArchive(ctx context.Context, imp domain.Imported) (*ImportedArchive, error) {
	var list platformv1.SourceRegistryList
	if err := r.Kube().List(ctx, &list); err != nil {
		return nil, err
	}
	var reg *platformv1.SourceRegistry
	for i := range list.Items {
		if string(list.Items[i].UID) == imp.Selection.RegistrationUID {
			reg = &list.Items[i]
		}
	}
	name := imp.Observation.RegistrationName
	switch {
	case reg == nil:
		return nil, &domain.Refusal{Code: domain.CodeRegistrationNotFound, Detail: "the Source registry registration " + httpapi.Quote(name) +
			" that the Source version was imported from was deleted: its archive is not fetched any more"}
	case reg.Definition.Enabled != nil && !*reg.Definition.Enabled:
		return nil, &domain.Refusal{Code: domain.CodeRegistrationDisabled, Detail: "Source registry registration " + httpapi.Quote(reg.Name) + " is disabled: enable it to install from it"}
	case trustPolicyOf(reg) == platformv1.UntrustedPolicy:
		return nil, &domain.Refusal{Code: domain.CodeRegistrationUntrusted, Detail: "Source registry registration " + httpapi.Quote(reg.Name) + " is untrusted now: nothing is installed from it"}
	}
	entries, err := r.entries(ctx)
	if err != nil {
		return nil, err
	}
	if revokedAnywhere(entries, imp.Selection.Publisher) {
		return nil, &domain.Refusal{Code: domain.CodePublisherRevoked, Detail: "publisher " + httpapi.Quote(imp.Selection.Publisher) + " is revoked by a registration whose policy accepts it: a revocation dominates"}
	}
	current, err := url.Parse(reg.Definition.IndexURL)
	if err != nil {
		return nil, err
	}
	then, err := url.Parse(imp.Observation.IndexURL)
	if err != nil || !registry.SameOrigin(current, then) {
		return nil, &domain.Refusal{Code: domain.CodeObservationOriginChanged, Detail: "registration " + httpapi.Quote(reg.Name) +
			" now points at another origin than the observation the Source version was imported from; import it again from a new observation"}
	}
	m, err := imp.ReadManifest()
	if err != nil {
		return nil, err
	}
	fetcher, err := r.sourceFetcher(ctx, reg, imp.Observation.IndexURL)
	if err != nil {
		return nil, err
	}
	archive, err := fetcher.FetchArchive(ctx, imp.Observation.ManifestURL, m)
	if err != nil {
		return nil, err
	}
	return &ImportedArchive{Bytes: archive, Publisher: imp.Selection.Publisher, SourceName: imp.Selection.Source, Version: imp.Selection.Version, Source: platformv1.PackSource{
		Kind: platformv1.RegistryPackSource, Registry: reg.Name, RegistrationUID: string(reg.UID), ObservationID: imp.Selection.ObservationID,
		SourceVersion: imp.ID, ManifestDigest: platformv1.Digest(imp.ManifestDigest), Digest: platformv1.Digest(m.Pack.Digest),
	}}, nil
}
