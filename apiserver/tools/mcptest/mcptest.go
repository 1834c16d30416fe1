// Package mcptest is a real MCP server built from the go-sdk, for tests of tool providers,
// governed tool execution and /mcp: over Streamable HTTP in the test process, and over STDIO as
// the test binary itself (a package's TestMain calls ServeStdioIfRequested, and a ToolProvider
// runs os.Args[0] with MCPTEST_STDIO in its environment).
//
// Its tools: echo {text}, add {a, b}, fail (an error result), slow {ms}, huge {bytes}, wait
// (blocks until Release), env {name} (the value of an environment variable of the server) and
// crash (the STDIO process exits). Every call is recorded with its idempotency key.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// IdempotencyMetaKey is the _meta key the platform sends the idempotency key in (the tools
// package's constant, repeated so that this package imports nothing of the platform).
const IdempotencyMetaKey = "platform.dev/idempotency-key"

// Call is one tool call the server received.
type Call struct {
	Tool          string
	Key           string
	Arguments     map[string]any
	Authorization string
}

// Recorder records calls and holds the gate of the wait tool.
type Recorder struct {
	mu      sync.Mutex
	calls   []Call
	gate    chan struct{}
	entered chan struct{}
}

// NewRecorder returns a recorder whose wait tool blocks until Release.
func NewRecorder() *Recorder {
	return &Recorder{gate: make(chan struct{}), entered: make(chan struct{}, 64)}
}

// Calls are the calls received so far.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// CallsOf counts the calls of tool by idempotency key.
func (r *Recorder) CallsOf(tool string) map[string]int {
	out := map[string]int{}
	for _, c := range r.Calls() {
		if c.Tool == tool {
			out[c.Key]++
		}
	}
	return out
}

// Release lets every waiting and future call of wait return.
func (r *Recorder) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.gate:
	default:
		close(r.gate)
	}
}

// Entered is signalled each time a call of wait starts waiting.
func (r *Recorder) Entered() <-chan struct{} { return r.entered }

func (r *Recorder) record(req *mcp.CallToolRequest, args map[string]any) {
	c := Call{Tool: req.Params.Name, Arguments: args}
	if key, ok := req.Params.Meta[IdempotencyMetaKey].(string); ok {
		c.Key = key
	}
	if req.Extra != nil && req.Extra.Header != nil {
		c.Authorization = req.Extra.Header.Get("Authorization")
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func schema(properties string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + properties + `},"required":` + string(req) + `}`)
}

// NewServer is the test server, recording into rec. exit ends the process (the crash tool of
// the STDIO server); nil leaves crash a no-op.
func NewServer(rec *Recorder, exit func()) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1.0.0"}, nil)
	add := func(name, description string, in json.RawMessage, h func(context.Context, map[string]any) *mcp.CallToolResult) {
		s.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: in}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			if len(req.Params.Arguments) > 0 {
				if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
					return nil, err
				}
			}
			rec.record(req, args)
			return h(ctx, args), nil
		})
	}
	add("echo", "Repeats the text.", schema(`"text":{"type":"string"}`, "text"), func(_ context.Context, a map[string]any) *mcp.CallToolResult {
		return text(fmt.Sprintf("echo: %v", a["text"]))
	})
	add("add", "Adds two numbers.", schema(`"a":{"type":"number"},"b":{"type":"number"}`, "a", "b"), func(_ context.Context, a map[string]any) *mcp.CallToolResult {
		x, _ := a["a"].(float64)
		y, _ := a["b"].(float64)
		return text(fmt.Sprint(x + y))
	})
	add("fail", "Always fails.", schema(""), func(context.Context, map[string]any) *mcp.CallToolResult {
		r := text("the tool failed on purpose")
		r.IsError = true
		return r
	})
	add("slow", "Answers after ms milliseconds.", schema(`"ms":{"type":"number"}`, "ms"), func(ctx context.Context, a map[string]any) *mcp.CallToolResult {
		ms, _ := a["ms"].(float64)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
		}
		return text("slept")
	})
	add("huge", "Answers with bytes bytes of text.", schema(`"bytes":{"type":"number"}`, "bytes"), func(_ context.Context, a map[string]any) *mcp.CallToolResult {
		n, _ := a["bytes"].(float64)
		return text(strings.Repeat("x", int(n)))
	})
	add("wait", "Answers once the test releases it.", schema(""), func(ctx context.Context, _ map[string]any) *mcp.CallToolResult {
		select {
		case rec.entered <- struct{}{}:
		default:
		}
		select {
		case <-rec.gate:
			return text("released")
		case <-ctx.Done():
			return text("cancelled")
		}
	})
	add("env", "The value of an environment variable of the server.", schema(`"name":{"type":"string"}`, "name"), func(_ context.Context, a map[string]any) *mcp.CallToolResult {
		name, _ := a["name"].(string)
		v, ok := os.LookupEnv(name)
		if !ok {
			return text("unset")
		}
		return text("set: " + v)
	})
	add("crash", "Ends the server process.", schema(""), func(context.Context, map[string]any) *mcp.CallToolResult {
		if exit != nil {
			exit()
		}
		return text("still here")
	})
	return s
}

