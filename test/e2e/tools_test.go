package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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

// The run's lease is long here, as in production: the restarted process on the same data
// directory gives back its killed predecessor's leases at start, so the run resumes at once
// instead of when the lease would have expired.
func TestAToolCallInterruptedBySIGKILLRunsAgainUnderItsKeyAfterTheRestartAndNoCompletedCallRepeats(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		model := openaitest.New()
		defer model.Close()
		scriptModel(model)
		mcpServer := mcptest.StartHTTP(mcptest.HTTPOptions{})
		defer mcpServer.Close()
		const lease = 30 * time.Second
		cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data"),
			env: append(toolsEnv(), fmt.Sprintf("Platform__Executor__LeaseSeconds=%d", int(lease.Seconds())))}
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
		restarted := time.Now()

		waitForState(c, runID, "Completed", "Failed")
		g.Expect(time.Since(restarted)).To(BeNumerically("<", lease/3), "the run resumes at once after the restart, not when its lease expires")
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
		g.Expect(slices.Index(types, "StepRestarted")).To(BeNumerically("<", slices.Index(types, "ToolCallRestarted")),
			"the step's restart is persisted before the calls it makes again: %v", types)
	})
}

// objectWithETag reads the object at path with its ETag.
func (c serviceClient) objectWithETag(path string) (map[string]any, string) {
	c.t.Helper()
	resp, err := http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return out, resp.Header.Get("ETag")
}

// requireApproval makes every call of a Tool wait for a person, replacing the Tool with its
// current ETag as a client does (read again after a 412: the Tool controller writes status).
func (c serviceClient) requireApproval(tool string) {
	c.t.Helper()
	path := "/api/tools/" + tool
	for range 20 {
		object, etag := c.objectWithETag(path)
		object["definition"].(map[string]any)["requiresApproval"] = true
		delete(object, "status")
		body, _ := json.Marshal(object)
		req, _ := http.NewRequest(http.MethodPut, c.base+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("If-Match", etag)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return
		case http.StatusPreconditionFailed:
			time.Sleep(100 * time.Millisecond)
		default:
			c.t.Fatalf("PUT %s: status %d: %s", path, resp.StatusCode, answer)
		}
	}
	c.t.Fatalf("PUT %s: the ETag kept changing", path)
}

