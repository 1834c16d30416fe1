// Package mcpclient runs the official MCP TypeScript client (the npm package
// @modelcontextprotocol/sdk) under the machine's Node.js, from test/mcp/client.mjs, against an
// MCP endpoint, for tests of /mcp.
//
// The client needs `npm ci` in test/mcp (.ci/run does it); without node or without the installed
// packages the tests that need it are skipped.
package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Call is one tool call the client makes after listing the tools.
type Call struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// Tool is a tool the client listed.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

// Result is the outcome of one call: its text and whether it is an error result, or the error
// the client raised.
type Result struct {
	IsError bool   `json:"isError"`
	Text    string `json:"text"`
	Error   string `json:"error"`
}

// Output is what the client saw; Error is set when it could not connect.
type Output struct {
	Error  string `json:"error"`
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Tools   []Tool   `json:"tools"`
	Results []Result `json:"results"`
}

// ToolNames are the names of the tools listed.
func (o Output) ToolNames() []string {
	names := make([]string, 0, len(o.Tools))
	for _, t := range o.Tools {
		names = append(names, t.Name)
	}
	return names
}

// dir is test/mcp, where client.mjs and its node_modules are.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// Run connects the client to url with token as its bearer credential (none when empty), lists
// the tools, makes calls, and returns what it saw. It skips the test when node or the client's
// npm packages are not installed.
func Run(t testing.TB, url, token string, calls ...Call) Output {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("MCP client tests skipped: node is not on PATH (install Node.js, then run `npm ci` in test/mcp)")
	}
	if _, err := os.Stat(filepath.Join(dir(), "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skip("MCP client tests skipped: test/mcp/node_modules is missing (run `npm ci` in test/mcp)")
	}
	if calls == nil {
		calls = []Call{}
	}
	encoded, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = dir()
	cmd.Env = append(os.Environ(), "MCP_URL="+url, "MCP_TOKEN="+token, "MCP_CALLS="+string(encoded))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("MCP client: %v\n%s", err, stderr.String())
	}
	var out Output
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		t.Fatalf("MCP client output is not JSON: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	return out
}
