package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// body is a Management resource as the service API reads and writes it.
type body interface {
	// meta is the metadata the caller wrote: name, tags and annotations.
	meta() ResourceMetadata
	// validate checks what the kube API cannot (the apiVersion spelling, the name of a replace,
	// which is pathName; "" on create), with the body's field paths.
	validate(pathName string) error
}

// kindRoutes describes one Management kind to the generic list, read, create, replace and delete
// operations, so that every kind has the same workspace, ETag and Problem Details behaviour.
type kindRoutes[O client.Object, B body] struct {
	// noun names one object in summaries and messages ("model provider"); nouns names several;
	// article goes before noun ("a", "an").
	noun, nouns, article string
	// id is the singular of the operation IDs ("model-provider"); their plural adds an s.
	id string
	// path is the route of the collection ("/api/modelproviders").
	path string
	tag  string

	newObject func() O
	newList   func() client.ObjectList
	toBody    func(O) B
	// setDefinition writes the definition of the body onto the object, for create and replace.
	setDefinition func(O, B)

	// protect refuses to replace or delete an object that this API does not own (optional).
	protect func(O) error
	// referenced refuses to delete an object something still refers to (optional).
	referenced func(context.Context, O) error
	// afterDelete removes what the deleted object owned (optional).
	afterDelete func(context.Context, O) error

	// createDescription, replaceDescription and deleteDescription document the operations.
	createDescription, replaceDescription, deleteDescription string
}

// nameInput is the input of a read of one named object of the workspace.
type nameInput struct {
	WorkspaceInput
	Name string `path:"name" maxLength:"253" doc:"Name of the resource (metadata.name)"`
}

type createInput[B any] struct {
	WorkspaceInput
	Body B
}

type replaceInput[B any] struct {
	WorkspaceInput
	IfMatchInput
	Name string `path:"name" maxLength:"253" doc:"Name of the resource (metadata.name)"`
	Body B
}

type deleteInput struct {
	WorkspaceInput
	IfMatchInput
	Name string `path:"name" maxLength:"253" doc:"Name of the resource (metadata.name)"`
}

// objectOutput is one resource with its ETag.
type objectOutput[B any] struct {
	ETag string `header:"ETag" doc:"The resource's current ETag, for If-Match on the next write"`
	Body B
}

// items is every list of the API: {"items": [...]}.
type items[B any] struct {
	Items []B `json:"items"`
}

type listOutput[B any] struct {
	Body items[B]
}

func (k kindRoutes[O, B]) register(s *Server) {
	item := k.path + "/{name}"
	huma.Register(s.api, secured(huma.Operation{
		OperationID: "list-" + k.id + "s", Method: http.MethodGet, Path: k.path, Tags: []string{k.tag},
		Summary: "List the " + k.nouns + " of the workspace",
	}, PolicyResourcesRead), func(ctx context.Context, in *WorkspaceInput) (*listOutput[B], error) {
		items, err := listIn[O](ctx, s, k.newList())
		if err != nil {
			return nil, err
		}
		return listOf(items, k.toBody), nil
	})

	huma.Register(s.api, secured(huma.Operation{
		OperationID: "get-" + k.id, Method: http.MethodGet, Path: item, Tags: []string{k.tag},
		Summary: "Read " + k.article + " " + k.noun,
	}, PolicyResourcesRead), func(ctx context.Context, in *nameInput) (*objectOutput[B], error) {
		obj := k.newObject()
		if err := s.getIn(ctx, in.Name, obj); err != nil {
			return nil, err
		}
		return k.output(obj), nil
	})

	huma.Register(s.api, secured(huma.Operation{
		OperationID: "create-" + k.id, Method: http.MethodPost, Path: k.path, Tags: []string{k.tag},
		Summary: "Create " + k.article + " " + k.noun, Description: k.createDescription,
		DefaultStatus: http.StatusCreated,
	}, PolicyResourcesWrite), func(ctx context.Context, in *createInput[B]) (*objectOutput[B], error) {
		if err := in.Body.validate(""); err != nil {
			return nil, err
		}
		ns, err := s.workspace(ctx)
		if err != nil {
			return nil, err
		}
		obj := k.newObject()
		obj.SetNamespace(ns)
		obj.SetName(in.Body.meta().Name)
		k.write(obj, in.Body)
		if err := s.kube.Create(ctx, obj, client.FieldOwner(fieldManager)); err != nil {
			return nil, problem(err)
		}
		return k.output(obj), nil
	})

	huma.Register(s.api, secured(huma.Operation{
		OperationID: "replace-" + k.id, Method: http.MethodPut, Path: item, Tags: []string{k.tag},
		Summary:     "Replace " + k.article + " " + k.noun + "'s metadata and definition",
		Description: strings.TrimSpace("Idempotent: the same body with the current ETag leaves the " + k.noun + " and its ETag unchanged. " + k.replaceDescription),
	}, PolicyResourcesWrite), func(ctx context.Context, in *replaceInput[B]) (*objectOutput[B], error) {
		if err := in.Body.validate(in.Name); err != nil {
			return nil, err
		}
		obj, err := k.current(ctx, s, in.IfMatchInput, in.Name)
		if err != nil {
			return nil, err
		}
		k.write(obj, in.Body)
		// The kube update carries the resourceVersion, so a change in between is refused there too.
		if err := s.kube.Update(ctx, obj, client.FieldOwner(fieldManager)); err != nil {
			return nil, problem(err)
		}
		return k.output(obj), nil
	})

	huma.Register(s.api, secured(huma.Operation{
		OperationID: "delete-" + k.id, Method: http.MethodDelete, Path: item, Tags: []string{k.tag},
		Summary: "Delete " + k.article + " " + k.noun, Description: k.deleteDescription,
		DefaultStatus: http.StatusNoContent,
	}, PolicyResourcesDelete), func(ctx context.Context, in *deleteInput) (*struct{}, error) {
		obj, err := k.current(ctx, s, in.IfMatchInput, in.Name)
		if err != nil {
			return nil, err
		}
		if k.referenced != nil {
			if err := k.referenced(ctx, obj); err != nil {
				return nil, err
			}
		}
		uid, resourceVersion := obj.GetUID(), obj.GetResourceVersion()
		if err := s.kube.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}); err != nil {
			return nil, problem(err)
		}
		if k.afterDelete != nil {
			return nil, k.afterDelete(ctx, obj)
		}
		return nil, nil
	})
}