// The "Done when": an agent on an OpenAI-compatible model calls a Tool that requires
// approval inside a published Flow; the run waits on an approval PendingAction that names the
// tool and the arguments, nothing reaches the provider before a person answers through the API,
// an approved call runs once under its key and a rejected one returns to the model with the
// person's reason.
func TestAToolThatRequiresApprovalWaitsForAPersonWhoAnswersThroughTheAPI(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		model := openaitest.New()
		defer model.Close()
		model.Set(func(s *openaitest.Server) {
			s.Answer = func(req openaitest.ChatRequest) openaitest.Answer {
				var results []string
				for _, m := range req.Messages {
					if m.Role == "tool" {
						results = append(results, m.Content)
					}
				}
				if len(results) == 0 {
					return openaitest.Answer{ToolCalls: []openaitest.ToolCall{openaitest.Call("c1", "kb-echo", `{"text":"to the board"}`)}}
				}
				return openaitest.Answer{Content: "done: " + strings.Join(results, " | ")}
			}
		})
		mcpServer := mcptest.StartHTTP(mcptest.HTTPOptions{})
		defer mcpServer.Close()
		cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data"), env: toolsEnv()}
		if opts.DatabaseURL != "" {
			cs.args = []string{"--database-url", opts.DatabaseURL}
		}
		c := cs.start()
		t.Cleanup(cs.stop)
		setupToolsWorld(c, model, mcpServer)
		c.requireApproval("kb-echo")

		decide := func(answer string) (runID string, result map[string]any, calls []any) {
			out := c.must(http.StatusAccepted, http.MethodPost, "/api/work/workitems",
				`{"type":"question","title":"Approval","instruction":"Send it","flowReference":{"name":"assist"}}`)
			itemID, token := out["workItem"].(map[string]any)["id"].(string), out["resumeToken"].(string)
			runID = out["flowRun"].(map[string]any)["id"].(string)
			action := waitForState(c, runID, "ActionRequired")["pendingAction"].(map[string]any)
			g.Expect(action).To(HaveKeyWithValue("kind", "approval"))
			g.Expect(action["prompt"]).To(And(ContainSubstring(`agent "assistant"`), ContainSubstring("kb-echo")))
			g.Expect(action["call"]).To(And(HaveKeyWithValue("tool", "kb-echo"), HaveKeyWithValue("provider", "kb"),
				HaveKeyWithValue("arguments", map[string]any{"text": "to the board"}), HaveKeyWithValue("digest", HavePrefix("sha256:"))),
				"the approver sees the exact call: the complete arguments, structured, and its digest")
			waiting := c.must(http.StatusOK, http.MethodGet, "/api/flowRuns/"+runID+"/tool-calls", "")["items"].([]any)
			g.Expect(waiting).To(ConsistOf(And(HaveKeyWithValue("status", "awaitingApproval"), HaveKeyWithValue("executions", float64(0)),
				HaveKeyWithValue("pendingActionId", action["id"]))))
			g.Expect(mcpServer.Recorder.CallsOf("echo")).NotTo(HaveKey(HavePrefix(runID)), "nothing reaches the provider before the answer")

			c.must(http.StatusOK, http.MethodPost, "/api/flowRuns/"+runID+"/pending-actions/"+action["id"].(string)+"/responses",
				`{"resumeToken":"`+token+`",`+answer+`}`)
			waitForState(c, runID, "Completed", "Failed")
			result = c.must(http.StatusOK, http.MethodGet, "/api/work/workitems/"+itemID+"/result", "")
			calls = c.must(http.StatusOK, http.MethodGet, "/api/flowRuns/"+runID+"/tool-calls", "")["items"].([]any)
			return runID, result, calls
		}

		runID, result, calls := decide(`"approved":true`)
		g.Expect(result).To(HaveKeyWithValue("status", "Completed"), "%v", result)
		g.Expect(result["result"]).To(HaveKeyWithValue("output", HaveKeyWithValue("text", "done: echo: to the board")))
		g.Expect(mcpServer.Recorder.CallsOf("echo")).To(HaveKeyWithValue(runID+"/ask/tool/1", 1))
		g.Expect(calls).To(ConsistOf(And(HaveKeyWithValue("status", "completed"), HaveKeyWithValue("executions", float64(1)),
			HaveKeyWithValue("decidedBy", Not(BeEmpty())), HaveKeyWithValue("result", "echo: to the board"))))

		runID, result, calls = decide(`"approved":false,"reason":"not before the audit"`)
		g.Expect(result).To(HaveKeyWithValue("status", "Completed"), "%v", result)
		g.Expect(result["result"]).To(HaveKeyWithValue("output", HaveKeyWithValue("text",
			"done: Error: a person rejected this call of kb-echo: not before the audit")))
		g.Expect(mcpServer.Recorder.CallsOf("echo")).NotTo(HaveKey(runID + "/ask/tool/1"))
		g.Expect(calls).To(ConsistOf(And(HaveKeyWithValue("executions", float64(0)), HaveKeyWithValue("isError", true),
			HaveKeyWithValue("decisionReason", "not before the audit"))))
		events := c.must(http.StatusOK, http.MethodGet, "/api/flowRuns/"+runID+"/events", "")["items"].([]any)
		var types []string
		for _, e := range events {
			types = append(types, e.(map[string]any)["type"].(string))
		}
		g.Expect(types).To(ContainElements("ToolCallRequested", "PendingActionCreated", "ToolCallRejected", "ToolCallCompleted", "RunCompleted"))
	})
}
