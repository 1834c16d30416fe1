package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	domain "platform.dev/platform/apiserver/tools"
	"platform.dev/platform/internal/version"
)

// MCPPath is where MCP clients reach the platform (Streamable HTTP).
const MCPPath = "/mcp"

// Bounds of /mcp: one request's body and messages, and the tool calls under way at once for one
// request, one Principal and one workspace. The SDK serves every call of a JSON-RPC batch at once,
// each in a goroutine of its own, so a batch of thousands of calls that each start a run would
// take the process's memory and the store from everyone else.
const (
	// maxMCPRequestBytes bounds the body of one MCP request (413 Problem Details past it).
	maxMCPRequestBytes = 1 << 20
	// maxMCPRequestsPerPrincipal bounds the requests one caller has served at once (429 Problem
	// Details past it): each holds its body and its calls.
	maxMCPRequestsPerPrincipal = 16
	// maxMCPBatchMessages bounds the messages of one JSON-RPC batch; a bigger batch is refused as
	// a whole before any of its calls runs.
	maxMCPBatchMessages = 32
	// maxMCPCallsPerRequest is how many tool calls of one batch run at once; the others wait.
	maxMCPCallsPerRequest = 4
	// maxMCPCallsPerPrincipal and maxMCPCallsPerWorkspace bound the tool calls under way at
	// /mcp for one caller and one workspace across requests; a call past them is refused with
	// a JSON-RPC error (CodeCallRefused), and the client may try again.
	maxMCPCallsPerPrincipal = 8
	maxMCPCallsPerWorkspace = 16
)

// registerMCP serves MCP over Streamable HTTP at /mcp behind the platform's authentication: a
// PAT, a JWT bearer token or the session cookie, the workspace chosen as for any workspace
// route, and resources/read to connect. The endpoint is stateless (each request is served by a
// server built for its caller; no session outlives a request), answers JSON, and is left out of
// the OpenAPI document as the spec asks.
//
// It lists the enabled Tools of the workspace that need no approval (nobody could approve a
// call made here) and the internal tools below; there is no generic CRUD and no Flow launcher.
// Every call is authorized like the route it matches: calling a workspace tool needs
// runs/execute (as starting work does); an internal tool is a call of its route.
func (s *routes) registerMCP() {
	s.mcpCalls = mcpLimits{principal: domain.NewSlots(maxMCPCallsPerPrincipal), workspace: domain.NewSlots(maxMCPCallsPerWorkspace)}
	s.mcpRequests = domain.NewSlots(maxMCPRequestsPerPrincipal)
	handler := mcp.NewStreamableHTTPHandler(s.mcpServer, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true,
		MaxRequestBodyBytes: maxMCPRequestBytes})
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		huma.Register(s.API(), httpapi.Secured(huma.Operation{
			OperationID: "mcp-" + strings.ToLower(method), Method: method, Path: MCPPath, Tags: []string{tagTools},
			Summary: "MCP over Streamable HTTP", Hidden: true,
		}, httpapi.PolicyResourcesRead), func(ctx context.Context, in *mcpInput) (*huma.StreamResponse, error) {
			chain, err := domain.ParseCallChain(in.CallDepth, in.CallChain)
			if err != nil {
				return nil, huma.Error400BadRequest(err.Error())
			}
			return &huma.StreamResponse{Body: func(hctx huma.Context) {
				r, w := humago.Unwrap(hctx)
				r = r.WithContext(domain.WithCallChain(ctx, chain))
				rc, _ := httpapi.RequestContextFrom(ctx)
				if !s.mcpRequests.Acquire(rc.PrincipalID) {
					httpapi.WriteProblem(w, http.StatusTooManyRequests,
						fmt.Sprintf("at most %d MCP requests are served at once per caller; try again when one ended", maxMCPRequestsPerPrincipal))
					return
				}
				defer s.mcpRequests.Release(rc.PrincipalID)
				if r.Method == http.MethodPost && !admitBatch(w, r) {
					return
				}
				handler.ServeHTTP(w, r)
			}}, nil
		})
	}
}

// mcpInput is what /mcp reads of a request before the SDK: the workspace and the tool-call
// chain the request is made in, when a tool of the platform (or a provider that forwards the
// headers) makes it.
type mcpInput struct {
	httpapi.WorkspaceInput
	CallDepth string `header:"Platform-Tool-Call-Depth" maxLength:"8" doc:"How many tool calls the request is nested in"`
	CallChain string `header:"Platform-Tool-Call-Chain" maxLength:"128" doc:"The chain of tool calls the request belongs to"`
}

