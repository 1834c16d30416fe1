// Package packprojects is the Pack Composer area of the service API (/api/pack-projects...): the
// inventory of the workspace's default namespace with what a Pack can carry, the preview of a
// selection's complete dependency closure, and Pack projects: immutable snapshots of a selection
// generated as a validated, deterministic Pack archive that downloads as an attachment.
package packprojects

import (
	"context"
	"mime"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/packprojects"
)

const tagComposer = "Pack Composer"

// Bounds of the bodies and reads.
const (
	maxPreviewBody = 64 << 10
	maxCreateBody  = 256 << 10
	defaultList    = 50
)

type routes struct{ *httpapi.Server }

// Routes registers the Pack Composer of the request's workspace.
func Routes(s *httpapi.Server) {
	r := &routes{s}
	s.AddTags(&huma.Tag{Name: tagComposer, Description: "The Pack Composer: select Agents, Flows, Entries and profiles of the workspace's " +
		"default namespace, see the complete dependency closure and the bindings it needs, and generate a Pack archive from an " +
		"immutable snapshot of them. A Secret is only ever a binding: its value is never copied."})
	api := s.API()
	op := func(id, method, path, summary, description, policy string, status int, errs ...int) huma.Operation {
		return httpapi.Secured(huma.Operation{OperationID: id, Method: method, Path: path, Tags: []string{tagComposer},
			Summary: summary, Description: description, DefaultStatus: status, Errors: errs}, policy)
	}

	huma.Register(api, op("list-composer-resources", http.MethodGet, "/api/pack-projects/composer/resources",
		"List what the Composer can put in a Pack",
		"The default namespace's Agents, Flows, Entries, ModelProfiles, ModelProviders and RuntimeProfiles (selectable; built-in ones "+
			"are not, with a note), its Secrets (binding targets) and its Vaults and Tools (visible, unsupported). System-managed Flows "+
			"are not listed. At most "+strconv.Itoa(maxPerKind)+" per kind; truncated says when a kind had more.",
		httpapi.PolicyResourcesRead, 0), r.resources)

	previewOp := op("preview-pack-project", http.MethodPost, "/api/pack-projects/composer/preview", "Preview a selection's Pack",
		"Recomputes the complete dependency closure of the selection: each resource with its origin (direct, automatic), what "+
			"requires it, its archive path and whether removing it leaves it as a dependency; the bindings the Pack needs (an "+
			"unselected ModelProfile an Agent uses, every Secret a ModelProvider uses); and the issues that keep it from being a valid "+
			"Pack. Only default-namespace resources of the workspace are accepted. Writes nothing.",
		httpapi.PolicyResourcesRead, http.StatusOK)
	previewOp.MaxBodyBytes = maxPreviewBody
	huma.Register(api, previewOp, r.preview)

	createOp := op("create-pack-project", http.MethodPost, "/api/pack-projects", "Create a Pack project",
		"Recomputes the closure and its validation (issues are 422, nothing stored), takes an immutable snapshot of the selected "+
			"objects (their definition, labels and annotations; never status, server metadata or a Secret value), rewrites the "+
			"references that became bindings, generates the archive (the same selection of unchanged resources gives the same bytes "+
			"and digest), verifies it as an upload would be, and stores the project.",
		httpapi.PolicyResourcesWrite, http.StatusCreated, http.StatusUnprocessableEntity)
	createOp.MaxBodyBytes = maxCreateBody
	huma.Register(api, createOp, r.create)

	huma.Register(api, op("list-pack-projects", http.MethodGet, "/api/pack-projects", "List the workspace's Pack projects",
		"Newest first, at most limit (100) of them.", httpapi.PolicyResourcesRead, 0), r.list)
	huma.Register(api, op("get-pack-project", http.MethodGet, "/api/pack-projects/{id}", "Read a Pack project",
		"What it holds and the digest of its archive.", httpapi.PolicyResourcesRead, 0), r.get)

	download := op("download-pack-project-archive", http.MethodGet, "/api/pack-projects/{id}/archive", "Download a Pack project's archive",
		"The ZIP archive as an attachment named after the Pack; its sha256 is the project's digest.", httpapi.PolicyResourcesRead, 0)
	download.Responses = map[string]*huma.Response{"200": {Description: "The Pack archive", Content: map[string]*huma.MediaType{"application/zip": {}}}}
	huma.Register(api, download, r.archive)
}

// Inputs of the operations.
type (
	resourcesInput struct {
		httpapi.WorkspaceInput
	}
	previewInput struct {
		httpapi.WorkspaceInput
		Body PreviewRequest
	}
	createInput struct {
		httpapi.WorkspaceInput
		Body CreateRequest
	}
	listInput struct {
		httpapi.WorkspaceInput
		Limit int `query:"limit" minimum:"1" maximum:"100" default:"50" doc:"At most this many projects, newest first"`
	}
	projectInput struct {
		httpapi.WorkspaceInput
		ID string `path:"id" maxLength:"64" doc:"Id of the Pack project"`
	}
)

type (
	resourcesOutput struct{ Body ResourcesResponse }
	previewOutput   struct{ Body domain.Preview }
	createdOutput   struct {
		Status   int
		Location string `header:"Location"`
		Body     ProjectView
	}
	projectOutput struct{ Body ProjectView }
)

func (r *routes) archive(ctx context.Context, in *projectInput) (*huma.StreamResponse, error) {
	p, err := r.project(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		hctx.SetHeader("Content-Type", "application/zip")
		hctx.SetHeader("Content-Length", strconv.Itoa(len(p.Archive)))
		hctx.SetHeader("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": p.FileName}))
		hctx.SetHeader("X-Content-Type-Options", "nosniff")
		hctx.SetHeader("ETag", httpapi.Quote(string(p.Digest)))
		hctx.SetStatus(http.StatusOK)
		_, _ = hctx.BodyWriter().Write(p.Archive)
	}}, nil
}