// HTTPOptions shape the Streamable HTTP server.
type HTTPOptions struct {
	// Token, when set, is the only Bearer credential accepted; others are 401.
	Token string
	// Garbage answers every request with 200 and a body that is not MCP.
	Garbage bool
	// HugeBody answers every request with a JSON body of that many bytes.
	HugeBody int
}

// HTTPServer is the Streamable HTTP server in the test process.
type HTTPServer struct {
	*httptest.Server
	Recorder *Recorder
	// MCP is the server; tests add and remove tools on it.
	MCP *mcp.Server

	mu             sync.Mutex
	opts           HTTPOptions
	authorizations []string
}

// StartHTTP starts the server; Close it when done.
func StartHTTP(opts HTTPOptions) *HTTPServer {
	h := &HTTPServer{Recorder: NewRecorder(), opts: opts}
	h.MCP = NewServer(h.Recorder, nil)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.MCP }, nil)
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		o := h.opts
		h.authorizations = append(h.authorizations, r.Header.Get("Authorization"))
		h.mu.Unlock()
		switch {
		case o.Token != "" && r.Header.Get("Authorization") != "Bearer "+o.Token:
			http.Error(w, "unauthorized: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
		case o.Garbage:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("<html>this is not MCP</html>"))
		case o.HugeBody > 0:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"padding":"` + strings.Repeat("x", o.HugeBody) + `"}}`))
		default:
			mcpHandler.ServeHTTP(w, r)
		}
	}))
	return h
}

// URL of the MCP endpoint.
func (h *HTTPServer) Endpoint() string { return h.URL + "/mcp" }

// Set changes the options for the next requests.
func (h *HTTPServer) Set(opts HTTPOptions) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts = opts
}

// Authorizations are the Authorization headers of every request received.
func (h *HTTPServer) Authorizations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.authorizations...)
}

// StdioVariable selects the STDIO server mode of the test binary: serve, exit (exits at once),
// hang (never answers), flood (starts a message and writes it without end) or garbage (answers
// every line with text that is not JSON).
const StdioVariable = "MCPTEST_STDIO"

// ServeStdioIfRequested turns the test binary into the STDIO server when StdioVariable is set,
// and never returns then. Call it first in TestMain.
func ServeStdioIfRequested() {
	mode := os.Getenv(StdioVariable)
	if mode == "" {
		return
	}
	switch mode {
	case "exit":
		os.Exit(3)
	case "hang":
		select {}
	case "flood":
		// The start of a message that never ends: only a size limit stops the reader.
		_, _ = os.Stdout.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for {
			if _, err := os.Stdout.Write(chunk); err != nil {
				os.Exit(0)
			}
		}
	case "garbage":
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				os.Exit(0)
			}
			_, _ = os.Stdout.WriteString("this is not json\n")
		}
	}
	server := NewServer(NewRecorder(), func() { os.Exit(4) })
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
