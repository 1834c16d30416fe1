package management

import (
	"context"
	"fmt"
	"net/http"
	"platform.dev/platform/apiserver/admission"
	"sort"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/internal/publication"
)

// Flow is a Flow in the spelling of the spec's create body (name, description, kind, version,
// enabled, definition), with the envelope's metadata and the observed state.
type Flow struct {
	APIVersion string `json:"apiVersion,omitempty" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too); optional on input"`
	Name       string `json:"name" minLength:"1" maxLength:"253" pattern:"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" doc:"Name, unique among the Flows of the workspace"`
	FlowContent
	Metadata      *httpapi.ResourceMetadata `json:"metadata,omitempty" doc:"Tags and annotations; on input metadata.name, when given, equals name"`
	SystemManaged bool                      `json:"systemManaged,omitempty" readOnly:"true" doc:"True for the hidden Direct Agent Flow that the platform keeps for an Agent-bound Entry; it cannot be replaced or deleted here"`
	Status        *FlowState                `json:"status,omitempty" readOnly:"true"`
}

// FlowContent is what an author writes of a Flow, and what a published version snapshots.
type FlowContent struct {
	DisplayName string              `json:"displayName,omitempty" maxLength:"256" doc:"Human-readable name shown in the Console"`
	Description string              `json:"description,omitempty" maxLength:"4096" doc:"What the Flow does"`
	Kind        platformv1.FlowKind `json:"kind,omitempty" enum:"Direct,Orchestration" doc:"How the Flow routes work; equals definition.flowKind, and either may be omitted"`
	Version     string              `json:"version,omitempty" maxLength:"128" doc:"Semantic version (2.0.0, strict) the draft is published as next"`
	Enabled     *bool               `json:"enabled,omitempty" doc:"False refuses new runs of every version of the Flow; true when omitted"`
	Definition  FlowGraph           `json:"definition"`
}

// FlowGraph is how a Flow routes work: to one target (Direct) or through steps (Orchestration).
type FlowGraph struct {
	FlowKind platformv1.FlowKind    `json:"flowKind,omitempty" enum:"Direct,Orchestration" doc:"Direct or Orchestration; equals kind"`
	Target   *platformv1.FlowTarget `json:"target,omitempty" doc:"What a Direct Flow hands its work to: {kind: Agent, id: <agent name>}"`
	Steps    []platformv1.FlowStep  `json:"steps,omitempty" maxItems:"64" doc:"Steps of an Orchestration Flow, each named once"`
	Edges    []platformv1.FlowEdge  `json:"edges,omitempty" maxItems:"128" doc:"Edges of an Orchestration Flow: the step that runs after another"`
}

// FlowState is the observed state of a Flow.
type FlowState struct {
	httpapi.ResourceState
	ActiveVersion string `json:"activeVersion,omitempty" doc:"The published version that references without a version resolve to"`
	LatestVersion string `json:"latestVersion,omitempty" doc:"The most recently published version"`
}

// FlowVersion is a published, immutable version of a Flow.
type FlowVersion struct {
	APIVersion string                   `json:"apiVersion" enum:"platform/v1"`
	Kind       string                   `json:"kind" enum:"FlowVersion"`
	Metadata   httpapi.ResourceMetadata `json:"metadata"`
	Definition FlowVersionDefinition    `json:"definition"`
	Status     FlowVersionState         `json:"status"`
}

// FlowVersionDefinition identifies a published version and holds its snapshot.
type FlowVersionDefinition struct {
	FlowName       string      `json:"flowName" doc:"The Flow the version was published from"`
	Version        string      `json:"version" doc:"The exact semantic version, unique per Flow"`
	FlowGeneration int64       `json:"flowGeneration,omitempty" doc:"metadata.generation of the Flow draft that was published"`
	Digest         string      `json:"digest,omitempty" doc:"sha256 digest of the snapshot"`
	Snapshot       FlowContent `json:"snapshot" doc:"The Flow as published"`
}

// FlowVersionState is the observed state of a published version.
type FlowVersionState struct {
	httpapi.ResourceState
	Active bool `json:"active" doc:"Whether this is the Flow's active version"`
}

// FlowPublication is the body of a publication: the spec's Flow publish body.
type FlowPublication struct {
	Version  string `json:"version" minLength:"1" maxLength:"128" doc:"Exact semantic version (2.0.0, strict: no leading v, no leading zeros) to publish the Flow's current definition as"`
	Activate bool   `json:"activate,omitempty" doc:"Make this the Flow's active version"`
}

type flowVersionOutput struct {
	Status int
	Body   FlowVersion
}

