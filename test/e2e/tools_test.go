package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/provider/openaitest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/tools/mcptest"
)

// toolsEnv runs the server in Managed mode (its agents call the test model), in Development
// mode with short executor leases, and lets it start this test binary as a STDIO MCP server.
func toolsEnv() []string {
	return []string{
		"PLATFORM_ENVIRONMENT=Testing",
		"Platform__Authentication__Mode=Development",
		"Platform__Executor__LeaseSeconds=2",
		"Platform__Tools__AllowedCommands=" + os.Args[0],
	}
}

// setupToolsWorld creates, through the service API, what a Flow needs to call tools: the test
// model behind a ModelProvider and a ModelProfile, a STDIO ToolProvider "local" (this binary)
// and a Streamable HTTP ToolProvider "kb" (mcpServer), both discovered, the tools the agent uses
// enabled, and the agent in a published Flow "assist" (Input -> Agent -> Output).
func setupToolsWorld(c serviceClient, model *openaitest.Server, mcpServer *mcptest.HTTPServer) {
	c.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if status, _ := c.call(http.MethodGet, "/api/agents", ""); status == http.StatusOK {
			break
		}
	}
	c.must(http.StatusCreated, http.MethodPost, "/api/modelproviders", `{"apiVersion":"platform/v1","kind":"ModelProvider",`+
		`"metadata":{"name":"local-model"},"definition":{"type":"OpenAICompatible","endpoint":"`+model.BaseURL()+`"}}`)
	c.must(http.StatusCreated, http.MethodPost, "/api/modelprofiles", `{"apiVersion":"platform/v1","kind":"ModelProfile",`+
		`"metadata":{"name":"default"},"definition":{"provider":{"name":"local-model"},"modelId":"gpt-test"}}`)
	c.must(http.StatusCreated, http.MethodPost, "/api/toolproviders", `{"apiVersion":"platform/v1","kind":"ToolProvider",`+
		`"metadata":{"name":"local"},"definition":{"protocol":"MCP","transport":"Stdio","timeoutSeconds":10,`+
		`"stdio":{"command":"`+os.Args[0]+`","env":[{"name":"`+mcptest.StdioVariable+`","value":"serve"}]}}}`)
	c.must(http.StatusCreated, http.MethodPost, "/api/toolproviders", `{"apiVersion":"platform/v1","kind":"ToolProvider",`+
		`"metadata":{"name":"kb"},"definition":{"protocol":"MCP","transport":"StreamableHttp","timeoutSeconds":30,`+
		`"http":{"url":"`+mcpServer.Endpoint()+`"}}}`)
	for _, p := range []string{"local", "kb"} {
		refresh := c.must(http.StatusOK, http.MethodPost, "/api/toolproviders/"+p+"/tools/refresh", "")
		if refresh["created"] != float64(8) {
			c.t.Fatalf("refresh of %s: %v", p, refresh)
		}
	}
	for _, tool := range []string{"local-echo", "kb-echo", "kb-wait"} {
		c.enable(tool)
	}
	c.must(http.StatusCreated, http.MethodPost, "/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"assistant"},`+
		`"definition":{"instructions":"Use your tools.","modelProfile":{"name":"default"},"tools":[{"name":"local-echo"},{"name":"kb-echo"},{"name":"kb-wait"}]}}`)
	c.must(http.StatusCreated, http.MethodPost, "/api/flows", `{"name":"assist","kind":"Orchestration","definition":{"steps":[`+
		`{"name":"in","type":"Input"},{"name":"ask","type":"Agent","agent":{"name":"assistant"}},{"name":"out","type":"Output"}],`+
		`"edges":[{"from":"in","to":"ask"},{"from":"ask","to":"out"}]}}`)
	c.must(http.StatusCreated, http.MethodPost, "/api/flows/assist/versions", `{"version":"1.0.0","activate":true}`)
}

// etag reads the ETag of path.
func (c serviceClient) etag(path string) string {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.base+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("ETag")
}

// enable enables a Tool with its current ETag, reading it again when the Tool controller wrote
// its status in between (412), as a client does.
func (c serviceClient) enable(tool string) {
	c.t.Helper()
	for range 20 {
		req, _ := http.NewRequest(http.MethodPost, c.base+"/api/tools/"+tool+"/enable", nil)
		req.Header.Set("If-Match", c.etag("/api/tools/"+tool))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.t.Fatal(err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return
		case http.StatusPreconditionFailed:
			time.Sleep(100 * time.Millisecond)
		default:
			c.t.Fatalf("enable %s: status %d", tool, resp.StatusCode)
		}
	}
	c.t.Fatalf("enable %s: the ETag kept changing", tool)
}

