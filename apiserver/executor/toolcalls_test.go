package executor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/provider/openaitest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/tools/mcptest"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/internal/config"
)

// The tool tests run against the embedded control plane, started on first use: Tools and their
// providers are real objects, read as platform serve reads them.
var (
	kubeOnce sync.Once
	kubeEnv  *testenv.Env
	kube     client.Client
	kubeErr  error
	nsCount  atomic.Int64
)

func realKube(t *testing.T) client.Client {
	t.Helper()
	kubeOnce.Do(func() {
		if kubeEnv, kubeErr = testenv.Start(context.Background(), testenv.Options{}); kubeErr == nil {
			kube, kubeErr = client.New(kubeEnv.Config, client.Options{Scheme: platformscheme.Scheme})
		}
	})
	if kubeErr != nil {
		t.Fatal(kubeErr)
	}
	return kube
}

func stopKube() {
	if kubeEnv != nil {
		kubeEnv.Stop()
	}
}

// toolWorld is a workspace with a model (an OpenAI wire-format test server behind a
// ModelProvider and ModelProfile), an MCP server discovered as the ToolProvider "kb", and an
// agent "assistant" that may call the Tools agentTools.
type toolWorld struct {
	*harness
	model   *openaitest.Server
	mcp     *mcptest.HTTPServer
	manager *tools.Manager
	ns      string
}

