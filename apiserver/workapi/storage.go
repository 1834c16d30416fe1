package workapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"platform.dev/platform/apiserver/native"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"

	workv1 "platform.dev/platform/apis/work/v1"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/kubeauth"
)

// Bounds of lists.
const (
	// maxPage is the most items one list answers; a list without a limit, or with a larger one,
	// gets a continue token (kubectl and client-go pagers follow it).
	maxPage = 500
)

func uidOf(_ string, name string) types.UID { return types.UID(name) }

// resource is one kind of the group: its Go types, reads, selectable fields, table and which
// outbox events are about which of its objects.
type resource struct {
	plural, singular, kind string
	shortNames             []string
	newObj, newList        func() runtime.Object
	reads                  kindReads
	attrs                  storage.AttrFunc
	table                  native.TableConvertor
	// about names the object an outbox event is about, and whether the event created it.
	about func(name string, payload map[string]any) (object string, created bool, ok bool)
	// personal kinds are told by events addressed to one Principal, and a caller sees only their
	// own objects of them.
	personal bool
}

// readREST serves get, list and watch of one resource from the SQL store.
type readREST struct {
	*resource
	api *API
}

var (
	_ rest.Getter               = (*readREST)(nil)
	_ rest.Lister               = (*readREST)(nil)
	_ rest.Watcher              = (*watchableREST)(nil)
	_ rest.Scoper               = (*readREST)(nil)
	_ rest.ShortNamesProvider   = (*readREST)(nil)
	_ rest.SingularNameProvider = (*readREST)(nil)
	_ rest.CategoriesProvider   = (*readREST)(nil)
)

func (r *readREST) New() runtime.Object     { return r.newObj() }
func (r *readREST) NewList() runtime.Object { return r.newList() }
func (r *readREST) Destroy()                {}
func (r *readREST) NamespaceScoped() bool   { return true }
func (r *readREST) GetSingularName() string { return r.singular }
func (r *readREST) ShortNames() []string    { return r.shortNames }
func (r *readREST) Categories() []string    { return []string{"work"} }
func (r *readREST) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	return r.table.ConvertToTable(ctx, obj, opts)
}

// workspace resolves the request's namespace to its workspace: the namespace of a workspace is
// its route name. found is false for any other namespace, where no Work lives.
func (a *API) workspace(ctx context.Context) (ns string, ws identity.Workspace, found bool, err error) {
	ns, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || ns == "" {
		return "", ws, false, apierrors.NewBadRequest("name the workspace's namespace (-n <workspace>): only lists and watches read across namespaces")
	}
	ws, err = a.Identity.Workspace(ctx, ns)
	if errors.Is(err, identity.ErrWorkspaceNotFound) {
		// Development mode's workspace has no identity record: its id is its name. Only callers
		// the authorizer let through reach here (administrators, for a namespace that is no
		// workspace's), and a namespace that names no workspace holds no Work.
		return ns, identity.Workspace{ID: ns, RouteName: ns}, true, nil
	}
	if err == nil && ws.RouteName != ns {
		return ns, identity.Workspace{}, false, nil
	}
	if err != nil {
		return ns, ws, false, apierrors.NewInternalError(fmt.Errorf("workspace of namespace %s: %w", ns, err))
	}
	return ns, ws, true, nil
}

// setRV sets the resourceVersion of an object read at outbox position pos: "<pos>.<version>"
// for the kinds whose rows have a version (Tasks, Interactions, FlowRuns, PendingActions), "<pos>"
// for the others. The two parts serve the two uses kube clients make of it. A watch resumes from
// the position: the outbox orders every change of the workspace, and a reflector watches again
// from the last object it received. A delete's precondition compares the version: it is the
// row's own (the service API's ETag), kept for as long as the row lives, while the outbox is
// pruned after a retention, so a precondition on the position alone could no longer be decided
// for an object that did not change for that long. Lists and bookmarks carry positions only.
// Clients treat a resourceVersion as opaque; this server accepts either form as a position.
func setRV(obj runtime.Object, pos int64) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv := strconv.FormatInt(pos, 10)
	if v := rowVersion(obj); v > 0 {
		rv += "." + strconv.FormatInt(v, 10)
	}
	m.SetResourceVersion(rv)
}

// rowVersion is the version of the row an object was read from; 0 for kinds without one.
func rowVersion(obj runtime.Object) int64 {
	switch o := obj.(type) {
	case *workv1.Task:
		return o.Status.Version
	case *workv1.Interaction:
		return o.Status.Version
	case *workv1.FlowRun:
		return o.Status.Version
	case *workv1.PendingAction:
		return o.Status.Version
	}
	return 0
}

// parseResourceVersion reads a resourceVersion this server issued: the outbox position and, for
// an object's, its row version (0 when it names none).
func parseResourceVersion(rv string) (pos, version int64, ok bool) {
	p, v, hasVersion := strings.Cut(rv, ".")
	pos, err := strconv.ParseInt(p, 10, 64)
	if err != nil || pos < 0 {
		return 0, 0, false
	}
	if hasVersion {
		if version, err = strconv.ParseInt(v, 10, 64); err != nil || version <= 0 {
			return 0, 0, false
		}
	}
	return pos, version, true
}

