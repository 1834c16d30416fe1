package management

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/internal/resourcenamespace"
)

const tagDashboards = "Dashboards"

// Dashboard is a Dashboard in the spec's envelope: published Entries of the workspace with their
// presentation role and order.
type Dashboard struct {
	APIVersion string                         `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                         `json:"kind" enum:"Dashboard"`
	Metadata   httpapi.ResourceMetadata       `json:"metadata"`
	Definition platformv1.DashboardDefinition `json:"definition"`
	Status     *httpapi.ResourceState         `json:"status,omitempty" readOnly:"true"`
}

func (in Dashboard) Meta() httpapi.ResourceMetadata { return in.Metadata }

func (in Dashboard) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func dashboardFrom(d *platformv1.Dashboard) Dashboard {
	state := httpapi.StateFrom(d.Status.ResourceStatus)
	return Dashboard{APIVersion: httpapi.SpecAPIVersion, Kind: "Dashboard", Metadata: httpapi.MetadataFrom(d.ObjectMeta), Definition: d.Definition, Status: &state}
}

// DashboardView is a Dashboard resolved for display: its references in display order (the
// Primary one, then Featured, then Standard, each by order then name) with the published
// presentation of each.
type DashboardView struct {
	Name        string               `json:"name"`
	DisplayName string               `json:"displayName,omitempty"`
	Description string               `json:"description,omitempty"`
	IsDefault   bool                 `json:"isDefault"`
	Entries     []DashboardViewEntry `json:"entries"`
}

// Display states of a Dashboard reference.
const (
	referenceAvailable    = "available"
	referenceUnpublished  = "unpublished"
	referenceUnauthorized = "unauthorized"
	referenceMissing      = "missing"
)

// DashboardViewEntry is one reference of a Dashboard, resolved.
type DashboardViewEntry struct {
	Namespace string          `json:"namespace" doc:"Resource namespace of the Entry"`
	Name      string          `json:"name"`
	Role      string          `json:"role" enum:"Primary,Featured,Standard"`
	Order     int32           `json:"order"`
	State     string          `json:"state" enum:"available,unpublished,unauthorized,missing" doc:"available: published, and the caller may start it; unpublished: only a draft exists; unauthorized: the caller may not start runs in the workspace; missing: no such Entry"`
	Entry     *PublishedEntry `json:"entry,omitempty" doc:"The published Entry, when there is one"`
}

func (s *routes) registerDashboards() {
	httpapi.KindRoutes[*platformv1.Dashboard, Dashboard]{
		Noun: "dashboard", Nouns: "dashboards", Article: "a", ID: "dashboard", Path: "/api/dashboards", Tag: tagDashboards,
		NewObject:     httpapi.Fresh[platformv1.Dashboard],
		NewList:       func() client.ObjectList { return &platformv1.DashboardList{} },
		ToBody:        dashboardFrom,
		SetDefinition: func(d *platformv1.Dashboard, in Dashboard) { d.Definition = in.Definition },
		Admit:         s.oneDefaultDashboard,
		CreateDescription: "A Dashboard places published Entries of the workspace (of any of its resource namespaces) with a role: " +
			"at most one Primary (422 otherwise), Featured, Standard. At most one Dashboard of the workspace is the default " +
			"(isDefault; 422 for a second one); every workspace starts with `home`.",
	}.Register(s.Server)

	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "get-dashboard-view", Path: "/api/dashboards/{name}/view", Tags: []string{tagDashboards},
		Summary: "Resolve a Dashboard for display",
		Description: "Its references in display order (Primary, Featured, Standard; each by order, then name), each with the " +
			"published presentation of its Entry. A reference to an Entry that is only a draft, that the caller may not " +
			"start, or that does not exist is marked (unpublished, unauthorized, missing) rather than failing the view.",
	}, httpapi.Fresh[platformv1.Dashboard], s.dashboardView)
}

// oneDefaultDashboard refuses a second default Dashboard in the workspace.
func (s *routes) oneDefaultDashboard(ctx context.Context, d *platformv1.Dashboard) error {
	if !d.Definition.IsDefault {
		return nil
	}
	dashboards, err := httpapi.ListNamespace[*platformv1.Dashboard](ctx, s.Server, d.Namespace, &platformv1.DashboardList{})
	if err != nil {
		return err
	}
	for _, other := range dashboards {
		if other.Name != d.Name && other.Definition.IsDefault {
			return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.definition.isDefault",
				Message: fmt.Sprintf("Dashboard %q is the workspace's default; a workspace has at most one", other.Name)})
		}
	}
	return nil
}

var roleOrder = map[platformv1.DashboardRole]int{platformv1.PrimaryDashboardRole: 0, platformv1.FeaturedDashboardRole: 1, platformv1.StandardDashboardRole: 2}

func (s *routes) dashboardView(ctx context.Context, d *platformv1.Dashboard) (DashboardView, error) {
	view := DashboardView{Name: d.Name, DisplayName: d.Definition.DisplayName, Description: d.Definition.Description,
		IsDefault: d.Definition.IsDefault, Entries: []DashboardViewEntry{}}
	rc, _ := httpapi.RequestContextFrom(ctx)
	canStart := rc.Permissions.Has(identity.PermRunsExecute)
	refs := append([]platformv1.DashboardEntryReference(nil), d.Definition.Entries...)
	sort.SliceStable(refs, func(i, j int) bool {
		a, b := refs[i], refs[j]
		if roleOrder[a.Role] != roleOrder[b.Role] {
			return roleOrder[a.Role] < roleOrder[b.Role]
		}
		if a.Order != b.Order {
			return a.Order < b.Order
		}
		return a.Name < b.Name
	})
	for _, ref := range refs {
		rns := ref.Namespace
		if rns == "" {
			rns = platformv1.DefaultResourceNamespace
		}
		item := DashboardViewEntry{Namespace: string(rns), Name: string(ref.Name), Role: string(ref.Role), Order: ref.Order, State: referenceMissing}
		ns, err := resourcenamespace.Resolve(ctx, s.Kube(), d.Namespace, rns)
		switch {
		case errors.Is(err, resourcenamespace.ErrNotFound):
			view.Entries = append(view.Entries, item)
			continue
		case err != nil:
			return view, httpapi.Problem(err)
		}
		published := &platformv1.PublishedEntry{}
		err = s.Kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: string(ref.Name)}, published)
		switch {
		case err == nil:
			entry := publishedEntryFrom(published, rc.Namespace, rns)
			item.Entry, item.State = &entry, referenceAvailable
			if !canStart {
				item.State = referenceUnauthorized
			}
		case apierrors.IsNotFound(err):
			err := s.Kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: string(ref.Name)}, &platformv1.Entry{})
			if err == nil {
				item.State = referenceUnpublished
			} else if !apierrors.IsNotFound(err) {
				return view, httpapi.Problem(err)
			}
		default:
			return view, httpapi.Problem(err)
		}
		view.Entries = append(view.Entries, item)
	}
	return view, nil
}