func newToolWorld(t *testing.T, s *store.Store, agentTools []string, enabled ...string) *toolWorld {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	kube := realKube(t)
	w := &toolWorld{harness: newHarness(t, s), model: openaitest.New(), mcp: mcptest.StartHTTP(mcptest.HTTPOptions{}),
		ns: fmt.Sprintf("exec-tools-%d-%d", time.Now().UnixNano()%100000, nsCount.Add(1))}
	t.Cleanup(w.model.Close)
	t.Cleanup(w.mcp.Close)
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}},
		&platformv1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "local"},
			Definition: platformv1.ModelProviderDefinition{Type: platformv1.OpenAICompatibleProvider, Endpoint: w.model.BaseURL()}},
		&platformv1.ModelProfile{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "default"},
			Definition: platformv1.ModelProfileDefinition{Provider: platformv1.LocalObjectReference{Name: "local"}, ModelID: "gpt-test"}},
	} {
		g.Expect(kube.Create(ctx, obj)).To(Succeed())
	}
	p := &platformv1.ToolProvider{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "kb"},
		Definition: platformv1.ToolProviderDefinition{Protocol: platformv1.MCPProtocol, Transport: platformv1.StreamableHTTPTransport,
			HTTP: &platformv1.HTTPTransportSettings{URL: w.mcp.Endpoint()}, TimeoutSeconds: ptr[int32](5)}}
	g.Expect(kube.Create(ctx, p)).To(Succeed())
	var err error
	w.manager, err = tools.NewManager(tools.Options{Kube: kube, Secrets: func(context.Context, string, string, platformv1.SecretReference) (string, error) {
		return "", errors.New("no Secret has a value here")
	}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(w.manager.Close)
	_, err = w.manager.Refresh(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range enabled {
		w.setTool(g, name, func(d *platformv1.ToolDefinition) { d.Enabled = true })
	}
	w.wctx = work.Context{TenantID: "t1", WorkspaceID: "ws-" + w.ns, Namespace: w.ns, PrincipalID: "p1"}
	w.resolver.agents["assistant"] = provider.Agent{Name: "assistant", Revision: "1", Instructions: "Use your tools.",
		ModelProfile: "default", Tools: agentTools}
	w.provider.Provider = &provider.ManagedProvider{Client: kube, Config: config.FromMap(config.Testing, nil)}
	opts := w.options()
	opts.Tools = w.manager
	w.build(t, opts)
	return w
}

func (w *toolWorld) setTool(g Gomega, name string, change func(*platformv1.ToolDefinition)) {
	tool := &platformv1.Tool{}
	g.ExpectWithOffset(1, kube.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, tool)).To(Succeed())
	change(&tool.Definition)
	g.ExpectWithOffset(1, kube.Update(context.Background(), tool)).To(Succeed())
}

// script makes the model answer with turns[i] while it has seen i tool results, and with the
// results it read once the turns are done.
func (w *toolWorld) script(turns ...[]openaitest.ToolCall) {
	w.model.Set(func(s *openaitest.Server) {
		s.Answer = func(req openaitest.ChatRequest) openaitest.Answer {
			seen := 0
			for _, m := range req.Messages {
				if m.Role == "assistant" {
					seen++
				}
			}
			if seen < len(turns) {
				return openaitest.Answer{ToolCalls: turns[seen]}
			}
			var results []string
			for _, m := range req.Messages {
				if m.Role == "tool" {
					results = append(results, m.Content)
				}
			}
			return openaitest.Answer{Content: "done: " + strings.Join(results, " | ")}
		}
	})
}

func (w *toolWorld) calls(t *testing.T, runID string) []work.ToolCall {
	t.Helper()
	calls, err := w.work.ToolCalls(context.Background(), runID, "")
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

func (w *toolWorld) eventTypes(t *testing.T, runID string) ([]string, []work.Event) {
	t.Helper()
	events, err := w.work.Events(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	return types, events
}

func TestAManagedAgentIsOfferedOnlyItsEnabledToolsAndEachCallIsPersistedWithArgumentsResultAndKey(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, []string{"kb-echo", "kb-add"}, "kb-echo")
		w.script([]openaitest.ToolCall{openaitest.Call("call-1", "kb-echo", `{"text":"private words"}`)})
		run, _ := w.submit(t, "assist", assistantFlow())
		w.settle(t)

		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(result(g, run)["output"]).To(HaveKeyWithValue("text", "done: echo: private words"))
		chats := w.model.Chats()
		g.Expect(chats).To(HaveLen(2))
		g.Expect(chats[0].Functions()).To(ConsistOf("requestChoice", "requestConfirmation", "requestInput", "createTask", "showResult", "kb-echo"),
			"kb-add is the agent's but disabled, so it is not offered")
		g.Expect(chats[1].ToolResults()).To(Equal(map[string]string{"call-1": "echo: private words"}))

		calls := w.calls(t, run.ID)
		g.Expect(calls).To(HaveLen(1))
		g.Expect(calls[0]).To(And(HaveField("Step", "ask"), HaveField("Seq", 1), HaveField("CallID", "call-1"),
			HaveField("Tool", "kb-echo"), HaveField("Provider", "kb"), HaveField("Arguments", `{"text":"private words"}`),
			HaveField("Status", work.ToolCallCompleted), HaveField("Result", "echo: private words"), HaveField("Executions", 1),
			HaveField("IdempotencyKey", run.ID+"/ask/tool/1")))
		g.Expect(w.mcp.Recorder.CallsOf("echo")).To(Equal(map[string]int{run.ID + "/ask/tool/1": 1}))
		types, events := w.eventTypes(t, run.ID)
		g.Expect(types).To(ContainElements("ToolCallRequested", "ToolCallStarted", "ToolCallCompleted"))
		for _, e := range events {
			g.Expect(e.Reason).NotTo(ContainSubstring("private words"), "events never hold arguments or results")
		}
	})
}

func TestAModelCallingADisabledOrUnknownToolOrAFailingOneReadsAnErrorResultAndGoesOn(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, []string{"kb-fail", "kb-add"}, "kb-fail")
		w.script([]openaitest.ToolCall{
			openaitest.Call("c1", "kb-add", `{"a":1,"b":2}`),
			openaitest.Call("c2", "kb-nothing", `{}`),
			openaitest.Call("c3", "kb-fail", `{}`),
		})
		run, _ := w.submit(t, "assist", assistantFlow())
		w.settle(t)

		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(w.model.Chats()[1].ToolResults()).To(Equal(map[string]string{
			"c1": "Error: kb-add is not a tool this agent may call",
			"c2": "Error: kb-nothing is not a tool this agent may call",
			"c3": "Error: the tool failed on purpose",
		}))
		g.Expect(w.mcp.Recorder.CallsOf("add")).To(BeEmpty(), "a disabled tool is never called")
		g.Expect(w.calls(t, run.ID)).To(HaveEach(HaveField("IsError", true)))
	})
}

