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
	Meta() ResourceMetadata
	// validate checks what the kube API cannot (the apiVersion spelling, the name of a replace,
	// which is pathName; "" on create), with the body's field paths.
	Validate(pathName string) error
}

// KindRoutes describes one Management kind to the generic list, read, create, replace and delete
// operations, so that every kind has the same workspace, ETag and Problem Details behaviour.
type KindRoutes[O client.Object, B body] struct {
	// Noun names one object in summaries and messages ("model provider"); Nouns names several;
	// Article goes before Noun ("a", "an").
	Noun, Nouns, Article string
	// ID is the singular of the operation IDs ("model-provider"); their plural adds an s.
	ID string
	// Path is the route of the collection ("/api/modelproviders").
	Path string
	// ListPath is where the collection is listed, when not at Path (another operation holds
	// GET Path).
	ListPath string
	Tag      string

	NewObject func() O
	NewList   func() client.ObjectList
	ToBody    func(O) B
	// SetDefinition writes the definition of the body onto the object, for create and replace.
	SetDefinition func(O, B)

	// The rules about what may be changed or deleted (a referenced Agent, a system-managed Flow,
	// ...) are the kube API's admission, which the writes meet; they are not repeated here.

	// Admit checks what only the rest of the workspace tells about an object about to be created
	// or replaced (optional).
	Admit func(context.Context, O) error
	// NoDelete leaves the delete operation to the area, which needs options of its own.
	NoDelete bool
	// AfterDelete removes what the deleted object owned (optional).
	AfterDelete func(context.Context, O) error

	// CreateDescription, ReplaceDescription and DeleteDescription document the operations.
	CreateDescription, ReplaceDescription, DeleteDescription string
}

// NameInput is the input of a read of one named object of the workspace.
type NameInput struct {
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

// ObjectOutput is one resource with its ETag.
type ObjectOutput[B any] struct {
	ETag string `header:"ETag" doc:"The resource's current ETag, for If-Match on the next write"`
	Body B
}

// Items is every list of the API: {"items": [...]}.
type Items[B any] struct {
	Items []B `json:"items"`
}

type ListOutput[B any] struct {
	Body Items[B]
}

func (k KindRoutes[O, B]) Register(s *Server) {
	item := k.Path + "/{name}"
	listPath := k.ListPath
	if listPath == "" {
		listPath = k.Path
	}
	huma.Register(s.api, Secured(huma.Operation{
		OperationID: "list-" + k.ID + "s", Method: http.MethodGet, Path: listPath, Tags: []string{k.Tag},
		Summary: "List the " + k.Nouns + " of the workspace",
	}, PolicyResourcesRead), func(ctx context.Context, in *WorkspaceInput) (*ListOutput[B], error) {
		items, err := ListIn[O](ctx, s, k.NewList())
		if err != nil {
			return nil, err
		}
		return ListOf(items, k.ToBody), nil
	})

	huma.Register(s.api, Secured(huma.Operation{
		OperationID: "get-" + k.ID, Method: http.MethodGet, Path: item, Tags: []string{k.Tag},
		Summary: "Read " + k.Article + " " + k.Noun,
	}, PolicyResourcesRead), func(ctx context.Context, in *NameInput) (*ObjectOutput[B], error) {
		obj := k.NewObject()
		if err := s.GetIn(ctx, in.Name, obj); err != nil {
			return nil, err
		}
		return k.output(obj), nil
	})

	huma.Register(s.api, Secured(huma.Operation{
		OperationID: "create-" + k.ID, Method: http.MethodPost, Path: k.Path, Tags: []string{k.Tag},
		Summary: "Create " + k.Article + " " + k.Noun, Description: k.CreateDescription,
		DefaultStatus: http.StatusCreated,
	}, PolicyResourcesWrite), func(ctx context.Context, in *createInput[B]) (*ObjectOutput[B], error) {
		if err := in.Body.Validate(""); err != nil {
			return nil, err
		}
		ns, err := s.Workspace(ctx)
		if err != nil {
			return nil, err
		}
		obj := k.NewObject()
		obj.SetNamespace(ns)
		obj.SetName(in.Body.Meta().Name)
		k.write(obj, in.Body)
		if err := k.admit(ctx, obj); err != nil {
			return nil, err
		}
		if err := s.kube.Create(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
			return nil, Problem(err)
		}
		return k.output(obj), nil
	})

	huma.Register(s.api, Secured(huma.Operation{
		OperationID: "replace-" + k.ID, Method: http.MethodPut, Path: item, Tags: []string{k.Tag},
		Summary:     "Replace " + k.Article + " " + k.Noun + "'s metadata and definition",
		Description: strings.TrimSpace("Idempotent: the same body with the current ETag leaves the " + k.Noun + " and its ETag unchanged. " + k.ReplaceDescription),
	}, PolicyResourcesWrite), func(ctx context.Context, in *replaceInput[B]) (*ObjectOutput[B], error) {
		if err := in.Body.Validate(in.Name); err != nil {
			return nil, err
		}
		obj, err := k.Current(ctx, s, in.IfMatchInput, in.Name)
		if err != nil {
			return nil, err
		}
		k.write(obj, in.Body)
		if err := k.admit(ctx, obj); err != nil {
			return nil, err
		}
		// The kube update carries the resourceVersion, so a change in between is refused there too.
		if err := s.kube.Update(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
			return nil, Problem(err)
		}
		return k.output(obj), nil
	})

	if k.NoDelete {
		return
	}
	huma.Register(s.api, Secured(huma.Operation{
		OperationID: "delete-" + k.ID, Method: http.MethodDelete, Path: item, Tags: []string{k.Tag},
		Summary: "Delete " + k.Article + " " + k.Noun, Description: k.DeleteDescription,
		DefaultStatus: http.StatusNoContent,
	}, PolicyResourcesDelete), func(ctx context.Context, in *deleteInput) (*struct{}, error) {
		obj, err := k.Current(ctx, s, in.IfMatchInput, in.Name)
		if err != nil {
			return nil, err
		}
		uid, resourceVersion := obj.GetUID(), obj.GetResourceVersion()
		if err := s.kube.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}); err != nil {
			return nil, Problem(err)
		}
		if k.AfterDelete != nil {
			return nil, k.AfterDelete(ctx, obj)
		}
		return nil, nil
	})
}