type flowVersionInput struct {
	httpapi.WorkspaceInput
	Name    string `path:"name" maxLength:"253" doc:"Name of the Flow"`
	Version string `path:"version" maxLength:"128" doc:"Exact semantic version"`
}

// CheckVersion refuses a version that is not a SemanticVersion, at the body's field version.
func CheckVersion(version string) *field.Error {
	if !platformv1.IsSemanticVersion(version) {
		return field.Invalid(field.NewPath("version"), version, "must be a semantic version MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD] without a leading v or leading zeros")
	}
	return nil
}

func (in Flow) Meta() httpapi.ResourceMetadata {
	out := httpapi.ResourceMetadata{Name: in.Name}
	if in.Metadata != nil {
		out.Tags, out.Annotations = in.Metadata.Tags, in.Metadata.Annotations
	}
	return out
}

func (in Flow) Validate(pathName string) error {
	var errs field.ErrorList
	if err := httpapi.CheckAPIVersion(in.APIVersion, true); err != nil {
		errs = append(errs, err)
	}
	if pathName != "" && in.Name != pathName {
		errs = append(errs, field.Invalid(field.NewPath("name"), in.Name, "must match the name in the path"))
	}
	if in.Metadata != nil && in.Metadata.Name != in.Name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), in.Metadata.Name, "must equal name"))
	}
	if _, reserved := in.Meta().Tags[manifest.SystemManagedLabel]; reserved {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "tags").Key(manifest.SystemManagedLabel), "is reserved for the Flows the platform manages"))
	}
	if in.Version != "" {
		if err := CheckVersion(in.Version); err != nil {
			errs = append(errs, err)
		}
	}
	switch kind, flowKind := in.Kind, in.Definition.FlowKind; {
	case kind == "" && flowKind == "":
		errs = append(errs, field.Required(field.NewPath("kind"), "Direct or Orchestration"))
	case kind != "" && flowKind != "" && kind != flowKind:
		errs = append(errs, field.Invalid(field.NewPath("definition", "flowKind"), flowKind, "must equal kind"))
	}
	return httpapi.BodyErrors(errs)
}

func (in FlowContent) definition() platformv1.FlowDefinition {
	kind := in.Kind
	if kind == "" {
		kind = in.Definition.FlowKind
	}
	return platformv1.FlowDefinition{
		FlowKind: kind, DisplayName: in.DisplayName, Description: in.Description, Version: platformv1.SemanticVersion(in.Version),
		Enabled: in.Enabled, Target: in.Definition.Target, Steps: in.Definition.Steps, Edges: in.Definition.Edges,
	}
}

func flowContentFrom(d platformv1.FlowDefinition) FlowContent {
	return FlowContent{
		DisplayName: d.DisplayName, Description: d.Description, Kind: d.FlowKind, Version: string(d.Version), Enabled: d.Enabled,
		Definition: FlowGraph{FlowKind: d.FlowKind, Target: d.Target, Steps: d.Steps, Edges: d.Edges},
	}
}

func flowFrom(f *platformv1.Flow) Flow {
	metadata := httpapi.MetadataFrom(f.ObjectMeta)
	return Flow{
		APIVersion: httpapi.SpecAPIVersion, Name: f.Name, FlowContent: flowContentFrom(f.Definition), Metadata: &metadata, SystemManaged: publication.IsSystemManaged(f),
		Status: &FlowState{ResourceState: httpapi.StateFrom(f.Status.ResourceStatus), ActiveVersion: string(f.Status.ActiveVersion), LatestVersion: string(f.Status.LatestVersion)},
	}
}

func flowVersionFrom(v *platformv1.FlowVersion, activeVersion platformv1.SemanticVersion) FlowVersion {
	d := v.Definition
	return FlowVersion{APIVersion: httpapi.SpecAPIVersion, Kind: "FlowVersion", Metadata: httpapi.MetadataFrom(v.ObjectMeta),
		Definition: FlowVersionDefinition{FlowName: string(d.FlowName), Version: string(d.Version), FlowGeneration: d.FlowGeneration,
			Digest: string(d.Digest), Snapshot: flowContentFrom(d.Snapshot)},
		Status: FlowVersionState{ResourceState: httpapi.StateFrom(v.Status.ResourceStatus), Active: activeVersion != "" && d.Version == activeVersion},
	}
}

