// Package packs is the Packs area of the service API: preview, install or update from a ZIP
// archive, list and read installed Packs, safe uninstall with its preview, binding selections,
// and rollback to the retained version with its preview. Every check runs before any write; the
// InstalledPack controller carries the operation out and the routes wait for it, bounded.
package packs

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/internal/pack"
)

const tagPacks = "Packs"

// maxArchiveBody is the largest request body an archive route reads: the spec's 8 MiB of
// compressed archive and a little, so that a body just over the limit is refused by the archive
// reader with its reason, and a larger one with 413 before it is read whole.
const maxArchiveBody = pack.MaxCompressedBytes + 64<<10

type routes struct{ *httpapi.Server }

// Routes registers the Packs of the request's workspace.
func Routes(s *httpapi.Server) {
	r := &routes{s}
	s.AddTags(&huma.Tag{Name: tagPacks, Description: "Packs: versioned bundles of resources installed into the workspace's " +
		"resource namespace publisher.name, previewed before any change, updated in place, rolled back to the retained version " +
		"and uninstalled safely (modified resources stay)."})
	api := s.API()
	op := func(id, method, path, summary, description, policy string, status int, errs ...int) huma.Operation {
		return httpapi.Secured(huma.Operation{OperationID: id, Method: method, Path: path, Tags: []string{tagPacks},
			Summary: summary, Description: description, DefaultStatus: status, Errors: errs}, policy)
	}
	archiveOp := func(o huma.Operation) huma.Operation {
		o.MaxBodyBytes = maxArchiveBody
		o.RequestBody = &huma.RequestBody{Required: true, Description: "The Pack archive (ZIP), or (application/json) the imported Source " +
			"version whose archive the server fetches from its registry and checks against the manifest's digest: " +
			"{\"source\":{\"sourceVersion\":\"<id>\"}}, or publisher, sourceName and version naming exactly one. (Not a JSON Schema " +
			"here: huma would then validate every body as JSON.)", Content: map[string]*huma.MediaType{
			"application/zip":          {Schema: &huma.Schema{Type: "string", Format: "binary"}},
			"application/octet-stream": {Schema: &huma.Schema{Type: "string", Format: "binary"}},
		}}
		return o
	}
	const item = "/api/packs/{publisher}/{name}"

	huma.Register(api, archiveOp(op("preview-pack", http.MethodPost, "/api/packs/preview", "Preview installing a Pack archive",
		"Validates the whole archive and plans the install or update against the workspace: each resource's action (create, "+
			"update with its field changes, unchanged, conflict, remove), the bindings and the readiness. Changes nothing. "+
			"413 beyond 8 MiB; 415 for a body that is not application/zip or application/octet-stream; 422 with reason, path "+
			"and field for a refused archive. With application/json {\"source\":{\"sourceVersion\":\"<id>\"}} the archive is that of a "+
			"Source version imported from a registry, fetched under the registration's outbound rules and checked against its manifest's "+
			"digest and size; a registry refusal is Problem Details with a stable code (RegistryDigestMismatch, RegistryPublisherRevoked, ...).",
		httpapi.PolicyResourcesRead, http.StatusOK, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity)),
		func(ctx context.Context, in *archiveInput) (*previewOutput, error) { return r.preview(ctx, in) })
	huma.Register(api, archiveOp(op("install-pack", http.MethodPost, "/api/packs", "Install or update a Pack",
		"Checks everything preview checks; a conflict (a resource of the same name the Pack does not own, or one a person "+
			"changed since installed) is 409 with the conflicting changes and nothing is written. Then stores the archive, and "+
			"creates (201) or updates (200) the installation, waiting up to 30 s for it to finish (202 while it goes on). An "+
			"update that removes Entries shown on Dashboards needs removeDashboardReferences=true. An imported Source version is installed "+
			"with the JSON body of the preview; the installation records its registry provenance (registration, observation, imported "+
			"version, manifest and archive digests), and nothing is written when its archive differs from the manifest.",
		httpapi.PolicyResourcesWrite, http.StatusCreated, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType,
		http.StatusUnprocessableEntity)),
		func(ctx context.Context, in *installInput) (*viewOutput, error) { return r.install(ctx, in) })
	huma.Register(api, op("list-packs", http.MethodGet, "/api/packs", "List the installed Packs", "In name order.",
		httpapi.PolicyResourcesRead, http.StatusOK),
		func(ctx context.Context, in *httpapi.WorkspaceInput) (*listOutput, error) { return r.list(ctx) })
	huma.Register(api, op("get-pack", http.MethodGet, item, "Read an installed Pack",
		"With its resources and their provenance (supplying version, whether each still matches what was installed), its "+
			"bindings, its readiness and its latest operation.",
		httpapi.PolicyResourcesRead, http.StatusOK),
		func(ctx context.Context, in *itemInput) (*viewOutput, error) { return r.get(ctx, in) })
	huma.Register(api, op("uninstall-pack", http.MethodDelete, item, "Uninstall a Pack safely",
		"Removes the resources the Pack still manages unchanged, in reverse install order; a modified, detached or "+
			"Dashboard-referenced resource stays and the Pack is degraded, listing it; with nothing left the record goes.",
		httpapi.PolicyResourcesDelete, http.StatusOK),
		func(ctx context.Context, in *uninstallInput) (*uninstallOutput, error) { return r.uninstall(ctx, in) })
	huma.Register(api, op("preview-pack-uninstall", http.MethodGet, item+"/uninstall-preview", "Preview uninstalling a Pack",
		"What an uninstall would remove and what it would preserve, and why. Changes nothing.",
		httpapi.PolicyResourcesRead, http.StatusOK),
		func(ctx context.Context, in *uninstallInput) (*uninstallPreviewOutput, error) {
			return r.uninstallPreview(ctx, in)
		})
	huma.Register(api, op("set-pack-bindings", http.MethodPut, item+"/bindings", "Select what satisfies a Pack's bindings",
		"Stored by the Pack's publisher and name in the workspace, before or after install, surviving uninstall and reinstall; "+
			"an installed Pack is reconciled with the new selections.",
		httpapi.PolicyResourcesWrite, http.StatusOK, http.StatusUnprocessableEntity),
		func(ctx context.Context, in *bindingsInput) (*bindingsOutput, error) { return r.setBindings(ctx, in) })
	huma.Register(api, op("preview-pack-rollback", http.MethodPost, item+"/rollback/preview", "Preview rolling a Pack back",
		"The change set of going back to the retained version. 409 when no version is retained.",
		httpapi.PolicyResourcesRead, http.StatusOK, http.StatusConflict),
		func(ctx context.Context, in *itemInput) (*previewOutput, error) { return r.rollbackPreview(ctx, in) })
	huma.Register(api, op("rollback-pack", http.MethodPost, item+"/rollback", "Roll a Pack back to the retained version",
		"An update to the retained archive, with the same checks as an install: a conflict is 409 and nothing is written.",
		httpapi.PolicyResourcesWrite, http.StatusOK, http.StatusConflict),
		func(ctx context.Context, in *rollbackInput) (*viewOutput, error) { return r.rollback(ctx, in) })
}