func (k KindRoutes[O, B]) admit(ctx context.Context, obj O) error {
	if k.Admit == nil {
		return nil
	}
	return k.Admit(ctx, obj)
}

// Current reads the object a write changes, after checking that the caller names the ETag it
// last read (428 without, 412 when stale).
func (k KindRoutes[O, B]) Current(ctx context.Context, s *Server, in IfMatchInput, name string) (O, error) {
	var none O
	resourceVersion, err := in.RequiredResourceVersion()
	if err != nil {
		return none, err
	}
	obj := k.NewObject()
	if err := s.GetIn(ctx, name, obj); err != nil {
		return none, err
	}
	if obj.GetResourceVersion() != resourceVersion {
		return none, StaleETag(k.Noun, name)
	}
	return obj, nil
}

func (k KindRoutes[O, B]) write(obj O, in B) {
	m := in.Meta()
	obj.SetLabels(m.Tags)
	obj.SetAnnotations(m.Annotations)
	k.SetDefinition(obj, in)
}

func (k KindRoutes[O, B]) output(obj O) *ObjectOutput[B] {
	return &ObjectOutput[B]{ETag: ETag(obj.GetResourceVersion()), Body: k.ToBody(obj)}
}

// getIn reads the named object of the request's workspace into obj.
func (s *Server) GetIn(ctx context.Context, name string, obj client.Object) error {
	ns, err := s.Workspace(ctx)
	if err != nil {
		return err
	}
	return Problem(s.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj))
}

// ListIn lists the objects of list's kind in the request's workspace.
func ListIn[O client.Object](ctx context.Context, s *Server, list client.ObjectList) ([]O, error) {
	ns, err := s.Workspace(ctx)
	if err != nil {
		return nil, err
	}
	return ListNamespace[O](ctx, s, ns, list)
}

// ListNamespace lists the objects of list's kind in namespace ns, in name order.
func ListNamespace[O client.Object](ctx context.Context, s *Server, ns string, list client.ObjectList) ([]O, error) {
	if err := s.kube.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, Problem(err)
	}
	objects, err := meta.ExtractList(list)
	if err != nil {
		return nil, Problem(err)
	}
	out := make([]O, 0, len(objects))
	for _, o := range objects {
		if typed, ok := o.(O); ok {
			out = append(out, typed)
		}
	}
	return out, nil
}

// DeleteOwned deletes the objects of list's kind in namespace ns that a deleted object owned:
// the embedded control plane runs no garbage collector that would follow owner references.
func DeleteOwned[O client.Object](ctx context.Context, s *Server, ns string, list client.ObjectList, owned func(O) bool) error {
	objects, err := ListNamespace[O](ctx, s, ns, list)
	if err != nil {
		return err
	}
	for _, obj := range objects {
		if owned(obj) {
			if err := s.kube.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				return Problem(err)
			}
		}
	}
	return nil
}

func ListOf[O any, B any](items []O, toBody func(O) B) *ListOutput[B] {
	bodies := make([]B, 0, len(items))
	for _, item := range items {
		bodies = append(bodies, toBody(item))
	}
	return ItemsOutput(bodies)
}

// ItemsOutput lists xs; none is an empty list, never null.
func ItemsOutput[B any](xs []B) *ListOutput[B] {
	return &ListOutput[B]{Body: ItemsOf(xs)}
}

func ItemsOf[B any](xs []B) Items[B] {
	if xs == nil {
		xs = []B{}
	}
	return Items[B]{Items: xs}
}

// Fresh is a new, empty object of a kind.
func Fresh[T any]() *T { return new(T) }

// ReadOf registers op, a GET of what derive tells about one named object of the workspace; 404
// when the object does not exist.
func ReadOf[O client.Object, B any](s *Server, op huma.Operation, newObject func() O, derive func(context.Context, O) (B, error)) {
	op.Method = http.MethodGet
	huma.Register(s.api, Secured(op, PolicyResourcesRead), func(ctx context.Context, in *NameInput) (*struct{ Body B }, error) {
		obj := newObject()
		if err := s.GetIn(ctx, in.Name, obj); err != nil {
			return nil, err
		}
		body, err := derive(ctx, obj)
		if err != nil {
			return nil, err
		}
		return &struct{ Body B }{Body: body}, nil
	})
}
