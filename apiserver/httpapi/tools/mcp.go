package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	domain "platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/internal/version"
)

// MCPPath is where MCP clients reach the platform (Streamable HTTP).
const MCPPath = "/mcp"

// maxMCPRequestBytes bounds the body of one MCP request.
const maxMCPRequestBytes = 1 << 20

// registerMCP serves MCP over Streamable HTTP at /mcp behind the platform's authentication: a
// PAT, a JWT bearer token or the session cookie, the workspace chosen as for any workspace
// route, and resources/read to connect. The endpoint is stateless (each request is served by a
// server built for its caller; no session outlives a request), answers JSON, and is left out of
// the OpenAPI document as the spec asks.
//
// It lists the enabled Tools of the workspace that need no approval (nobody could approve a
// call made here) and the internal tools below; there is no generic CRUD and no Flow launcher.
// Every call is authorized like the route it matches: calling a workspace tool needs
// runs/execute, the internal reads runs/read.
func (s *routes) registerMCP() {
	handler := mcp.NewStreamableHTTPHandler(s.mcpServer, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true,
		MaxRequestBodyBytes: maxMCPRequestBytes})
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		huma.Register(s.API(), httpapi.Secured(huma.Operation{
			OperationID: "mcp-" + strings.ToLower(method), Method: method, Path: MCPPath, Tags: []string{tagTools},
			Summary: "MCP over Streamable HTTP", Hidden: true,
		}, httpapi.PolicyResourcesRead), func(ctx context.Context, _ *httpapi.WorkspaceInput) (*huma.StreamResponse, error) {
			return &huma.StreamResponse{Body: func(hctx huma.Context) {
				r, w := humago.Unwrap(hctx)
				handler.ServeHTTP(w, r.WithContext(ctx))
			}}, nil
		})
	}
}

// mcpServer builds the MCP server of one request, for its caller and workspace.
func (s *routes) mcpServer(r *http.Request) *mcp.Server {
	ctx := r.Context()
	rc, _ := httpapi.RequestContextFrom(ctx)
	server := mcp.NewServer(&mcp.Implementation{Name: "platform", Version: version.Version}, &mcp.ServerOptions{
		Instructions: "Tools of workspace " + rc.Namespace + " of the work-delegation platform: its enabled tools, and platform_* tools " +
			"that read its Work.",
	})
	if m := s.Tools(); m != nil {
		offered, err := m.WorkspaceTools(ctx, rc.Namespace)
		if err != nil {
			s.Log().Error(err, "listing the tools of a workspace for /mcp", "workspaceId", rc.WorkspaceID)
		}
		for _, t := range offered {
			if t.RequiresApproval {
				continue
			}
			server.AddTool(&mcp.Tool{Name: t.FunctionName, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema},
				s.workspaceTool(rc, t))
		}
	}
	for _, it := range s.internalTools(rc) {
		server.AddTool(it.tool, it.handler)
	}
	return server
}

// workspaceTool calls an enabled Tool for an MCP client, as the caller.
func (s *routes) workspaceTool(rc httpapi.RequestContext, t domain.Offered) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !rc.Permissions.Has(identity.PermRunsExecute) {
			return notPermitted(identity.PermRunsExecute, rc), nil
		}
		// Each call made here is its own: a key of its own, never one of a run.
		key := "mcp/" + uuid.NewString()
		s.Log().Info("tool called at /mcp", "tool", t.Tool, "toolProvider", t.Provider, "principalId", rc.PrincipalID,
			"workspaceId", rc.WorkspaceID, "idempotencyKey", key)
		res, err := s.Tools().Call(ctx, rc.Namespace, t.Tool, req.Params.Arguments, key)
		switch {
		case errors.Is(err, domain.ErrToolNotAvailable), domain.IsUnavailable(err):
			return errorResult(err.Error()), nil
		case err != nil:
			var configErr *domain.ConfigurationError
			if errors.As(err, &configErr) {
				return errorResult(configErr.Error()), nil
			}
			return nil, errors.New("internal error")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}, IsError: res.IsError}, nil
	}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

func notPermitted(p identity.Permission, rc httpapi.RequestContext) *mcp.CallToolResult {
	return errorResult(fmt.Sprintf("not permitted: %s is required in workspace %q", p, rc.Namespace))
}

// internalTool is one of the platform's own tools at /mcp.
type internalTool struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

var idSchema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","maxLength":64}},"required":["id"],"additionalProperties":false}`)

// internalTools are the platform's own tools at /mcp: reads of the workspace's Work, each
// authorized like its route. Entries, Interactions and Tasks have no routes yet, so listing
// executable Entries, opening an Interaction and reading a Task are not offered; a WorkItem is
// today's Task.
func (s *routes) internalTools(rc httpapi.RequestContext) []internalTool {
	if s.Work() == nil {
		return nil
	}
	read := func(name, title, description string, get func(ctx context.Context, id string) (any, error)) internalTool {
		return internalTool{
			tool: &mcp.Tool{Name: name, Title: title, Description: description, InputSchema: idSchema,
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if !rc.Permissions.Has(identity.PermRunsRead) {
					return notPermitted(identity.PermRunsRead, rc), nil
				}
				var in struct {
					ID string `json:"id"`
				}
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.ID == "" || len(in.ID) > 64 {
					return errorResult("the arguments are {\"id\": \"<id>\"}"), nil
				}
				out, err := get(ctx, in.ID)
				switch {
				case errors.Is(err, work.ErrNotFound):
					return errorResult(fmt.Sprintf("%s %q not found in workspace %q", strings.TrimPrefix(name, "platform_get_"), in.ID, rc.Namespace)), nil
				case err != nil:
					return nil, errors.New("internal error")
				}
				b, err := json.Marshal(out)
				if err != nil {
					return nil, errors.New("internal error")
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
			},
		}
	}
	return []internalTool{
		read("platform_get_work_item", "Read a WorkItem", "A WorkItem of the workspace (the Task it is projected onto today): "+
			"its status, title, reason and result. Needs runs/read.",
			func(ctx context.Context, id string) (any, error) {
				item, err := s.Work().WorkItem(ctx, rc.WorkspaceID, id)
				if err != nil {
					return nil, err
				}
				out := map[string]any{"id": item.ID, "title": item.Title, "type": item.Type, "status": item.Status, "flowRunId": item.FlowRunID,
					"createdAt": item.CreatedAt, "updatedAt": item.UpdatedAt}
				if item.Reason != "" {
					out["reason"] = item.Reason
				}
				if len(item.Result) > 0 {
					out["result"] = json.RawMessage(item.Result)
				}
				return out, nil
			}),
		read("platform_get_flow_run", "Read a FlowRun", "A FlowRun of the workspace: its state, current step, reason and the "+
			"question it waits on (never a resume token). Needs runs/read.",
			func(ctx context.Context, id string) (any, error) {
				run, err := s.Work().Run(ctx, rc.WorkspaceID, id)
				if err != nil {
					return nil, err
				}
				out := map[string]any{"id": run.ID, "workItemId": run.WorkItemID, "state": run.State, "flow": run.FlowName,
					"currentStep": run.CurrentStep, "createdAt": run.CreatedAt, "updatedAt": run.UpdatedAt}
				if run.Reason != "" {
					out["reason"] = run.Reason
				}
				action, err := s.Work().OpenPendingAction(ctx, run.ID)
				if err != nil {
					return nil, err
				}
				if action != nil {
					out["pendingAction"] = map[string]any{"id": action.ID, "kind": action.Kind, "prompt": action.Prompt,
						"options": action.Options, "expiresAt": action.ExpiresAt}
				}
				return out, nil
			}),
	}
}