// scriptModel makes the model call local-echo and kb-echo, then kb-wait, then answer with the
// results it read.
func scriptModel(model *openaitest.Server) {
	model.Set(func(s *openaitest.Server) {
		s.Answer = func(req openaitest.ChatRequest) openaitest.Answer {
			var assistant int
			var results []string
			for _, m := range req.Messages {
				switch m.Role {
				case "assistant":
					assistant++
				case "tool":
					results = append(results, m.Content)
				}
			}
			switch assistant {
			case 0:
				return openaitest.Answer{ToolCalls: []openaitest.ToolCall{
					openaitest.Call("c1", "local-echo", `{"text":"over stdio"}`), openaitest.Call("c2", "kb-echo", `{"text":"over http"}`)}}
			case 1:
				return openaitest.Answer{ToolCalls: []openaitest.ToolCall{openaitest.Call("c3", "kb-wait", `{}`)}}
			}
			return openaitest.Answer{Content: "done: " + strings.Join(results, " | ")}
		}
	})
}

func TestAToolCallInterruptedBySIGKILLRunsAgainUnderItsKeyAfterTheRestartAndNoCompletedCallRepeats(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		model := openaitest.New()
		defer model.Close()
		scriptModel(model)
		mcpServer := mcptest.StartHTTP(mcptest.HTTPOptions{})
		defer mcpServer.Close()
		cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data"), env: toolsEnv()}
		if opts.DatabaseURL != "" {
			cs.args = []string{"--database-url", opts.DatabaseURL}
		}
		c := cs.start()
		t.Cleanup(cs.stop)
		setupToolsWorld(c, model, mcpServer)

		out := c.must(http.StatusAccepted, http.MethodPost, "/api/work/workitems",
			`{"type":"question","title":"Tools","instruction":"Use the tools","flowReference":{"name":"assist"}}`)
		itemID, runID := out["workItem"].(map[string]any)["id"].(string), out["flowRun"].(map[string]any)["id"].(string)

		// The third call waits at the provider: the server dies there, before it can persist the
		// call's result.
		select {
		case <-mcpServer.Recorder.Entered():
		case <-time.After(60 * time.Second):
			t.Fatalf("the wait tool was not called: %v", c.must(http.StatusOK, http.MethodGet, "/api/flowRuns/"+runID, ""))
		}
		cs.sigkill()
		mcpServer.Recorder.Release()
		c = cs.start()

		waitForState(c, runID, "Completed", "Failed")
		result := c.must(http.StatusOK, http.MethodGet, "/api/work/workitems/"+itemID+"/result", "")
		g.Expect(result).To(HaveKeyWithValue("status", "Completed"), "%v", result)
		g.Expect(result["result"]).To(HaveKeyWithValue("output", HaveKeyWithValue("text", "done: echo: over stdio | echo: over http | released")))

		g.Expect(mcpServer.Recorder.CallsOf("echo")).To(Equal(map[string]int{runID + "/ask/tool/2": 1}), "a completed call never runs again")
		g.Expect(mcpServer.Recorder.CallsOf("wait")).To(Equal(map[string]int{runID + "/ask/tool/3": 2}), "the interrupted call runs again under its key")
		calls := c.must(http.StatusOK, http.MethodGet, "/api/flowRuns/"+runID+"/tool-calls", "")["items"].([]any)
		g.Expect(calls).To(HaveLen(3))
		for i, want := range []struct {
			tool       string
			executions float64
			result     string
		}{{"local-echo", 1, "echo: over stdio"}, {"kb-echo", 1, "echo: over http"}, {"kb-wait", 2, "released"}} {
			call := calls[i].(map[string]any)
			g.Expect(call).To(And(HaveKeyWithValue("tool", want.tool), HaveKeyWithValue("executions", want.executions),
				HaveKeyWithValue("result", want.result), HaveKeyWithValue("status", "completed"),
				HaveKeyWithValue("idempotencyKey", fmt.Sprintf("%s/ask/tool/%d", runID, i+1))), "call %d", i+1)
		}
		events := c.must(http.StatusOK, http.MethodGet, "/api/flowRuns/"+runID+"/events", "")["items"].([]any)
		var types []string
		for _, e := range events {
			types = append(types, e.(map[string]any)["type"].(string))
		}
		g.Expect(types).To(ContainElements("ToolCallRequested", "ToolCallCompleted", "StepRestarted", "ToolCallRestarted"))
	})
}