// Get reads one object. Its resourceVersion is the workspace's outbox position read before the
// row: a watch from it misses no later change.
func (r *readREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns, ws, found, err := r.api.workspace(ctx)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, apierrors.NewNotFound(r.api.groupResource(r.plural), name)
	}
	rv, err := r.api.outbox.last(ctx, ws.ID)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	obj, err := r.reads.get(ctx, &r.api.reader, page{namespace: ns, workspaceID: ws.ID, principal: principalOf(ctx)}, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, apierrors.NewInternalError(err)
	}
	setRV(obj, rv)
	return obj, nil
}

// principalOf is the caller's Principal (kubeauth's users); empty for administrators' certificates
// and the loopback client.
func principalOf(ctx context.Context) string {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return ""
	}
	if ids := u.GetExtra()[kubeauth.ExtraPrincipalID]; len(ids) == 1 {
		return ids[0]
	}
	return ""
}

// continueToken is where the next page starts and the position the first page was read at.
type continueToken struct {
	RV    int64  `json:"rv"`
	After string `json:"after"`
	// Namespace is the workspace the next page starts in, for a list across namespaces.
	Namespace string `json:"ns,omitempty"`
}

func encodeContinue(t continueToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.After == "" {
		return t, apierrors.NewBadRequest("the continue token is not one this server issued")
	}
	return t, nil
}

// pushdown collects the equalities of a field selector that SQL can apply.
func pushdown(f fields.Selector) map[string]string {
	eq := map[string]string{}
	if f == nil {
		return eq
	}
	for _, req := range f.Requirements() {
		if req.Operator == selection.Equals || req.Operator == selection.DoubleEquals {
			eq[req.Field] = req.Value
		}
	}
	return eq
}

func (r *readREST) predicate(opts *metainternalversion.ListOptions) storage.SelectionPredicate {
	p := storage.SelectionPredicate{Label: labels.Everything(), Field: fields.Everything(), GetAttrs: r.attrs}
	if opts != nil && opts.LabelSelector != nil {
		p.Label = opts.LabelSelector
	}
	if opts != nil && opts.FieldSelector != nil {
		p.Field = opts.FieldSelector
	}
	return p
}

// List reads a page of the workspace's objects, newest first, filtered by the selectors.
func (r *readREST) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	if opts == nil {
		opts = &metainternalversion.ListOptions{}
	}
	if ns, _ := genericapirequest.NamespaceFrom(ctx); ns == "" {
		return r.listAll(ctx, opts)
	}
	list := r.newList()
	ns, ws, found, err := r.api.workspace(ctx)
	if err != nil {
		return nil, err
	}
	if !found {
		meta.SetList(list, nil)
		return list, nil
	}
	pred := r.predicate(opts)
	limit := int(opts.Limit)
	if limit <= 0 || limit > maxPage {
		limit = maxPage
	}
	tok := continueToken{}
	if opts.Continue != "" {
		if tok, err = decodeContinue(opts.Continue); err != nil {
			return nil, err
		}
	} else if tok.RV, err = r.api.outbox.last(ctx, ws.ID); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	items, err := r.reads.list(ctx, &r.api.reader, page{workspaceID: ws.ID, namespace: ns, principal: principalOf(ctx), after: tok.After, limit: limit,
		equal: pushdown(pred.Field)})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	kept := items[:0]
	var last string
	for _, obj := range items {
		last = metaName(obj)
		setRV(obj, tok.RV)
		if ok, err := pred.Matches(obj); err == nil && ok {
			kept = append(kept, obj)
		}
	}
	if err := meta.SetList(list, kept); err != nil {
		return nil, err
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(strconv.FormatInt(tok.RV, 10))
	if len(items) == limit {
		lm.SetContinue(encodeContinue(continueToken{RV: tok.RV, After: last}))
	}
	return list, nil
}

func metaName(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}

// watchableREST adds watches to the reads.
type watchableREST struct{ *readREST }

// Watch streams the changes of the workspace's objects from the Workplace outbox (see feed).
func (r *watchableREST) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	if opts == nil {
		opts = &metainternalversion.ListOptions{}
	}
	if ns, _ := genericapirequest.NamespaceFrom(ctx); ns == "" {
		return r.watchAll(ctx, opts)
	}
	ns, ws, found, err := r.api.workspace(ctx)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, apierrors.NewNotFound(r.api.groupResource("namespaces"), ns)
	}
	user := ""
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		user = u.GetName()
	}
	return r.api.feeds.watch(ctx, watchRequest{
		res: r.resource, namespace: ns, workspaceID: ws.ID, user: user, principal: principalOf(ctx), pred: r.predicate(opts),
		resourceVersion: opts.ResourceVersion, bookmarks: opts.AllowWatchBookmarks, initialEvents: opts.SendInitialEvents,
	})
}