// current reads the object a write changes, after checking that the caller names the ETag it
// last read (428 without, 412 when stale) and that the object may be changed through this API.
func (k kindRoutes[O, B]) current(ctx context.Context, s *Server, in IfMatchInput, name string) (O, error) {
	var none O
	resourceVersion, err := in.requiredResourceVersion()
	if err != nil {
		return none, err
	}
	obj := k.newObject()
	if err := s.getIn(ctx, name, obj); err != nil {
		return none, err
	}
	if obj.GetResourceVersion() != resourceVersion {
		return none, staleETag(k.noun, name)
	}
	if k.protect != nil {
		if err := k.protect(obj); err != nil {
			return none, err
		}
	}
	return obj, nil
}

func (k kindRoutes[O, B]) write(obj O, in B) {
	m := in.meta()
	obj.SetLabels(m.Tags)
	obj.SetAnnotations(m.Annotations)
	k.setDefinition(obj, in)
}

func (k kindRoutes[O, B]) output(obj O) *objectOutput[B] {
	return &objectOutput[B]{ETag: etag(obj.GetResourceVersion()), Body: k.toBody(obj)}
}

// getIn reads the named object of the request's workspace into obj.
func (s *Server) getIn(ctx context.Context, name string, obj client.Object) error {
	ns, err := s.workspace(ctx)
	if err != nil {
		return err
	}
	return problem(s.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj))
}

// listIn lists the objects of list's kind in the request's workspace.
func listIn[O client.Object](ctx context.Context, s *Server, list client.ObjectList) ([]O, error) {
	ns, err := s.workspace(ctx)
	if err != nil {
		return nil, err
	}
	return listNamespace[O](ctx, s, ns, list)
}

// listNamespace lists the objects of list's kind in namespace ns, in name order.
func listNamespace[O client.Object](ctx context.Context, s *Server, ns string, list client.ObjectList) ([]O, error) {
	if err := s.kube.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, problem(err)
	}
	objects, err := meta.ExtractList(list)
	if err != nil {
		return nil, problem(err)
	}
	out := make([]O, 0, len(objects))
	for _, o := range objects {
		if typed, ok := o.(O); ok {
			out = append(out, typed)
		}
	}
	return out, nil
}

// deleteOwned deletes the objects of list's kind in namespace ns that a deleted object owned:
// the embedded control plane runs no garbage collector that would follow owner references.
func deleteOwned[O client.Object](ctx context.Context, s *Server, ns string, list client.ObjectList, owned func(O) bool) error {
	objects, err := listNamespace[O](ctx, s, ns, list)
	if err != nil {
		return err
	}
	for _, obj := range objects {
		if owned(obj) {
			if err := s.kube.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				return problem(err)
			}
		}
	}
	return nil
}

func listOf[O any, B any](items []O, toBody func(O) B) *listOutput[B] {
	bodies := make([]B, 0, len(items))
	for _, item := range items {
		bodies = append(bodies, toBody(item))
	}
	return itemsOutput(bodies)
}

// itemsOutput lists xs; none is an empty list, never null.
func itemsOutput[B any](xs []B) *listOutput[B] {
	return &listOutput[B]{Body: itemsOf(xs)}
}

func itemsOf[B any](xs []B) items[B] {
	if xs == nil {
		xs = []B{}
	}
	return items[B]{Items: xs}
}

// fresh is a new, empty object of a kind.
func fresh[T any]() *T { return new(T) }

// readOf registers op, a GET of what derive tells about one named object of the workspace; 404
// when the object does not exist.
func readOf[O client.Object, B any](s *Server, op huma.Operation, newObject func() O, derive func(context.Context, O) (B, error)) {
	op.Method = http.MethodGet
	huma.Register(s.api, secured(op, PolicyResourcesRead), func(ctx context.Context, in *nameInput) (*struct{ Body B }, error) {
		obj := newObject()
		if err := s.getIn(ctx, in.Name, obj); err != nil {
			return nil, err
		}
		body, err := derive(ctx, obj)
		if err != nil {
			return nil, err
		}
		return &struct{ Body B }{Body: body}, nil
	})
}
