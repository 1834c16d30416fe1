package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/internal/publication"
	"platform.dev/platform/internal/resourcenamespace"
)

const tagEntries = "Entries"

// Entry is an Entry draft in the spec's envelope: what it shows and accepts, and its
// administrative binding to an Agent or a Flow. The Workplace never reads it; it reads the
// PublishedEntry that publication writes.
type Entry struct {
	APIVersion string                     `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                     `json:"kind" enum:"Entry"`
	Metadata   httpapi.ResourceMetadata   `json:"metadata"`
	Definition platformv1.EntryDefinition `json:"definition"`
	Status     *EntryState                `json:"status,omitempty" readOnly:"true"`
}

// EntryState is the observed state of a draft and its publications.
type EntryState struct {
	httpapi.ResourceState
	PublishedGeneration int64                               `json:"publishedGeneration,omitempty" doc:"The metadata.generation of the draft last published"`
	Publications        []platformv1.EntryPublicationRecord `json:"publications,omitempty" doc:"The latest publications, newest first: generation, revision, when, by whom and the exact Flow versions pinned"`
}

func (in Entry) Meta() httpapi.ResourceMetadata { return in.Metadata }

func (in Entry) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func entryFrom(e *platformv1.Entry) Entry {
	return Entry{
		APIVersion: httpapi.SpecAPIVersion, Kind: "Entry", Metadata: httpapi.MetadataFrom(e.ObjectMeta), Definition: e.Definition,
		Status: &EntryState{ResourceState: httpapi.StateFrom(e.Status.ResourceStatus), PublishedGeneration: e.Status.PublishedGeneration,
			Publications: e.Status.Publications},
	}
}

// PublishedEntry is the immutable projection of an Entry that the Workplace renders and submits
// through: its presentation and the exact Flow version it starts, never its binding.
type PublishedEntry struct {
	Name               string                           `json:"name" doc:"Name of the Entry"`
	Namespace          string                           `json:"namespace" doc:"Resource namespace of the Entry in its workspace: default, or a Pack's publisher.name"`
	OwnerWorkspaceID   string                           `json:"ownerWorkspaceId" doc:"The one workspace the Entry belongs to and runs in"`
	Workspace          string                           `json:"workspace" doc:"Route name of the owner workspace"`
	Presentation       platformv1.EntryPresentation     `json:"presentation" doc:"What the Entry shows and accepts, as published"`
	ResolvedTarget     platformv1.FlowVersionReference  `json:"resolvedTarget" doc:"The exact, pinned Flow version a submission starts"`
	ContinuationTarget *platformv1.FlowVersionReference `json:"continuationTarget,omitempty" doc:"The exact Flow version follow-up messages start; absent continues with resolvedTarget"`
	EntryGeneration    int64                            `json:"entryGeneration" doc:"The generation of the draft that was published"`
	PublishedAt        *time.Time                       `json:"publishedAt,omitempty"`
	PublishedBy        string                           `json:"publishedBy,omitempty" doc:"A Principal id, or platform:entry-controller for an automatic publication"`
	TargetState        string                           `json:"targetState" enum:"Executable,Disabled,Unavailable,Unknown" doc:"Whether the pinned Flow version can run now; submission checks it again. Unknown until its reconciler reported"`
	Reason             string                           `json:"reason,omitempty" doc:"Stable reason code of targetState (FlowDisabled, FlowVersionNotFound, FlowNotFound, AgentNotFound, ...)"`
}

func publishedEntryFrom(p *platformv1.PublishedEntry, workspace string, rns platformv1.ResourceNamespace) PublishedEntry {
	out := PublishedEntry{
		Name: p.Name, Namespace: string(rns), OwnerWorkspaceID: p.Definition.OwnerWorkspaceID, Workspace: workspace,
		Presentation: p.Definition.EntryPresentation, ResolvedTarget: p.Definition.ResolvedTarget,
		ContinuationTarget: p.Definition.ContinuationTarget, EntryGeneration: p.Definition.EntryGeneration,
		PublishedBy: p.Definition.PublishedBy, TargetState: string(p.Status.TargetState),
	}
	if out.TargetState == "" {
		out.TargetState = "Unknown"
	}
	if at := p.Definition.PublishedAt; at != nil {
		t := at.UTC()
		out.PublishedAt = &t
	}
	if ready := meta.FindStatusCondition(p.Status.Conditions, platformv1.ReadyCondition); ready != nil && out.TargetState != string(platformv1.TargetExecutable) {
		out.Reason = ready.Reason
	}
	return out
}

// EntryPublicationOutcome is the answer to a publish request.
type EntryPublicationOutcome struct {
	Changed   bool           `json:"changed" doc:"False when the draft was published unchanged before: publishing it again changed nothing"`
	Published PublishedEntry `json:"published"`
}

// EntryDependencies shows both sides of an Entry: the administrative binding of its draft and
// the Flow versions its publication pinned.
type EntryDependencies struct {
	Binding          platformv1.EntryBinding  `json:"binding" doc:"The draft's binding: an Agent or a Flow"`
	Continuation     *platformv1.EntryBinding `json:"continuation,omitempty" doc:"The draft's continuation target, if any"`
	ResolvedFlow     *DependencyFlow          `json:"resolvedFlow,omitempty" doc:"The Flow version the publication pinned; absent while the Entry is not published"`
	ContinuationFlow *DependencyFlow          `json:"continuationFlow,omitempty"`
	Dashboards       []string                 `json:"dashboards" doc:"The Dashboards of the workspace that show the Entry"`
}

// DependencyFlow is a pinned Flow version and what it is.
type DependencyFlow struct {
	platformv1.FlowVersionReference
	SystemManaged bool   `json:"systemManaged" doc:"True for the hidden Direct Agent Flow an Agent binding is published through"`
	Agent         string `json:"agent,omitempty" doc:"The Agent a Direct Flow hands work to"`
	Exists        bool   `json:"exists" doc:"False when the version is no longer published"`
}

// entryPath selects an Entry: its name, and its resource namespace on the namespaced routes.
type entryPath interface {
	entryName() string
	resourceNamespace() platformv1.ResourceNamespace
}

type DefaultEntryPath struct {
	httpapi.WorkspaceInput
	Name string `path:"name" maxLength:"253" doc:"Name of the Entry"`
}

func (in *DefaultEntryPath) entryName() string { return in.Name }
func (in *DefaultEntryPath) resourceNamespace() platformv1.ResourceNamespace {
	return platformv1.DefaultResourceNamespace
}

type NamespacedEntryPath struct {
	httpapi.WorkspaceInput
	Namespace string `path:"namespace" maxLength:"127" doc:"Resource namespace of the Entry in the workspace: default, or a Pack's publisher.name"`
	Name      string `path:"name" maxLength:"253" doc:"Name of the Entry"`
}

func (in *NamespacedEntryPath) entryName() string { return in.Name }
func (in *NamespacedEntryPath) resourceNamespace() platformv1.ResourceNamespace {
	return platformv1.ResourceNamespace(in.Namespace)
}

type entryOutput struct {
	ETag string `header:"ETag" doc:"The draft's current ETag"`
	Body Entry
}

func (s *routes) registerEntries() {
	httpapi.KindRoutes[*platformv1.Entry, Entry]{
		Noun: "entry", Nouns: "entry drafts", Article: "an", ID: "entry-draft", Path: "/api/entries", ListPath: "/api/entry-drafts", Tag: tagEntries,
		NewObject:     httpapi.Fresh[platformv1.Entry],
		NewList:       func() client.ObjectList { return &platformv1.EntryList{} },
		ToBody:        entryFrom,
		SetDefinition: func(e *platformv1.Entry, in Entry) { e.Definition = in.Definition },
		NoDelete:      true,
		CreateDescription: "Creates the draft in the workspace's default resource namespace. definition.binding selects an Agent " +
			"or a Flow (exact version or active). Nothing reaches the Workplace until the draft is published: by " +
			"POST /api/entries/{name}/publish, or by the Entry controller when definition.publication is Automatic.",
		ReplaceDescription: "A draft edit is invisible to the Workplace until the next publication.",
	}.Register(s.Server)

	s.registerEntryOperations()
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-entry-drafts-in-namespace", Method: http.MethodGet, Path: "/api/namespaces/{namespace}/entry-drafts", Tags: []string{tagEntries},
		Summary: "List the Entry drafts of a resource namespace of the workspace",
	}, httpapi.PolicyResourcesRead), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		Namespace string `path:"namespace" maxLength:"127" doc:"Resource namespace: default, or a Pack's publisher.name"`
	}) (*httpapi.ListOutput[Entry], error) {
		ns, err := s.kubeNamespace(ctx, platformv1.ResourceNamespace(in.Namespace))
		if err != nil {
			return nil, err
		}
		entries, err := httpapi.ListNamespace[*platformv1.Entry](ctx, s.Server, ns, &platformv1.EntryList{})
		if err != nil {
			return nil, err
		}
		return httpapi.ListOf(entries, entryFrom), nil
	})
	s.registerEntryDiscovery()
}

// Inputs of the operations on one Entry, for the default route family (/api/entries/{name}) and
// the namespaced one (/api/namespaces/{namespace}/entries/{name}).
type (
	PublishOptions struct {
		IfMatch string `header:"If-Match" doc:"Optional: the draft's ETag as last read, to publish exactly that draft; a stale value is refused with 412"`
	}
	DeleteEntryOptions struct {
		IfMatch                   string `header:"If-Match" doc:"The draft's current ETag (required)"`
		RemoveDashboardReferences bool   `query:"removeDashboardReferences" doc:"Also remove the Entry from the Dashboards that show it; without it, such a Dashboard refuses the delete (409)"`
		CloseInteractions         bool   `query:"closeInteractions" doc:"Also close the eligible conversations opened from the Entry (those no run keeps busy); they keep their messages"`
	}
	publishDefaultInput struct {
		DefaultEntryPath
		PublishOptions
	}
	publishNamespacedInput struct {
		NamespacedEntryPath
		PublishOptions
	}
	deleteDefaultInput struct {
		DefaultEntryPath
		DeleteEntryOptions
	}
	deleteNamespacedInput struct {
		NamespacedEntryPath
		DeleteEntryOptions
	}
	publicationOutput  struct{ Body EntryPublicationOutcome }
	publishedOutput    struct{ Body PublishedEntry }
	dependenciesOutput struct{ Body EntryDependencies }
)

// registerEntryOperations registers, for both route families, publish, the published
// projection, the dependencies and delete, and the read of a namespaced draft (the default
// family's read is the generic one).
func (s *routes) registerEntryOperations() {
	const defaultPrefix, namespacedPrefix = "/api/entries/{name}", "/api/namespaces/{namespace}/entries/{name}"
	api := s.API()
	get := func(path, suffix, summary string) huma.Operation {
		return httpapi.Secured(huma.Operation{OperationID: "get-entry-draft" + suffix, Method: http.MethodGet, Path: path, Tags: []string{tagEntries},
			Summary: summary}, httpapi.PolicyResourcesRead)
	}
	huma.Register(api, get(namespacedPrefix, "-in-namespace", "Read an Entry draft of a resource namespace of the workspace"),
		func(ctx context.Context, in *NamespacedEntryPath) (*entryOutput, error) {
			entry, _, err := s.readEntry(ctx, in)
			if err != nil {
				return nil, err
			}
			return &entryOutput{ETag: httpapi.ETag(entry.ResourceVersion), Body: entryFrom(entry)}, nil
		})

	publish := func(path, suffix string) huma.Operation {
		return httpapi.Secured(huma.Operation{
			OperationID: "publish-entry" + suffix, Method: http.MethodPost, Path: path + "/publish", Tags: []string{tagEntries},
			Summary: "Publish the Entry's draft",
			Description: "Validates the draft (422 with the field paths at fault: a binding to a missing agent, flow or version, " +
				"a Prompt Entry without its PrimaryInput field, ...) and writes the immutable published projection the Workplace " +
				"reads: the presentation and the exact Flow version it starts. A Flow binding is pinned to its exact or active " +
				"version; an Agent binding is published through the agent's hidden, system-managed Direct Agent Flow. " +
				"Publishing an unchanged draft changes nothing (changed false). Each publication is recorded on the draft's status.",
			Errors: []int{http.StatusPreconditionFailed, http.StatusUnprocessableEntity, http.StatusConflict},
		}, httpapi.PolicyResourcesWrite)
	}
	huma.Register(api, publish(defaultPrefix, ""), func(ctx context.Context, in *publishDefaultInput) (*publicationOutput, error) {
		return s.publishEntry(ctx, &in.DefaultEntryPath, in.IfMatch)
	})
	huma.Register(api, publish(namespacedPrefix, "-in-namespace"), func(ctx context.Context, in *publishNamespacedInput) (*publicationOutput, error) {
		return s.publishEntry(ctx, &in.NamespacedEntryPath, in.IfMatch)
	})

	published := func(path, suffix string) huma.Operation {
		return httpapi.Secured(huma.Operation{
			OperationID: "get-published-entry" + suffix, Method: http.MethodGet, Path: path + "/published", Tags: []string{tagEntries},
			Summary: "Read the published projection of an Entry", Description: "404 while the Entry has never been published.",
		}, httpapi.PolicyResourcesRead)
	}
	huma.Register(api, published(defaultPrefix, ""), func(ctx context.Context, in *DefaultEntryPath) (*publishedOutput, error) {
		return s.publishedEntry(ctx, in)
	})
	huma.Register(api, published(namespacedPrefix, "-in-namespace"), func(ctx context.Context, in *NamespacedEntryPath) (*publishedOutput, error) {
		return s.publishedEntry(ctx, in)
	})

	dependencies := func(path, suffix string) huma.Operation {
		return httpapi.Secured(huma.Operation{
			OperationID: "get-entry-dependencies" + suffix, Method: http.MethodGet, Path: path + "/dependencies", Tags: []string{tagEntries},
			Summary:     "Inspect the dependencies of an Entry",
			Description: "Both the administrative binding of the draft and the Flow versions its publication pinned, with the Dashboards that show it.",
		}, httpapi.PolicyResourcesRead)
	}
	huma.Register(api, dependencies(defaultPrefix, ""), func(ctx context.Context, in *DefaultEntryPath) (*dependenciesOutput, error) {
		return s.entryDependencies(ctx, in)
	})
	huma.Register(api, dependencies(namespacedPrefix, "-in-namespace"), func(ctx context.Context, in *NamespacedEntryPath) (*dependenciesOutput, error) {
		return s.entryDependencies(ctx, in)
	})

	remove := func(path, suffix string) huma.Operation {
		return httpapi.Secured(huma.Operation{
			OperationID: "delete-entry" + suffix, Method: http.MethodDelete, Path: path, Tags: []string{tagEntries},
			Summary: "Delete an Entry: its draft and its published projection",
			Description: "Needs the draft's current ETag in If-Match (428 without, 412 when stale). A Dashboard that shows the " +
				"Entry refuses the delete with 409 naming it, unless removeDashboardReferences is true. closeInteractions also " +
				"closes the eligible conversations opened from it; without it they stay as they are. The hidden Direct Agent " +
				"Flow of an Agent binding stays until a cleanup removes it.",
			DefaultStatus: http.StatusNoContent,
			Errors:        []int{http.StatusPreconditionRequired, http.StatusPreconditionFailed, http.StatusConflict},
		}, httpapi.PolicyResourcesDelete)
	}
	huma.Register(api, remove(defaultPrefix, ""), func(ctx context.Context, in *deleteDefaultInput) (*struct{}, error) {
		return nil, s.deleteEntry(ctx, &in.DefaultEntryPath, in.DeleteEntryOptions)
	})
	huma.Register(api, remove(namespacedPrefix, "-in-namespace"), func(ctx context.Context, in *deleteNamespacedInput) (*struct{}, error) {
		return nil, s.deleteEntry(ctx, &in.NamespacedEntryPath, in.DeleteEntryOptions)
	})
}

// readEntry reads the draft the path selects, and its kube namespace.
func (s *routes) readEntry(ctx context.Context, p entryPath) (*platformv1.Entry, string, error) {
	ns, err := s.kubeNamespace(ctx, p.resourceNamespace())
	if err != nil {
		return nil, "", err
	}
	entry := &platformv1.Entry{}
	if err := s.Kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: p.entryName()}, entry); err != nil {
		return nil, "", httpapi.Problem(err)
	}
	return entry, ns, nil
}

func (s *routes) publishEntry(ctx context.Context, p entryPath, ifMatch string) (*publicationOutput, error) {
	entry, _, err := s.readEntry(ctx, p)
	if err != nil {
		return nil, err
	}
	if ifMatch != "" {
		resourceVersion, err := httpapi.IfMatchInput{IfMatch: ifMatch}.RequiredResourceVersion()
		if err != nil {
			return nil, err
		}
		if resourceVersion != entry.ResourceVersion {
			return nil, httpapi.StaleETag("entry", entry.Name)
		}
	}
	rc, _ := httpapi.RequestContextFrom(ctx)
	result, err := s.publisher().PublishEntry(ctx, entry, rc.PrincipalID)
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	return &publicationOutput{Body: EntryPublicationOutcome{Changed: result.Changed,
		Published: publishedEntryFrom(result.Published, rc.Namespace, p.resourceNamespace())}}, nil
}

func (s *routes) publishedEntry(ctx context.Context, p entryPath) (*publishedOutput, error) {
	ns, err := s.kubeNamespace(ctx, p.resourceNamespace())
	if err != nil {
		return nil, err
	}
	published := &platformv1.PublishedEntry{}
	if err := s.Kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: p.entryName()}, published); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, huma.Error404NotFound(fmt.Sprintf("entry %q is not published", p.entryName()))
		}
		return nil, httpapi.Problem(err)
	}
	rc, _ := httpapi.RequestContextFrom(ctx)
	return &publishedOutput{Body: publishedEntryFrom(published, rc.Namespace, p.resourceNamespace())}, nil
}

func (s *routes) entryDependencies(ctx context.Context, p entryPath) (*dependenciesOutput, error) {
	entry, ns, err := s.readEntry(ctx, p)
	if err != nil {
		return nil, err
	}
	deps := EntryDependencies{Binding: entry.Definition.Binding, Continuation: entry.Definition.Continuation, Dashboards: []string{}}
	published := &platformv1.PublishedEntry{}
	err = s.Kube().Get(ctx, client.ObjectKeyFromObject(entry), published)
	switch {
	case err == nil:
		if deps.ResolvedFlow, err = s.dependencyFlow(ctx, ns, published.Definition.ResolvedTarget); err != nil {
			return nil, err
		}
		if t := published.Definition.ContinuationTarget; t != nil {
			if deps.ContinuationFlow, err = s.dependencyFlow(ctx, ns, *t); err != nil {
				return nil, err
			}
		}
	case !apierrors.IsNotFound(err):
		return nil, httpapi.Problem(err)
	}
	dashboards, err := s.dashboardsShowing(ctx, p.resourceNamespace(), entry.Name)
	if err != nil {
		return nil, err
	}
	for _, d := range dashboards {
		deps.Dashboards = append(deps.Dashboards, d.Name)
	}
	return &dependenciesOutput{Body: deps}, nil
}

func (s *routes) deleteEntry(ctx context.Context, p entryPath, opts DeleteEntryOptions) error {
	resourceVersion, err := httpapi.IfMatchInput{IfMatch: opts.IfMatch}.RequiredResourceVersion()
	if err != nil {
		return err
	}
	entry, ns, err := s.readEntry(ctx, p)
	if err != nil {
		return err
	}
	if entry.ResourceVersion != resourceVersion {
		return httpapi.StaleETag("entry", entry.Name)
	}
	rns := p.resourceNamespace()
	dashboards, err := s.dashboardsShowing(ctx, rns, entry.Name)
	if err != nil {
		return err
	}
	if len(dashboards) > 0 && !opts.RemoveDashboardReferences {
		return huma.Error409Conflict(fmt.Sprintf("entry %q is shown by Dashboard %q; remove it there, or delete with removeDashboardReferences=true",
			entry.Name, dashboards[0].Name))
	}
	for _, d := range dashboards {
		if err := s.removeDashboardReference(ctx, d, rns, entry.Name); err != nil {
			return err
		}
	}
	// The projection goes first: a failure after it leaves a draft that can be deleted again,
	// never a published Entry without its draft.
	published := &platformv1.PublishedEntry{}
	published.Namespace, published.Name = ns, entry.Name
	if err := s.PlatformKube().Delete(ctx, published); err != nil && !apierrors.IsNotFound(err) {
		return httpapi.Problem(err)
	}
	uid := entry.UID
	if err := s.Kube().Delete(ctx, entry, client.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}); err != nil {
		return httpapi.Problem(err)
	}
	if opts.CloseInteractions && s.Workplace() != nil {
		rc, _ := httpapi.RequestContextFrom(ctx)
		if _, err := s.Workplace().CloseInteractions(ctx, rc.WorkspaceID, string(rns), entry.Name); err != nil {
			return httpapi.Problem(err)
		}
	}
	return nil
}

// kubeNamespace is the kube namespace of resource namespace rns of the request's workspace; a
// resource namespace the workspace does not have is not found.
func (s *routes) kubeNamespace(ctx context.Context, rns platformv1.ResourceNamespace) (string, error) {
	workspace, err := s.Workspace(ctx)
	if err != nil {
		return "", err
	}
	ns, err := resourcenamespace.Resolve(ctx, s.Kube(), workspace, rns)
	if errors.Is(err, resourcenamespace.ErrNotFound) {
		return "", huma.Error404NotFound(fmt.Sprintf("resource namespace %q not found in the workspace", rns))
	}
	return ns, httpapi.Problem(err)
}

// dependencyFlow describes a pinned Flow version of a published Entry.
func (s *routes) dependencyFlow(ctx context.Context, from string, ref platformv1.FlowVersionReference) (*DependencyFlow, error) {
	out := &DependencyFlow{FlowVersionReference: ref}
	ns, err := resourcenamespace.Resolve(ctx, s.Kube(), from, ref.Namespace)
	if errors.Is(err, resourcenamespace.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	version, err := publication.FindFlowVersion(ctx, s.Kube(), ns, string(ref.Name), ref.Version)
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	if version != nil {
		out.Exists = true
		if t := version.Definition.Snapshot.Target; t != nil {
			out.Agent = string(t.ID)
		}
	}
	flow := &platformv1.Flow{}
	if err := s.Kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: string(ref.Name)}, flow); err == nil {
		out.SystemManaged = publication.IsSystemManaged(flow)
	} else if !apierrors.IsNotFound(err) {
		return nil, httpapi.Problem(err)
	}
	return out, nil
}

// dashboardsShowing lists the Dashboards of the request's workspace that show the Entry name of
// resource namespace rns.
func (s *routes) dashboardsShowing(ctx context.Context, rns platformv1.ResourceNamespace, name string) ([]*platformv1.Dashboard, error) {
	dashboards, err := httpapi.ListIn[*platformv1.Dashboard](ctx, s.Server, &platformv1.DashboardList{})
	if err != nil {
		return nil, err
	}
	var out []*platformv1.Dashboard
	for _, d := range dashboards {
		for _, ref := range d.Definition.Entries {
			if sameEntry(ref, rns, name) {
				out = append(out, d)
				break
			}
		}
	}
	return out, nil
}

func sameEntry(ref platformv1.DashboardEntryReference, rns platformv1.ResourceNamespace, name string) bool {
	refNS := ref.Namespace
	if refNS == "" {
		refNS = platformv1.DefaultResourceNamespace
	}
	if rns == "" {
		rns = platformv1.DefaultResourceNamespace
	}
	return refNS == rns && string(ref.Name) == name
}

// removeDashboardReference takes the Entry off one Dashboard.
func (s *routes) removeDashboardReference(ctx context.Context, d *platformv1.Dashboard, rns platformv1.ResourceNamespace, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &platformv1.Dashboard{}
		if err := s.Kube().Get(ctx, client.ObjectKeyFromObject(d), current); err != nil {
			return err
		}
		kept := current.Definition.Entries[:0]
		for _, ref := range current.Definition.Entries {
			if !sameEntry(ref, rns, name) {
				kept = append(kept, ref)
			}
		}
		current.Definition.Entries = kept
		return s.Kube().Update(ctx, current, client.FieldOwner(httpapi.FieldManager))
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return httpapi.Problem(err)
}

// EntryDiscovery is the answer of a search of published Entries.
type EntryDiscovery struct {
	Items []PublishedEntry `json:"items" doc:"The matching published Entries the caller may start, across the workspaces it may read"`
	// Fallbacks are offered, each as an explicit choice, when a search has no match.
	Fallbacks []EntryFallback `json:"fallbacks" doc:"When a search found nothing: every executable Entry with the Console role Fallback, as an explicit choice; nothing runs until one is chosen"`
}

// EntryFallback is a Fallback Entry offered for a query that found nothing.
type EntryFallback struct {
	Entry            PublishedEntry `json:"entry"`
	OwnerWorkspaceID string         `json:"ownerWorkspaceId" doc:"The workspace the Entry would run in"`
	Query            string         `json:"query" doc:"The typed query, to hand to the Entry once chosen"`
}

type discoveryInput struct {
	Surface   string `query:"surface" enum:"Workplace,Console" doc:"Only Entries exposed on this surface"`
	Placement string `query:"placement" enum:"OwningSpace,TenantHome" doc:"Only Workplace Entries of this placement: OwningSpace (every Workplace Entry is offered in its own workspace) or TenantHome (explicitly promoted)"`
	Search    string `query:"search" maxLength:"256" doc:"Case-insensitive text in the name, display name or description. With a search only executable Entries match, and an empty answer offers the Fallback Entries"`
	Workspace string `query:"workspace" maxLength:"128" doc:"Only the Entries owned by this workspace (id or route name)"`
	Take      int    `query:"take" minimum:"1" maximum:"100" default:"50" doc:"At most this many items"`
	Skip      int    `query:"skip" minimum:"0" maximum:"100000" doc:"Items to skip, for the next page"`
}

func (s *routes) registerEntryDiscovery() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "discover-entries", Method: http.MethodGet, Path: "/api/entries", Tags: []string{tagEntries},
		Summary: "Discover the published Entries the caller may start",
		Description: "Searches only the workspaces the caller may read (a personal access token: its one workspace) and " +
			"answers only the Entries the caller may start there (runs/execute); a draft that was never published is not " +
			"an Entry yet. Each result carries its owner workspace and whether its pinned Flow version is Executable, " +
			"Disabled or Unavailable, with a stable reason code. Starting one always runs in its owner workspace.",
	}, httpapi.PolicyAuthenticated), func(ctx context.Context, in *discoveryInput) (*struct{ Body EntryDiscovery }, error) {
		found, err := s.discover(ctx, in)
		if err != nil {
			return nil, err
		}
		out := EntryDiscovery{Items: []PublishedEntry{}, Fallbacks: []EntryFallback{}}
		search := strings.ToLower(strings.TrimSpace(in.Search))
		var fallbacks []PublishedEntry
		for _, e := range found {
			executable := e.TargetState == string(platformv1.TargetExecutable)
			if search != "" && executable && hasRole(e.Presentation.ConsoleRoles, platformv1.FallbackConsoleRole) && exposedOn(e.Presentation, platformv1.ConsoleSurface) {
				fallbacks = append(fallbacks, e)
			}
			if search != "" && (!executable || !matches(e, search)) {
				continue
			}
			out.Items = append(out.Items, e)
		}
		if len(out.Items) == 0 {
			for _, e := range fallbacks {
				out.Fallbacks = append(out.Fallbacks, EntryFallback{Entry: e, OwnerWorkspaceID: e.OwnerWorkspaceID, Query: in.Search})
			}
		}
		if in.Skip >= len(out.Items) {
			out.Items = out.Items[:0]
		} else {
			out.Items = out.Items[in.Skip:min(len(out.Items), in.Skip+in.Take)]
		}
		return &struct{ Body EntryDiscovery }{Body: out}, nil
	})
}

// discover lists, in workspace then name order, the published Entries of every workspace the
// caller may start runs in that pass the surface, placement and workspace filters.
func (s *routes) discover(ctx context.Context, in *discoveryInput) ([]PublishedEntry, error) {
	reachable, err := s.ReachableWorkspaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []PublishedEntry
	for _, ws := range reachable {
		if !ws.Permissions.Has(identity.PermRunsExecute) || (in.Workspace != "" && in.Workspace != ws.ID && in.Workspace != ws.Namespace) {
			continue
		}
		namespaces, err := resourcenamespace.OfWorkspace(ctx, s.Kube(), ws.Namespace)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		for _, ns := range namespaces {
			entries, err := httpapi.ListNamespace[*platformv1.PublishedEntry](ctx, s.Server, ns.Name, &platformv1.PublishedEntryList{})
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				view := publishedEntryFrom(e, ws.Namespace, resourcenamespace.Of(ns))
				if in.Surface != "" && !exposedOn(view.Presentation, platformv1.ExposureSurface(in.Surface)) {
					continue
				}
				if in.Placement == string(platformv1.TenantHomePlacement) &&
					(view.Presentation.Exposure.Placement != platformv1.TenantHomePlacement || !exposedOn(view.Presentation, platformv1.WorkplaceSurface)) {
					continue
				}
				if in.Placement == string(platformv1.OwningSpacePlacement) && !exposedOn(view.Presentation, platformv1.WorkplaceSurface) {
					continue
				}
				out = append(out, view)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Workspace != out[j].Workspace {
			return out[i].Workspace < out[j].Workspace
		}
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// exposedOn reads the exposure policy: an Entry without surfaces is a Workplace Entry (the
// default of every version of the policy so far).
func exposedOn(p platformv1.EntryPresentation, surface platformv1.ExposureSurface) bool {
	if len(p.Exposure.Surfaces) == 0 {
		return surface == platformv1.WorkplaceSurface
	}
	for _, s := range p.Exposure.Surfaces {
		if s == surface {
			return true
		}
	}
	return false
}

func hasRole(roles []platformv1.ConsoleRole, role platformv1.ConsoleRole) bool {
	for _, r := range roles {
		if r == role {
			return true
		}
	}
	return false
}

func matches(e PublishedEntry, search string) bool {
	for _, text := range []string{e.Name, e.Presentation.DisplayName, e.Presentation.Description} {
		if strings.Contains(strings.ToLower(text), search) {
			return true
		}
	}
	return false
}