// admitBatch reads the body of a POST (at most maxMCPRequestBytes: 413 Problem Details past it)
// and refuses a JSON-RPC batch of more than maxMCPBatchMessages messages as a whole, with a
// JSON-RPC error, before any of its calls runs. What it admits goes on to the SDK unchanged.
func admitBatch(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMCPRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httpapi.WriteProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("an MCP request holds at most %d bytes", maxMCPRequestBytes))
		} else {
			httpapi.WriteProblem(w, http.StatusBadRequest, "the request body could not be read")
		}
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return true
	}
	// Count the messages up to one past the limit, without decoding the rest: a refused batch
	// costs no more than reading its body.
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return true // the SDK answers a malformed body
	}
	count := 0
	for dec.More() && count <= maxMCPBatchMessages {
		var message json.RawMessage
		if err := dec.Decode(&message); err != nil {
			return true
		}
		count++
	}
	if count > maxMCPBatchMessages {
		writeJSONRPCError(w, http.StatusBadRequest, domain.CodeCallRefused,
			fmt.Sprintf("a JSON-RPC batch holds at most %d messages; none of this one's was run", maxMCPBatchMessages))
		return false
	}
	return true
}

// writeJSONRPCError answers a JSON-RPC error that belongs to no one request of the body (id null).
func writeJSONRPCError(w http.ResponseWriter, status int, code int64, message string) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// mcpLimits count the tool calls under way at /mcp per Principal and per workspace.
type mcpLimits struct {
	principal, workspace *domain.Slots
}

// refused is the JSON-RPC error of a call past a limit of /mcp.
func refused(format string, args ...any) error {
	return &jsonrpc.Error{Code: domain.CodeCallRefused, Message: fmt.Sprintf(format, args...)}
}

// boundCalls is the middleware of one request's MCP server: every call ends when the HTTP
// request ends (the SDK does not end a handler whose client went away, and the work a tool
// call starts must not outlive it), and a tool call runs only within the request's, the
// Principal's and the workspace's share and within the depth of its chain.
func (s *routes) boundCalls(r *http.Request, rc httpapi.RequestContext) mcp.Middleware {
	perRequest := make(chan struct{}, maxMCPCallsPerRequest)
	chain := domain.CallChainFrom(r.Context())
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(r.Context(), cancel)()
			ctx = domain.WithCallChain(ctx, chain)
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			if chain.Depth >= domain.MaxCallDepth {
				s.Log().Info("tool call at /mcp refused: nested too deeply", "callChain", chain.ID, "depth", chain.Depth,
					"principalId", rc.PrincipalID, "workspaceId", rc.WorkspaceID)
				return nil, refused("this request is made inside %d nested tool calls; tool calls nest at most %d deep "+
					"(a tool that calls back into the platform)", chain.Depth, domain.MaxCallDepth)
			}
			select {
			case perRequest <- struct{}{}:
				defer func() { <-perRequest }()
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if !s.mcpCalls.principal.Acquire(rc.PrincipalID) {
				return nil, refused("you have %d tool calls under way at /mcp, the most at once; try again when one ended", maxMCPCallsPerPrincipal)
			}
			defer s.mcpCalls.principal.Release(rc.PrincipalID)
			if !s.mcpCalls.workspace.Acquire(rc.WorkspaceID) {
				return nil, refused("workspace %q has %d tool calls under way at /mcp, the most at once; try again when one ended",
					rc.Namespace, maxMCPCallsPerWorkspace)
			}
			defer s.mcpCalls.workspace.Release(rc.WorkspaceID)
			return next(ctx, method, req)
		}
	}
}