func TestAToolThatRequiresApprovalWaitsForAPersonAndARejectionReturnsToTheModelWithTheReason(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, []string{"kb-echo"}, "kb-echo")
		w.setTool(g, "kb-echo", func(d *platformv1.ToolDefinition) { d.RequiresApproval = true })
		w.script([]openaitest.ToolCall{openaitest.Call("c1", "kb-echo", `{"text":"send it"}`)})

		rejected, token := w.submit(t, "assist", assistantFlow())
		w.settle(t)
		rejected = w.read(t, rejected.ID)
		g.Expect(rejected.State).To(Equal(work.StateActionRequired), rejected.Reason)
		action, err := w.work.OpenPendingAction(context.Background(), rejected.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(action.Kind).To(Equal(work.KindApproval))
		g.Expect(action.ContinuationStep).To(Equal("ask"))
		g.Expect(action.Prompt).To(And(ContainSubstring(`agent "assistant"`), ContainSubstring("kb-echo")))
		g.Expect(action.Call).To(PointTo(MatchFields(IgnoreExtras, Fields{"Agent": Equal("assistant"), "Tool": Equal("kb-echo"),
			"ToolName": Equal("echo"), "Provider": Equal("kb"), "Arguments": MatchJSON(`{"text":"send it"}`),
			"Digest": Equal(work.CallDigest("kb-echo", "kb", `{"text": "send it"}`))})), "the approver sees the exact call, structured")
		g.Expect(w.mcp.Recorder.Calls()).To(BeEmpty(), "nothing runs before the approval")
		g.Expect(w.calls(t, rejected.ID)[0].Status).To(Equal(work.ToolCallAwaitingApproval))

		w.answer(t, rejected, token, work.Answer{Approved: ptr(false), Reason: "not to that address"})
		w.settle(t)
		rejected = w.read(t, rejected.ID)
		g.Expect(rejected.State).To(Equal(work.StateCompleted), rejected.Reason)
		g.Expect(result(g, rejected)["output"]).To(HaveKeyWithValue("text", "done: Error: a person rejected this call of kb-echo: not to that address"))
		g.Expect(w.mcp.Recorder.Calls()).To(BeEmpty())
		call := w.calls(t, rejected.ID)[0]
		g.Expect(call).To(And(HaveField("DecidedBy", "p1"), HaveField("DecisionReason", "not to that address"), HaveField("Executions", 0)))
		types, _ := w.eventTypes(t, rejected.ID)
		g.Expect(types).To(ContainElements("PendingActionCreated", "PendingActionResolved", "ToolCallRejected"))
		g.Expect(types).To(HaveEach(Not(Equal("StepCompleted:ask"))))

		approved, token := w.submit(t, "assist", assistantFlow())
		w.settle(t)
		w.answer(t, w.read(t, approved.ID), token, work.Answer{Approved: ptr(true)})
		w.settle(t)
		approved = w.read(t, approved.ID)
		g.Expect(approved.State).To(Equal(work.StateCompleted), approved.Reason)
		g.Expect(result(g, approved)["output"]).To(HaveKeyWithValue("text", "done: echo: send it"))
		g.Expect(w.mcp.Recorder.CallsOf("echo")).To(Equal(map[string]int{approved.ID + "/ask/tool/1": 1}))
	})
}

func TestTheToolCallsOfAStepAreBounded(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, []string{"kb-echo"}, "kb-echo")
		opts := w.options()
		opts.Tools, opts.MaxToolCallsPerStep = w.manager, 2
		w.build(t, opts)
		w.model.Set(func(s *openaitest.Server) {
			s.Answer = func(req openaitest.ChatRequest) openaitest.Answer {
				return openaitest.Answer{ToolCalls: []openaitest.ToolCall{openaitest.Call(fmt.Sprintf("c%d", len(req.Messages)), "kb-echo", `{"text":"again"}`)}}
			}
		})
		run, _ := w.submit(t, "assist", assistantFlow())
		w.settle(t)

		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateFailed))
		g.Expect(run.Reason).To(Equal(`Agent step "ask": agent "assistant" kept calling tools after its limit of 2 tool calls`))
		g.Expect(w.mcp.Recorder.Calls()).To(HaveLen(2), "the calls past the limit are not made")
		chats := w.model.Chats()
		g.Expect(chats[len(chats)-1].Functions()).NotTo(ContainElement("kb-echo"), "past the limit no tool is offered")
		g.Expect(chats[3].ToolResults()).To(ContainElement("Error: this step's limit of 2 tool calls is reached; answer without calling tools"))
	})
}

