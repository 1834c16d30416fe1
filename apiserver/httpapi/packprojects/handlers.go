package packprojects

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/packprojects"
	"platform.dev/platform/internal/pack"
)

// maxPerKind bounds the inventory: at most this many objects of each kind.
const maxPerKind = 500

// namespace is the kube namespace of the request's workspace: its default resource namespace,
// the only one the Composer reads.
func (r *routes) namespace(ctx context.Context) (string, error) {
	return r.Workspace(ctx)
}

func (r *routes) resources(ctx context.Context, _ *resourcesInput) (*resourcesOutput, error) {
	ns, err := r.namespace(ctx)
	if err != nil {
		return nil, err
	}
	out := &resourcesOutput{Body: ResourcesResponse{Items: []domain.InventoryItem{}}}
	for _, kind := range domain.InventoryKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(platformv1.GroupVersion.WithKind(kind + "List"))
		if err := r.Kube().List(ctx, list, client.InNamespace(ns), client.Limit(maxPerKind)); err != nil {
			return nil, httpapi.Problem(err)
		}
		if list.GetContinue() != "" {
			out.Body.Truncated = true
		}
		for i := range list.Items {
			o := &domain.Object{Kind: kind, Name: list.Items[i].GetName(), Content: list.Items[i].Object}
			if domain.Listed(o) {
				out.Body.Items = append(out.Body.Items, domain.ItemOf(o))
			}
		}
	}
	return out, nil
}

// lookup reads objects of the namespace by kind and name, each once per request.
func (r *routes) lookup(ctx context.Context, ns string) domain.Lookup {
	seen := map[string]*domain.Object{}
	return func(kind, name string) (*domain.Object, error) {
		key := domain.Key(kind, name)
		if o, ok := seen[key]; ok {
			return o, nil
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(platformv1.GroupVersion.WithKind(kind))
		err := r.Kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
		var o *domain.Object
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, httpapi.Problem(err)
		default:
			o = &domain.Object{Kind: kind, Name: name, Content: u.Object}
		}
		seen[key] = o
		return o, nil
	}
}

func (r *routes) compose(ctx context.Context, selection []string) (*domain.Preview, error) {
	ns, err := r.namespace(ctx)
	if err != nil {
		return nil, err
	}
	return domain.Compose(selection, r.lookup(ctx, ns))
}

func (r *routes) preview(ctx context.Context, in *previewInput) (*previewOutput, error) {
	p, err := r.compose(ctx, in.Body.Selection)
	if err != nil {
		return nil, err
	}
	return &previewOutput{Body: *p}, nil
}

// store is the project store; 503 when the server runs without one.
func (r *routes) store() (*domain.Store, error) {
	if s := r.PackProjects(); s != nil {
		return s, nil
	}
	return nil, httpapi.Unavailable("Pack projects are not available on this server", nil)
}

func (r *routes) create(ctx context.Context, in *createInput) (*createdOutput, error) {
	projects, err := r.store()
	if err != nil {
		return nil, err
	}
	rc, ok := httpapi.RequestContextFrom(ctx)
	if !ok || rc.PrincipalID == "" {
		return nil, huma.Error403Forbidden("no resolved management context: the request has no Principal")
	}
	p, err := r.compose(ctx, in.Body.Selection)
	if err != nil {
		return nil, err
	}
	if len(p.Issues) > 0 {
		errs := make([]error, 0, len(p.Issues))
		for _, issue := range p.Issues {
			errs = append(errs, &huma.ErrorDetail{Message: issue.Key + ": " + issue.Message, Location: "body.selection"})
		}
		return nil, huma.Error422UnprocessableEntity(fmt.Sprintf("the selection is not a valid Pack: %s", p.Issues[0].Message), errs...)
	}
	if len(p.Resources) == 0 {
		return nil, httpapi.BodyInvalid("selection", "selects no resource a Pack can carry")
	}
	c := domain.Coordinate{Publisher: in.Body.Publisher, Name: in.Body.Name, Version: in.Body.Version, DisplayName: in.Body.DisplayName,
		Description: in.Body.Description, Audience: in.Body.Audience, Purpose: in.Body.Purpose, Categories: in.Body.Categories, Tags: in.Body.Tags}
	data, archive, err := p.Generate(c)
	var refused *pack.Error
	switch {
	case errors.Is(err, domain.ErrTooLarge):
		return nil, huma.Error422UnprocessableEntity(err.Error())
	case errors.As(err, &refused):
		// A snapshot the archive format refuses (an object the kind's schema no longer accepts):
		// the person fixes the resource, so the answer names it.
		return nil, huma.Error422UnprocessableEntity("the selection does not make a valid Pack archive: "+refused.Error(),
			&huma.ErrorDetail{Message: refused.Error(), Location: "body.selection", Value: refused.Path})
	}
	if err != nil {
		return nil, httpapi.Internal(err)
	}
	stored, err := projects.Create(ctx, domain.Project{Workspace: rc.Namespace, Publisher: c.Publisher, Name: c.Name, Version: c.Version,
		Direct: p.Direct(), Automatic: p.Automatic(), Digest: domain.Digest(archive), FileName: domain.FileName(c), Archive: data, Creator: rc.PrincipalID})
	if errors.Is(err, domain.ErrTooMany) {
		return nil, huma.Error409Conflict(err.Error())
	}
	if err != nil {
		return nil, httpapi.Internal(err)
	}
	view := viewOf(stored)
	return &createdOutput{Status: http.StatusCreated, Location: "/api/pack-projects/" + stored.ID, Body: view}, nil
}

func (r *routes) list(ctx context.Context, in *listInput) (*httpapi.ListOutput[ProjectView], error) {
	projects, err := r.store()
	if err != nil {
		return nil, err
	}
	ns, err := r.namespace(ctx)
	if err != nil {
		return nil, err
	}
	limit := in.Limit
	if limit <= 0 {
		limit = defaultList
	}
	items, err := projects.List(ctx, ns, limit)
	if err != nil {
		return nil, httpapi.Internal(err)
	}
	return httpapi.ListOf(items, viewOf), nil
}

// project reads the project id of the request's workspace, with its archive.
func (r *routes) project(ctx context.Context, id string) (domain.Project, error) {
	projects, err := r.store()
	if err != nil {
		return domain.Project{}, err
	}
	ns, err := r.namespace(ctx)
	if err != nil {
		return domain.Project{}, err
	}
	p, err := projects.Get(ctx, ns, id)
	if errors.Is(err, domain.ErrNotFound) {
		return p, huma.Error404NotFound(fmt.Sprintf("Pack project %q not found in the workspace", id))
	}
	if err != nil {
		return p, httpapi.Internal(err)
	}
	return p, nil
}

func (r *routes) get(ctx context.Context, in *projectInput) (*projectOutput, error) {
	p, err := r.project(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	return &projectOutput{Body: viewOf(p)}, nil
}

func (r *routes) delete(ctx context.Context, in *projectInput) (*struct{}, error) {
	projects, err := r.store()
	if err != nil {
		return nil, err
	}
	ns, err := r.namespace(ctx)
	if err != nil {
		return nil, err
	}
	err = projects.Delete(ctx, ns, in.ID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, huma.Error404NotFound(fmt.Sprintf("Pack project %q not found in the workspace", in.ID))
	}
	if err != nil {
		return nil, httpapi.Internal(err)
	}
	return nil, nil
}