// mcpServer builds the MCP server of one request, for its caller and workspace.
func (s *routes) mcpServer(r *http.Request) *mcp.Server {
	ctx := r.Context()
	rc, _ := httpapi.RequestContextFrom(ctx)
	server := mcp.NewServer(&mcp.Implementation{Name: "platform", Version: version.Version}, &mcp.ServerOptions{
		Instructions: "Tools of workspace " + rc.Namespace + " of the work-delegation platform: its enabled tools, and platform_* tools " +
			"that list and start its Entries and read its Tasks and runs.",
	})
	server.AddReceivingMiddleware(s.boundCalls(r, rc))
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
	for _, it := range internalTools() {
		server.AddTool(&mcp.Tool{Name: it.name, Title: it.title, Description: it.description, InputSchema: it.schema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: it.readOnly}}, s.internalHandler(r, rc, it))
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
		case errors.Is(err, domain.ErrToolNotAvailable), domain.IsUnavailable(err), domain.IsRefused(err):
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

// internalTool is one of the platform's own tools at /mcp: an adapter over one route of the
// service API, called in process as the MCP client's caller, so that the tool is authorized
// exactly as the route is (the same credential, workspace and policy) and answers what it
// answers.
type internalTool struct {
	name, title, description string
	schema                   json.RawMessage
	readOnly                 bool
	// request is the route's method, path and body for the call's arguments; an error says what
	// is wrong with them.
	request func(rc httpapi.RequestContext, args json.RawMessage) (method, path string, body []byte, err error)
	// answer shapes a successful answer of the route; the body as is when nil.
	answer func(rc httpapi.RequestContext, body []byte) ([]byte, error)
}

// idArgument reads {"id": "<id>"}.
func idArgument(args json.RawMessage) (string, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.ID == "" || len(in.ID) > 64 || strings.ContainsAny(in.ID, "/?#%") {
		return "", errors.New(`the arguments are {"id": "<id>"}`)
	}
	return in.ID, nil
}

var (
	idSchema      = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","maxLength":64}},"required":["id"],"additionalProperties":false}`)
	entriesSchema = json.RawMessage(`{"type":"object","properties":{"search":{"type":"string","maxLength":256,` +
		`"description":"Text in the Entry's name, display name or description"}},"additionalProperties":false}`)
	openSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"entry":{"type":"string","maxLength":253,"description":"Name of the published Entry"},` +
		`"namespace":{"type":"string","maxLength":127,"description":"Resource namespace of the Entry; default when omitted"},` +
		`"input":{"type":"object","description":"The values of the Entry's fields by name"}},"required":["entry"],"additionalProperties":false}`)
)

// internalTools are the platform's own tools: list the Entries the caller may start in the
// workspace, open an Interaction on one, read a Task, a WorkItem or a FlowRun. There is no
// generic CRUD and no Flow launcher: work starts only through a published Entry, whose Flow
// version is pinned and whose input is checked against its fields.
func internalTools() []internalTool {
	read := func(name, title, description, path string) internalTool {
		return internalTool{name: name, title: title, description: description, schema: idSchema, readOnly: true,
			request: func(rc httpapi.RequestContext, args json.RawMessage) (string, string, []byte, error) {
				id, err := idArgument(args)
				return http.MethodGet, strings.ReplaceAll(strings.ReplaceAll(path, "{workspace}", url.PathEscape(rc.Namespace)), "{id}", id), nil, err
			}}
	}
	return []internalTool{
		{name: "platform_list_entries", title: "List the Entries you may start",
			description: "The published Entries of this workspace that you may start and whose Flow can run now, with the fields " +
				"their input takes. Start one with platform_open_interaction. Like GET /api/entries (workspaces/read, runs/execute).",
			schema: entriesSchema, readOnly: true,
			request: func(rc httpapi.RequestContext, args json.RawMessage) (string, string, []byte, error) {
				var in struct {
					Search string `json:"search"`
				}
				if len(args) > 0 {
					if err := json.Unmarshal(args, &in); err != nil || len(in.Search) > 256 {
						return "", "", nil, errors.New(`the arguments are {"search": "<text>"}, or none`)
					}
				}
				q := url.Values{"workspace": {rc.WorkspaceID}, "take": {"100"}}
				if in.Search != "" {
					q.Set("search", in.Search)
				}
				return http.MethodGet, "/api/entries?" + q.Encode(), nil, nil
			},
			answer: executableEntries},
		{name: "platform_open_interaction", title: "Start work from an Entry",
			description: "Opens an Interaction on a published Entry of this workspace with its input, which starts the Entry's " +
				"pinned Flow, and answers once the run settled (up to 10 s): its answer, its question (with the resume token " +
				"that answers it) or its Task. Like POST /api/workspaces/{workspace}/entries/{entry}/interactions (runs/execute).",
			schema: openSchema,
			request: func(rc httpapi.RequestContext, args json.RawMessage) (string, string, []byte, error) {
				var in struct {
					Entry     string          `json:"entry"`
					Namespace string          `json:"namespace"`
					Input     json.RawMessage `json:"input"`
				}
				if err := json.Unmarshal(args, &in); err != nil || in.Entry == "" || len(in.Entry) > 253 || strings.ContainsAny(in.Entry, "/?#%") {
					return "", "", nil, errors.New(`the arguments are {"entry": "<name>", "input": {...}}`)
				}
				q := url.Values{"waitSeconds": {"10"}}
				if in.Namespace != "" {
					q.Set("namespace", in.Namespace)
				}
				body := []byte(`{}`)
				if len(in.Input) > 0 {
					body, _ = json.Marshal(map[string]json.RawMessage{"input": in.Input})
				}
				return http.MethodPost, "/api/workspaces/" + url.PathEscape(rc.Namespace) + "/entries/" + url.PathEscape(in.Entry) +
					"/interactions?" + q.Encode(), body, nil
			}},
		read("platform_get_task", "Read a Task", "A Task of this workspace: its status, title, result and the question it waits "+
			"on. Like GET /api/workspaces/{workspace}/tasks/{id} (runs/read).", "/api/workspaces/{workspace}/tasks/{id}"),
		read("platform_get_work_item", "Read a WorkItem", "A WorkItem of this workspace: its status, reason and the question its "+
			"run waits on (never a resume token). Like GET /api/work/workitems/{id} (runs/read).", "/api/work/workitems/{id}"),
		read("platform_get_flow_run", "Read a FlowRun", "A FlowRun of this workspace: its state, current step, reason and the "+
			"question it waits on (never a resume token). Like GET /api/flowRuns/{id} (runs/read).", "/api/flowRuns/{id}"),
	}
}

// executableEntries keeps, of a discovery, the Entries whose Flow can run now.
func executableEntries(_ httpapi.RequestContext, body []byte) ([]byte, error) {
	var discovery struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(body, &discovery); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, e := range discovery.Items {
		if e["targetState"] == "Executable" {
			delete(e, "ownerWorkspaceId")
			out = append(out, e)
		}
	}
	return json.Marshal(map[string]any{"entries": out})
}

// handler of an internal tool: the route's answer as the tool's result, a Problem as an error
// result with its status and detail.
func (s *routes) internalHandler(r *http.Request, rc httpapi.RequestContext, it internalTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		method, path, body, err := it.request(rc, req.Params.Arguments)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		status, answer, err := s.routeCall(ctx, r, rc, method, path, body)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		if status >= 400 {
			var problem struct {
				Detail string `json:"detail"`
				Title  string `json:"title"`
			}
			_ = json.Unmarshal(answer, &problem)
			if problem.Detail == "" {
				problem.Detail = problem.Title
			}
			return errorResult(fmt.Sprintf("%d %s: %s", status, http.StatusText(status), problem.Detail)), nil
		}
		if it.answer != nil {
			if answer, err = it.answer(rc, answer); err != nil {
				return nil, errors.New("internal error")
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(answer)}}, StructuredContent: json.RawMessage(answer)}, nil
	}
}

// maxRouteAnswer bounds what an internal tool reads of its route's answer.
const maxRouteAnswer = 1 << 20

// routeCall makes a request to one of the service API's routes in process, as the caller of r:
// its credential (Authorization header or session cookie) goes along and the workspace is the
// one /mcp resolved, so the route authenticates and authorizes it as if the caller had called
// it. Nothing of r's context is inherited but its cancellation.
func (s *routes) routeCall(ctx context.Context, r *http.Request, rc httpapi.RequestContext, method, path string, body []byte) (int, []byte, error) {
	inner, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	req, err := http.NewRequestWithContext(inner, method, path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Host, req.RemoteAddr, req.TLS = r.Host, r.RemoteAddr, r.TLS
	for _, h := range []string{"Authorization", "Cookie"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set(httpapi.WorkspaceHeader, rc.Namespace)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := &boundedRecorder{header: http.Header{}, limit: maxRouteAnswer}
	s.Handler().ServeHTTP(w, req)
	if w.over {
		return 0, nil, fmt.Errorf("the answer is over %d bytes", maxRouteAnswer)
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.status, w.body.Bytes(), nil
}

// boundedRecorder keeps the status and at most limit bytes of a route's answer.
type boundedRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	limit  int
	over   bool
}

func (w *boundedRecorder) Header() http.Header { return w.header }

func (w *boundedRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *boundedRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.body.Len()+len(p) > w.limit {
		w.over = true
		return 0, errors.New("answer over the limit")
	}
	return w.body.Write(p)
}