func TestAToolProviderOutageFailsTheStepAsTransientAfterItsRetries(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, []string{"kb-echo"}, "kb-echo")
		w.script([]openaitest.ToolCall{openaitest.Call("c1", "kb-echo", `{"text":"hi"}`)})
		w.mcp.Close()
		run, _ := w.submit(t, "assist", assistantFlow())
		w.settle(t)

		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateFailed), "%+v", w.calls(t, run.ID))
		g.Expect(run.Reason).To(HavePrefix(`Agent step "ask": agent "assistant" failed 3 times: tool kb-echo: tool provider "kb" is unavailable: `))
		types, _ := w.eventTypes(t, run.ID)
		g.Expect(types).To(ContainElement("StepRetried"))
		calls := w.calls(t, run.ID)
		g.Expect(calls).To(HaveLen(1), "the call is asked for once and retried, not asked for again")
		g.Expect(calls[0].Executions).To(Equal(3))
		g.Expect(calls[0].Status).To(Equal(work.ToolCallRequested))
	})
}

func TestARealModelAsksThroughTheBuiltInActionsAndTheRunSuspendsAndResumes(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, nil)
		w.script(
			// A choice without options is refused back to the model, which corrects itself.
			[]openaitest.ToolCall{openaitest.Call("c1", "requestChoice", `{"prompt":"Which level?"}`)},
			[]openaitest.ToolCall{openaitest.Call("c2", "requestChoice", `{"prompt":"Which level?","options":[{"value":"brief","label":"Brief"},{"value":"detailed"}]}`)},
		)
		run, token := w.submit(t, "assist", assistantFlow())
		w.settle(t)
		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateActionRequired), run.Reason)
		action, _ := w.work.OpenPendingAction(context.Background(), run.ID)
		g.Expect(action.Kind).To(Equal(work.KindChoice))
		g.Expect(action.Prompt).To(Equal("Which level?"))
		g.Expect(action.Options).To(Equal([]work.Option{{Value: "brief", Label: "Brief"}, {Value: "detailed"}}))
		g.Expect(action.ContinuationStep).To(Equal("ask"), "the model goes on once answered")
		g.Expect(w.model.Chats()[1].ToolResults()).To(Equal(map[string]string{"c1": "Error: requestChoice needs 1 to 20 options"}))

		w.answer(t, run, token, work.Answer{Value: ptr("detailed")})
		w.settle(t)
		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(result(g, run)["output"]).To(Equal(map[string]any{"action": "respond", "text": "done: Error: requestChoice needs 1 to 20 options | detailed",
			"answer": "detailed"}), "the model reads its question's answer as the call's result, and answers")
		chats := w.model.Chats()
		g.Expect(chats).To(HaveLen(3))
		g.Expect(chats[2].ToolResults()).To(HaveKeyWithValue("question", "detailed"))

		for name, tc := range map[string]struct {
			call openaitest.ToolCall
			want map[string]any
		}{
			"createTask": {openaitest.Call("t1", "createTask", `{"title":"Follow up","text":"Call back"}`),
				map[string]any{"action": "createTask", "title": "Follow up", "text": "Call back"}},
			"showResult": {openaitest.Call("r1", "showResult", `{"text":"All done"}`), map[string]any{"action": "showResult", "text": "All done"}},
		} {
			w.script([]openaitest.ToolCall{tc.call})
			run, _ := w.submit(t, "assist", assistantFlow())
			w.settle(t)
			run = w.read(t, run.ID)
			g.Expect(run.State).To(Equal(work.StateCompleted), name)
			g.Expect(result(g, run)["output"]).To(Equal(tc.want), name)
		}
	})
}

