package tools

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/tools"
)

// Tool is a Tool in the spec's envelope.
type Tool struct {
	APIVersion string                    `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                    `json:"kind" enum:"Tool"`
	Metadata   httpapi.ResourceMetadata  `json:"metadata"`
	Definition platformv1.ToolDefinition `json:"definition"`
	Status     *ToolState                `json:"status,omitempty" readOnly:"true"`
}

// ToolState is what the provider says of a Tool, as the last discovery found it.
type ToolState struct {
	httpapi.ResourceState
	Availability string                `json:"availability,omitempty" enum:"Available,Missing" doc:"Whether the last discovery still listed the tool"`
	Title        string                `json:"title,omitempty"`
	Description  string                `json:"description,omitempty" doc:"The description the provider gives the model"`
	InputSchema  *runtime.RawExtension `json:"inputSchema,omitempty" doc:"The JSON Schema of the tool's arguments"`
	LastSeenTime *time.Time            `json:"lastSeenTime,omitempty"`
	// FunctionName is derived, not stored: the name models and MCP clients call.
	FunctionName string `json:"functionName" doc:"The name under which models and /mcp clients call the tool"`
}

func (in Tool) Meta() httpapi.ResourceMetadata { return in.Metadata }

func (in Tool) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func toolFrom(t *platformv1.Tool) Tool {
	return Tool{APIVersion: httpapi.SpecAPIVersion, Kind: "Tool", Metadata: httpapi.MetadataFrom(t.ObjectMeta), Definition: t.Definition,
		Status: &ToolState{ResourceState: httpapi.StateFrom(t.Status.ResourceStatus), Availability: string(t.Status.Availability),
			Title: t.Status.Title, Description: t.Status.Description, InputSchema: t.Status.InputSchema, LastSeenTime: timeFrom(t.Status.LastSeenTime),
			FunctionName: domain.FunctionName(t.Name)}}
}

func (s *routes) registerTools() {
	httpapi.KindRoutes[*platformv1.Tool, Tool]{
		Noun: "tool", Nouns: "tools", Article: "a", ID: "tool", Path: "/api/tools", Tag: tagTools,
		NewObject:     httpapi.Fresh[platformv1.Tool],
		NewList:       func() client.ObjectList { return &platformv1.ToolList{} },
		ToBody:        toolFrom,
		SetDefinition: func(t *platformv1.Tool, in Tool) { t.Definition = in.Definition },
		CreateDescription: "Tools are usually created by a provider's discovery; one created here is disabled unless its definition " +
			"enables it, and is callable once a discovery lists its tool.",
		ReplaceDescription: "The provider and toolName of a Tool never change (422).",
		DeleteDescription:  "The next discovery of its provider creates the Tool again, disabled.",
	}.Register(s.Server)

	for _, op := range []struct {
		id, verb, summary, description string
		enabled                        bool
	}{
		{"enable-tool", "enable", "Enable a tool", "Agents that list the tool may call it from their next step; it is offered at /mcp " +
			"unless it requires approval.", true},
		{"disable-tool", "disable", "Disable a tool", "No agent may call it from its next tool call on (a model that still asks reads " +
			"an error result), and /mcp stops offering it.", false},
	} {
		enabled := op.enabled
		huma.Register(s.API(), httpapi.Secured(huma.Operation{
			OperationID: op.id, Method: http.MethodPost, Path: "/api/tools/{name}/" + op.verb, Tags: []string{tagTools},
			Summary: op.summary, Description: op.description + " Needs the Tool's current ETag in If-Match (428 without, 412 when stale); " +
				"enabling an enabled tool changes nothing.",
			Errors: []int{http.StatusPreconditionRequired, http.StatusPreconditionFailed},
		}, httpapi.PolicyResourcesWrite), func(ctx context.Context, in *struct {
			httpapi.WorkspaceInput
			httpapi.IfMatchInput
			Name string `path:"name" maxLength:"253" doc:"Name of the Tool (metadata.name)"`
		}) (*httpapi.ObjectOutput[Tool], error) {
			resourceVersion, err := in.RequiredResourceVersion()
			if err != nil {
				return nil, err
			}
			tool := &platformv1.Tool{}
			if err := s.GetIn(ctx, in.Name, tool); err != nil {
				return nil, err
			}
			if tool.ResourceVersion != resourceVersion {
				return nil, httpapi.StaleETag("tool", in.Name)
			}
			if tool.Definition.Enabled != enabled {
				tool.Definition.Enabled = enabled
				if err := s.Kube().Update(ctx, tool, client.FieldOwner(httpapi.FieldManager)); err != nil {
					return nil, httpapi.Problem(err)
				}
			}
			return &httpapi.ObjectOutput[Tool]{ETag: httpapi.ETag(tool.ResourceVersion), Body: toolFrom(tool)}, nil
		})
	}
}