type (
	archiveInput struct {
		httpapi.WorkspaceInput
		ContentType string `header:"Content-Type" maxLength:"256" doc:"application/zip or application/octet-stream"`
		FileName    string `header:"X-Pack-File-Name" maxLength:"1024" doc:"The archive's local file name, kept only as a display-safe name"`
		RawBody     []byte
	}
	// installInput repeats archiveInput's fields: huma reads RawBody only at the top level.
	installInput struct {
		httpapi.WorkspaceInput
		ContentType               string `header:"Content-Type" maxLength:"256" doc:"application/zip or application/octet-stream"`
		FileName                  string `header:"X-Pack-File-Name" maxLength:"1024" doc:"The archive's local file name, kept only as a display-safe name"`
		RawBody                   []byte
		RemoveDashboardReferences bool `query:"removeDashboardReferences" doc:"Authorizes an update to remove Dashboard references to the Entries it removes"`
	}
	itemInput struct {
		httpapi.WorkspaceInput
		Publisher string `path:"publisher" maxLength:"63" doc:"The Pack's publisher"`
		Name      string `path:"name" maxLength:"63" doc:"The Pack's name"`
	}
	// The inputs below repeat itemInput's fields: huma reads fields of one level of embedding.
	uninstallInput struct {
		httpapi.WorkspaceInput
		Publisher                 string `path:"publisher" maxLength:"63" doc:"The Pack's publisher"`
		Name                      string `path:"name" maxLength:"63" doc:"The Pack's name"`
		RemoveDashboardReferences bool   `query:"removeDashboardReferences" doc:"Also remove the Pack's Entries that Dashboards show, with those references"`
	}
	rollbackInput struct {
		httpapi.WorkspaceInput
		Publisher                 string `path:"publisher" maxLength:"63" doc:"The Pack's publisher"`
		Name                      string `path:"name" maxLength:"63" doc:"The Pack's name"`
		RemoveDashboardReferences bool   `query:"removeDashboardReferences" doc:"Authorizes removing Dashboard references to Entries the retained version does not supply"`
	}
	bindingsInput struct {
		httpapi.WorkspaceInput
		Publisher string `path:"publisher" maxLength:"63" doc:"The Pack's publisher"`
		Name      string `path:"name" maxLength:"63" doc:"The Pack's name"`
		Body      BindingsRequest
	}
	previewOutput struct{ Body PackPreview }
	viewOutput    struct {
		Status int
		ETag   string `header:"ETag" doc:"The installation's current ETag"`
		Body   InstalledPackView
	}
	listOutput             struct{ Body List }
	uninstallOutput        struct{ Body UninstallResult }
	uninstallPreviewOutput struct{ Body UninstallPreview }
	bindingsOutput         struct{ Body BindingsResult }
)

func (in *uninstallInput) item() *itemInput {
	return &itemInput{WorkspaceInput: in.WorkspaceInput, Publisher: in.Publisher, Name: in.Name}
}

func (in *rollbackInput) item() *itemInput {
	return &itemInput{WorkspaceInput: in.WorkspaceInput, Publisher: in.Publisher, Name: in.Name}
}