func TestAToolCallInterruptedBeforeItsResultRunsAgainUnderItsKeyAndACompletedCallNeverDoes(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, []string{"kb-echo", "kb-wait"}, "kb-echo", "kb-wait")
		w.script(
			[]openaitest.ToolCall{openaitest.Call("c1", "kb-echo", `{"text":"first"}`)},
			[]openaitest.ToolCall{openaitest.Call("c2", "kb-wait", `{}`)},
		)
		opts := w.options()
		opts.Tools, opts.Lease = w.manager, 300*time.Millisecond
		w.build(t, opts)
		run, _ := w.submit(t, "assist", assistantFlow())

		// A worker runs the step until the second call waits at the provider, and dies there: its
		// context ends and nothing of the call's outcome is written.
		dying, die := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = w.exec.RunOnce(dying, "dying-worker")
		}()
		<-w.mcp.Recorder.Entered()
		die()
		<-done
		calls := w.calls(t, run.ID)
		g.Expect(calls).To(HaveLen(2))
		g.Expect(calls[0].Status).To(Equal(work.ToolCallCompleted))
		g.Expect(calls[1].Status).To(Equal(work.ToolCallStarted), "started, without a result")

		// Another worker takes the run over once the lease expired.
		w.mcp.Recorder.Release()
		time.Sleep(400 * time.Millisecond)
		w.settle(t)
		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(w.mcp.Recorder.CallsOf("echo")).To(Equal(map[string]int{run.ID + "/ask/tool/1": 1}), "a completed call never runs again")
		g.Expect(w.mcp.Recorder.CallsOf("wait")).To(Equal(map[string]int{run.ID + "/ask/tool/2": 2}), "the interrupted call runs again under its key")
		calls = w.calls(t, run.ID)
		g.Expect(calls[1]).To(And(HaveField("Status", work.ToolCallCompleted), HaveField("Result", "released"), HaveField("Executions", 2)))
		types, _ := w.eventTypes(t, run.ID)
		g.Expect(types).To(ContainElements("StepRestarted", "ToolCallRestarted"))
		g.Expect(result(g, run)["output"]).To(HaveKeyWithValue("text", "done: echo: first | released"))
	})
}

var _ = executor.DefaultMaxToolCallsPerStep

func TestOfflineTheDeterministicProviderCallsToolsThroughTheSameGovernedExecution(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, []string{"kb-echo"}, "kb-echo")
		w.provider.Provider = provider.DeterministicProvider{}
		a := w.resolver.agents["assistant"]
		a.Instructions = "@callTool kb-echo {\"text\":\"offline\"}\n@callTool kb-add {\"a\":1,\"b\":2}\n@showResult"
		w.resolver.agents["assistant"] = a
		run, _ := w.submit(t, "assist", assistantFlow())
		w.settle(t)

		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		text := result(g, run)["output"].(map[string]any)["text"].(string)
		g.Expect(text).To(HaveSuffix("\nkb-echo: echo: offline\nkb-add: Error: kb-add is not a tool this agent may call"))
		g.Expect(w.mcp.Recorder.CallsOf("echo")).To(Equal(map[string]int{run.ID + "/ask/tool/1": 1}))
	})
}