func (s *routes) registerFlows() {
	flows := httpapi.KindRoutes[*platformv1.Flow, Flow]{
		Noun: "flow", Nouns: "flows", Article: "a", ID: "flow", Path: "/api/flows", Tag: tagFlows,
		NewObject:     httpapi.Fresh[platformv1.Flow],
		NewList:       func() client.ObjectList { return &platformv1.FlowList{} },
		ToBody:        flowFrom,
		SetDefinition: func(f *platformv1.Flow, in Flow) { f.Definition = in.definition() },
		AfterDelete:   s.deleteVersionsOf,
		CreateDescription: "The body is the spec's create body: name, description, kind, version, enabled and definition " +
			"(flowKind and, for a Direct Flow, target {kind: Agent, id}); kind and definition.flowKind are the same " +
			"value and either may be omitted. The label " + manifest.SystemManagedLabel + " is reserved.",
		ReplaceDescription: "A system-managed Direct Agent Flow is refused with 409.",
		DeleteDescription: "Refused with 409 while a published Entry pins a version of the Flow (as its target or its " +
			"continuation target), naming the Entry, and for a system-managed Direct Agent Flow. These rules are the kube " +
			"API's admission, so kubectl meets them too. The Flow's published versions are deleted with it.",
	}
	flows.Register(s.Server)
	s.registerSystemFlowCleanup(flows)

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "publish-flow-version", Method: http.MethodPost, Path: "/api/flows/{name}/versions", Tags: []string{tagFlows},
		Summary: "Publish the Flow's current definition as an immutable version", DefaultStatus: http.StatusCreated,
		Description: "Writes a FlowVersion holding a snapshot of the Flow's definition (201); FlowVersions are written only by the " +
			"platform, through this operation. Published versions are immutable: " +
			"publishing an existing version again answers 200 with it when the snapshot is the same, and 409 when it differs. " +
			"activate makes the version the Flow's active version (status.activeVersion). version must be a strict semantic version (422). " +
			"A system-managed Direct Agent Flow is refused with 409: the platform publishes it with its Agent-bound Entry. " +
			"An If-Match header is optional here: with one, a Flow changed since that ETag is refused with 412.",
	}, httpapi.PolicyResourcesWrite), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		Name    string `path:"name" maxLength:"253" doc:"Name of the Flow"`
		IfMatch string `header:"If-Match" doc:"Optional: the Flow's ETag as last read, to publish exactly that definition; a stale value is refused with 412"`
		Body    FlowPublication
	}) (*flowVersionOutput, error) {
		if err := CheckVersion(in.Body.Version); err != nil {
			return nil, httpapi.FieldErrors(field.ErrorList{err})
		}
		flow := &platformv1.Flow{}
		if err := s.GetIn(ctx, in.Name, flow); err != nil {
			return nil, err
		}
		if in.IfMatch != "" {
			resourceVersion, err := httpapi.IfMatchInput{IfMatch: in.IfMatch}.RequiredResourceVersion()
			if err != nil {
				return nil, err
			}
			if resourceVersion != flow.ResourceVersion {
				return nil, httpapi.StaleETag("flow", flow.Name)
			}
		}
		// The version is written with the platform's identity, which the admission rules exempt:
		// a caller publishes user Flows only.
		if publication.IsSystemManaged(flow) {
			return nil, huma.Error409Conflict(fmt.Sprintf("Flow %q is system-managed: the platform publishes its versions with its Agent-bound Entry", flow.Name))
		}
		return s.publishFlowVersion(ctx, flow, platformv1.SemanticVersion(in.Body.Version), in.Body.Activate)
	})

	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "list-flow-versions", Path: "/api/flows/{name}/versions", Tags: []string{tagFlows},
		Summary: "List the published versions of a Flow", Description: "In the order they were published.",
	}, httpapi.Fresh[platformv1.Flow], func(ctx context.Context, flow *platformv1.Flow) (httpapi.Items[FlowVersion], error) {
		versions, err := httpapi.ListNamespace[*platformv1.FlowVersion](ctx, s.Server, flow.Namespace, &platformv1.FlowVersionList{})
		sort.SliceStable(versions, func(i, j int) bool {
			return versions[i].CreationTimestamp.Before(&versions[j].CreationTimestamp)
		})
		var out []FlowVersion
		for _, v := range versions {
			if string(v.Definition.FlowName) == flow.Name {
				out = append(out, flowVersionFrom(v, flow.Status.ActiveVersion))
			}
		}
		return httpapi.ItemsOf(out), err
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-flow-version", Method: http.MethodGet, Path: "/api/flows/{name}/versions/{version}", Tags: []string{tagFlows},
		Summary: "Read a published version of a Flow",
	}, httpapi.PolicyResourcesRead), func(ctx context.Context, in *flowVersionInput) (*struct{ Body FlowVersion }, error) {
		flow := &platformv1.Flow{}
		if err := s.GetIn(ctx, in.Name, flow); err != nil {
			return nil, err
		}
		notFound := huma.Error404NotFound(fmt.Sprintf("version %s of flow %q not found", in.Version, in.Name))
		name, ok := publication.FlowVersionName(flow.Name, in.Version)
		if !ok {
			return nil, notFound
		}
		version := &platformv1.FlowVersion{}
		if err := s.Kube().Get(ctx, client.ObjectKey{Namespace: flow.Namespace, Name: name}, version); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, notFound
			}
			return nil, httpapi.Problem(err)
		}
		if string(version.Definition.FlowName) != flow.Name || string(version.Definition.Version) != in.Version {
			return nil, notFound
		}
		return &struct{ Body FlowVersion }{Body: flowVersionFrom(version, flow.Status.ActiveVersion)}, nil
	})
}