func TestAnApprovedCallIsRefusedWhenWhatItsApprovalReliedOnNoLongerHolds(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, []string{"kb-echo"}, "kb-echo")
		w.setTool(g, "kb-echo", func(d *platformv1.ToolDefinition) { d.RequiresApproval = true })
		w.script([]openaitest.ToolCall{openaitest.Call("c1", "kb-echo", `{"text":"send it"}`)})
		assistant := w.resolver.agents["assistant"]
		tests := []struct {
			rule     string
			change   func(run work.FlowRun)
			undo     func()
			approver string
			refusal  string
		}{
			{rule: "the tool was disabled meanwhile",
				change:  func(work.FlowRun) { w.setTool(g, "kb-echo", func(d *platformv1.ToolDefinition) { d.Enabled = false }) },
				undo:    func() { w.setTool(g, "kb-echo", func(d *platformv1.ToolDefinition) { d.Enabled = true }) },
				refusal: "tool kb-echo is no longer enabled and offered to agent \"assistant\""},
			{rule: "the call is not the one approved (its digest differs)",
				change: func(run work.FlowRun) {
					_, err := s.DB().Exec(s.Rebind(`UPDATE flow_run_tool_calls SET arguments = ? WHERE run_id = ?`), `{"text":"send it elsewhere"}`, run.ID)
					g.Expect(err).NotTo(HaveOccurred())
				},
				refusal: "it is not the exact call that was approved"},
			{rule: "the agent no longer lists the tool",
				change: func(work.FlowRun) {
					changed := assistant
					changed.Tools = nil
					w.resolver.agents["assistant"] = changed
				},
				undo:    func() { w.resolver.agents["assistant"] = assistant },
				refusal: "agent \"assistant\" is no longer allowed to call tool kb-echo"},
			{rule: "the approver may no longer execute runs",
				approver: "p2",
				change:   func(work.FlowRun) { w.denied["p2"] = true },
				undo:     func() { delete(w.denied, "p2") },
				refusal:  "the person who approved it may no longer execute runs in this workspace"},
		}
		for _, tt := range tests {
			run, token := w.submit(t, "assist", assistantFlow())
			w.settle(t)
			run = w.read(t, run.ID)
			g.Expect(run.State).To(Equal(work.StateActionRequired), tt.rule)
			action, err := w.work.OpenPendingAction(context.Background(), run.ID)
			g.Expect(err).NotTo(HaveOccurred())
			approver := tt.approver
			if approver == "" {
				approver = "p1"
			}
			_, _, _, err = w.work.Respond(context.Background(), work.Response{WorkspaceID: w.wctx.WorkspaceID, RunID: run.ID,
				ActionID: action.ID, Token: token, PrincipalID: approver, Answer: work.Answer{Approved: ptr(true)}})
			g.Expect(err).NotTo(HaveOccurred())
			tt.change(run)
			w.settle(t)
			if tt.undo != nil {
				tt.undo()
			}
			run = w.read(t, run.ID)
			g.Expect(run.State).To(Equal(work.StateCompleted), "%s: %s", tt.rule, run.Reason)
			g.Expect(result(g, run)["output"]).To(HaveKeyWithValue("text", And(ContainSubstring("the approved call of kb-echo was not made"),
				ContainSubstring(tt.refusal))), "%s: the model is told why", tt.rule)
			types, events := w.eventTypes(t, run.ID)
			g.Expect(types).To(ContainElement(work.EventToolCallRefused), tt.rule)
			g.Expect(events).To(ContainElement(HaveField("Reason", ContainSubstring(tt.refusal))), "%s: the run's history says why", tt.rule)
			g.Expect(w.mcp.Recorder.Calls()).To(BeEmpty(), "%s: nothing ran", tt.rule)
		}
	})
}

// A step resumed after its question that then waits for a tool call's approval runs the approved
// call once when approved: what the question said of the step's calls (none then) no longer
// holds, and the step reads the calls it has now.
func TestAnAnsweredStepThatWaitsForAnApprovalRunsTheApprovedCallOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := newToolWorld(t, s, []string{"kb-echo"}, "kb-echo")
		w.setTool(g, "kb-echo", func(d *platformv1.ToolDefinition) { d.RequiresApproval = true })
		w.script(
			[]openaitest.ToolCall{openaitest.Call("q1", "requestChoice", `{"prompt":"Which level?","options":[{"value":"brief"},{"value":"detailed"}]}`)},
			[]openaitest.ToolCall{openaitest.Call("c1", "kb-echo", `{"text":"send it"}`)},
		)
		run, token := w.submit(t, "assist", assistantFlow())
		w.settle(t)
		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateActionRequired), run.Reason)

		token = w.answer(t, run, token, work.Answer{Value: ptr("detailed")})
		w.settle(t)
		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateActionRequired), run.Reason)
		action, err := w.work.OpenPendingAction(context.Background(), run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(action.Kind).To(Equal(work.KindApproval))

		w.answer(t, run, token, work.Answer{Approved: ptr(true)})
		w.settle(t)
		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(result(g, run)["output"]).To(HaveKeyWithValue("text", ContainSubstring("echo: send it")))
		g.Expect(w.mcp.Recorder.CallsOf("echo")).To(Equal(map[string]int{run.ID + "/ask/tool/1": 1}))
		g.Expect(w.calls(t, run.ID)).To(HaveLen(1), "the call is asked for once")
	})
}