// publishFlowVersion publishes flow's current definition as version with the platform's identity.
func (s *routes) publishFlowVersion(ctx context.Context, flow *platformv1.Flow, version platformv1.SemanticVersion, activate bool) (*flowVersionOutput, error) {
	result, err := s.publisher().PublishFlowVersion(ctx, flow, version, activate)
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	status := http.StatusOK
	if result.Created {
		status = http.StatusCreated
	}
	return &flowVersionOutput{Status: status, Body: flowVersionFrom(result.Version, result.ActiveVersion)}, nil
}

// publisher publishes Flow versions and Entries with the platform's identity.
func (s *routes) publisher() *publication.Publisher {
	return &publication.Publisher{Client: s.PlatformKube()}
}

// deleteVersionsOf deletes the published versions of a deleted Flow: the embedded control plane
// runs no garbage collector that would follow their owner references, and FlowVersions are the
// platform's to delete.
func (s *routes) deleteVersionsOf(ctx context.Context, f *platformv1.Flow) error {
	versions := &platformv1.FlowVersionList{}
	if err := s.PlatformKube().List(ctx, versions, client.InNamespace(f.Namespace)); err != nil {
		return httpapi.Problem(err)
	}
	for i := range versions.Items {
		if string(versions.Items[i].Definition.FlowName) != f.Name {
			continue
		}
		if err := s.PlatformKube().Delete(ctx, &versions.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			return httpapi.Problem(err)
		}
	}
	return nil
}

// systemFlowInput names the system-managed Flow a cleanup removes.
type systemFlowInput struct {
	httpapi.WorkspaceInput
	httpapi.IfMatchInput
	Name string `path:"name" maxLength:"253" doc:"Name of the system-managed Direct Agent Flow"`
}

// registerSystemFlowCleanup is the cleanup's system-Flow option (Workplace rules 20 and 21): a
// system-managed Direct Agent Flow, which the normal Flow delete refuses, is removed once no
// published Entry pins it any more. The platform deletes it with its own identity, so this
// operation checks the reference rule itself, as admission does for everyone else.
func (s *routes) registerSystemFlowCleanup(flows httpapi.KindRoutes[*platformv1.Flow, Flow]) {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "delete-system-flow", Method: http.MethodDelete, Path: "/api/system-flows/{name}", Tags: []string{tagFlows},
		Summary: "Remove a system-managed Direct Agent Flow that no published Entry uses (cleanup)", DefaultStatus: http.StatusNoContent,
		Description: "The cleanup's system-Flow option. Refused with 409 for a Flow that is not system-managed (delete it with " +
			"DELETE /api/flows/{name}) and while a published Entry pins a version of it, naming the Entry. Needs the Flow's " +
			"current ETag (If-Match). Its published versions are deleted with it.",
	}, httpapi.PolicyResourcesDelete), func(ctx context.Context, in *systemFlowInput) (*struct{}, error) {
		flow, err := flows.Current(ctx, s.Server, in.IfMatchInput, in.Name)
		if err != nil {
			return nil, err
		}
		if !publication.IsSystemManaged(flow) {
			return nil, huma.Error409Conflict(fmt.Sprintf("Flow %q is not system-managed: delete it with DELETE /api/flows/%s", flow.Name, flow.Name))
		}
		referrer, err := admission.FlowReferrer(ctx, s.PlatformKube(), flow.Namespace, flow.Name)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		if referrer != "" {
			return nil, huma.Error409Conflict(fmt.Sprintf("Flow %q is still used: %s", flow.Name, referrer))
		}
		uid, resourceVersion := flow.UID, flow.ResourceVersion
		if err := s.PlatformKube().Delete(ctx, flow, client.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}); err != nil {
			return nil, httpapi.Problem(err)
		}
		return nil, s.deleteVersionsOf(ctx, flow)
	})
}
