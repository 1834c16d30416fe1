package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/tools/mcptest"
	"platform.dev/platform/apiserver/work"
)

func TestMain(m *testing.M) {
	// The STDIO tool provider of the tool tests is this test binary.
	mcptest.ServeStdioIfRequested()
	code := storetest.Run(m)
	stopKube()
	os.Exit(code)
}

// resolver is an in-memory Resolver.
type resolver struct {
	mu     sync.Mutex
	flows  map[string]platformv1.FlowDefinition // name@version
	agents map[string]provider.Agent
}

func (r *resolver) FlowVersion(_ context.Context, _, name, version string) (platformv1.FlowDefinition, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	def, ok := r.flows[name+"@"+version]
	if !ok {
		return def, "", fmt.Errorf("%s@%s: %w", name, version, executor.ErrFlowNotFound)
	}
	return def, "sha256:" + name + version, nil
}

func (r *resolver) Agent(_ context.Context, _, name string) (provider.Agent, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.agents[name]
	if !ok {
		return a, fmt.Errorf("%s: %w", name, executor.ErrAgentNotFound)
	}
	return a, nil
}

func (r *resolver) setInstructions(name, instructions string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.agents[name]
	a.Instructions, a.Revision = instructions, a.Revision+"'"
	r.agents[name] = a
}

// recorder remembers the idempotency keys of the calls it passes on.
type recorder struct {
	provider.Provider
	mu   sync.Mutex
	keys []string
}

func (r *recorder) Invoke(ctx context.Context, req provider.Request) (provider.Action, error) {
	r.mu.Lock()
	r.keys = append(r.keys, req.IdempotencyKey)
	r.mu.Unlock()
	return r.Provider.Invoke(ctx, req)
}

type harness struct {
	work     *work.Store
	resolver *resolver
	provider *recorder
	exec     *executor.Executor
	denied   map[string]bool // principal ids without runs/execute
	// wctx is the context runs are submitted in: ctxA, or a workspace namespace of their own.
	wctx work.Context
}

var ctxA = work.Context{TenantID: "t1", WorkspaceID: "ws-a", Namespace: "a", PrincipalID: "p1"}

func newHarness(t *testing.T, s *store.Store) *harness {
	t.Helper()
	h := &harness{work: work.New(s), resolver: &resolver{flows: map[string]platformv1.FlowDefinition{}, agents: map[string]provider.Agent{
		"planner":   {Name: "planner", Revision: "1", Instructions: "Plan the report.\n@requestChoice Which level of detail?\n@option brief Brief\n@option detailed Detailed"},
		"confirmer": {Name: "confirmer", Revision: "1", Instructions: "@requestConfirmation Publish the {{input}} report?"},
		"writer":    {Name: "writer", Revision: "1", Instructions: "Write it."},
		"broken":    {Name: "broken", Revision: "1", Instructions: "@showError the source is unavailable"},
		"flaky":     {Name: "flaky", Revision: "1", Instructions: "@transientFailures 2\n@respond done"},
		"down":      {Name: "down", Revision: "1", Instructions: "@transientFailures 9"},
	}}, provider: &recorder{Provider: provider.DeterministicProvider{}}, denied: map[string]bool{}, wctx: ctxA}
	h.build(t, h.options())
	return h
}

// options are the harness's executor options.
func (h *harness) options() executor.Options {
	return executor.Options{Work: h.work, Resolver: h.resolver, Provider: h.provider,
		RetryBackoff: time.Millisecond, Lease: time.Minute,
		Authorize: func(_ context.Context, c work.Context) error {
			if h.denied[c.PrincipalID] {
				return executor.ErrNotPermitted
			}
			return nil
		}}
}

// build replaces the harness's executor by one with opts.
func (h *harness) build(t *testing.T, opts executor.Options) {
	t.Helper()
	var err error
	if h.exec, err = executor.New(opts); err != nil {
		t.Fatal(err)
	}
}

// settle runs workers until no run is runnable.
func (h *harness) settle(t *testing.T) {
	t.Helper()
	for range 100 {
		worked, err := h.exec.RunOnce(context.Background(), "test-worker")
		if err != nil {
			t.Fatal(err)
		}
		if !worked {
			return
		}
	}
	t.Fatal("runs did not settle")
}

func (h *harness) submit(t *testing.T, flow string, def platformv1.FlowDefinition) (work.FlowRun, string) {
	t.Helper()
	h.resolver.flows[flow+"@1.0.0"] = def
	_, run, token, err := h.work.Submit(context.Background(), work.Submission{Context: h.wctx, Type: "report", Title: "Quarterly",
		Instruction: "Prepare the quarterly report", FlowName: flow, FlowVersion: "1.0.0",
		Input: map[string]any{"type": "report", "title": "Quarterly", "instruction": "Prepare the quarterly report"}})
	if err != nil {
		t.Fatal(err)
	}
	return run, token
}

func (h *harness) read(t *testing.T, id string) work.FlowRun {
	t.Helper()
	run, err := h.work.Run(context.Background(), h.wctx.WorkspaceID, id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func (h *harness) answer(t *testing.T, run work.FlowRun, token string, ans work.Answer) string {
	t.Helper()
	action, err := h.work.OpenPendingAction(context.Background(), run.ID)
	if err != nil || action == nil {
		t.Fatalf("no open pending action on run %s (%s): %v", run.ID, run.State, err)
	}
	_, _, next, err := h.work.Respond(context.Background(), work.Response{WorkspaceID: h.wctx.WorkspaceID, RunID: run.ID,
		ActionID: action.ID, Token: token, PrincipalID: "p1", Answer: ans})
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func orchestration(steps []platformv1.FlowStep, edges ...platformv1.FlowEdge) platformv1.FlowDefinition {
	return platformv1.FlowDefinition{FlowKind: platformv1.OrchestrationFlow, Steps: steps, Edges: edges}
}

func agentStep(name, agent string) platformv1.FlowStep {
	return platformv1.FlowStep{Name: name, Type: platformv1.AgentStep, Agent: &platformv1.LocalObjectReference{Name: platformv1.ResourceName(agent)}}
}

func edge(from, to string, when ...string) platformv1.FlowEdge {
	e := platformv1.FlowEdge{From: from, To: to}
	if len(when) > 0 {
		e.When = when[0]
	}
	return e
}

var (
	input  = platformv1.FlowStep{Name: "in", Type: platformv1.InputStep}
	output = platformv1.FlowStep{Name: "out", Type: platformv1.OutputStep}
)

// reportFlow is the flow of the "Done when": Input -> Agent (requests a choice) ->
// Condition -> Agent (requests confirmation) -> Output.
func reportFlow() platformv1.FlowDefinition {
	return orchestration([]platformv1.FlowStep{
		input,
		agentStep("choose", "planner"),
		{Name: "check", Type: platformv1.ConditionStep, Expression: `steps.choose.answer == "detailed"`},
		{Name: "brief", Type: platformv1.TransformStep, Expression: `"brief"`},
		agentStep("confirm", "confirmer"),
		{Name: "out", Type: platformv1.OutputStep, Message: "Report ready",
			Input: `{"title": input.title, "level": steps.choose.answer, "confirmed": steps.confirm.answer}`},
	}, edge("in", "choose"), edge("choose", "check"), edge("check", "confirm", "true"), edge("check", "brief", "false"),
		edge("brief", "confirm"), edge("confirm", "out"))
}

func result(g Gomega, run work.FlowRun) map[string]any {
	var out map[string]any
	g.ExpectWithOffset(1, json.Unmarshal(run.Result, &out)).To(Succeed())
	return out
}

func TestTheReportFlowSuspendsTwiceAndCompletesFromTheAnswers(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		run, token := h.submit(t, "report", reportFlow())
		h.settle(t)

		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateActionRequired))
		action, _ := h.work.OpenPendingAction(context.Background(), run.ID)
		g.Expect(action.Kind).To(Equal(work.KindChoice))
		g.Expect(action.Prompt).To(Equal("Which level of detail?"))
		g.Expect(action.Options).To(ConsistOf(work.Option{Value: "brief", Label: "Brief"}, work.Option{Value: "detailed", Label: "Detailed"}))
		g.Expect(action.ContinuationStep).To(Equal("choose"), "the agent that asked goes on with the answer")

		token = h.answer(t, run, token, work.Answer{Value: ptr("detailed")})
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateActionRequired))
		action, _ = h.work.OpenPendingAction(context.Background(), run.ID)
		g.Expect(action.Kind).To(Equal(work.KindConfirmation))
		g.Expect(action.Step).To(Equal("confirm"))

		h.answer(t, run, token, work.Answer{Confirmed: ptr(true)})
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(result(g, run)).To(Equal(map[string]any{"message": "Report ready",
			"output": map[string]any{"title": "Quarterly", "level": "detailed", "confirmed": true}}))

		events, err := h.work.Events(context.Background(), run.ID, 0)
		g.Expect(err).NotTo(HaveOccurred())
		var types []string
		for _, e := range events {
			types = append(types, e.Type+":"+e.Step)
		}
		g.Expect(types).To(Equal([]string{
			"RunCreated:", "RunStarted:in", "StepStarted:in", "StepCompleted:in", "StepStarted:choose", "StepCompleted:choose",
			"PendingActionCreated:choose", "PendingActionResolved:choose", "RunResumed:choose", "StepStarted:choose", "StepCompleted:choose",
			"StepStarted:check", "StepCompleted:check",
			"StepStarted:confirm", "StepCompleted:confirm", "PendingActionCreated:confirm", "PendingActionResolved:confirm",
			"RunResumed:confirm", "StepStarted:confirm", "StepCompleted:confirm",
			"StepStarted:out", "StepCompleted:out", "RunCompleted:out"}))
	})
}

func ptr[T any](v T) *T { return &v }

func TestEachStepTypeMovesTheRunAsItsRuleSays(t *testing.T) {
	cases := map[string]struct {
		def    platformv1.FlowDefinition
		state  string
		output any    // the Output step's output, when Completed
		reason string // a substring of the reason, when Failed
	}{
		"Input passes the submitted input on": {
			def:    orchestration([]platformv1.FlowStep{input, output}, edge("in", "out")),
			state:  work.StateCompleted,
			output: map[string]any{"type": "report", "title": "Quarterly", "instruction": "Prepare the quarterly report"},
		},
		"Transform replaces the data": {
			def: orchestration([]platformv1.FlowStep{input, {Name: "t", Type: platformv1.TransformStep, Expression: `input.title + "!"`}, output},
				edge("in", "t"), edge("t", "out")),
			state: work.StateCompleted, output: "Quarterly!",
		},
		"Router follows the edge with its label": {
			def: orchestration([]platformv1.FlowStep{input, {Name: "r", Type: platformv1.RouterStep, Expression: `input.type`},
				{Name: "bad", Type: platformv1.FailureStep, Message: "wrong route"}, output},
				edge("in", "r"), edge("r", "out", "report"), edge("r", "bad", "other")),
			state: work.StateCompleted, output: map[string]any{"type": "report", "title": "Quarterly", "instruction": "Prepare the quarterly report"},
		},
		"Router without an edge for its label fails the run": {
			def: orchestration([]platformv1.FlowStep{input, {Name: "r", Type: platformv1.RouterStep, Expression: `"nowhere"`},
				{Name: "bad", Type: platformv1.FailureStep}, output},
				edge("in", "r"), edge("r", "out", "report"), edge("r", "bad", "other")),
			state: work.StateFailed, reason: `no edge leaves it labelled "nowhere"`,
		},
		"Condition follows its false edge": {
			def: orchestration([]platformv1.FlowStep{input, {Name: "c", Type: platformv1.ConditionStep, Expression: `input.title == "Annual"`},
				{Name: "no", Type: platformv1.FailureStep, Message: "not annual"}, output},
				edge("in", "c"), edge("c", "out", "true"), edge("c", "no", "false")),
			state: work.StateFailed, reason: "not annual",
		},
		"a CEL error at run time fails the run with a readable reason": {
			def: orchestration([]platformv1.FlowStep{input, {Name: "t", Type: platformv1.TransformStep, Expression: `input.missing.field`}, output},
				edge("in", "t"), edge("t", "out")),
			state: work.StateFailed, reason: `Transform step "t": its expression failed: no such key: missing`,
		},
		"Agent respond is the step output": {
			def:   orchestration([]platformv1.FlowStep{input, agentStep("w", "writer"), output}, edge("in", "w"), edge("w", "out")),
			state: work.StateCompleted, output: map[string]any{"action": "respond", "text": "Here is an answer to \u201cQuarterly\u201d, written offline from your request alone."},
		},
		"Agent showError fails the run": {
			def:   orchestration([]platformv1.FlowStep{input, agentStep("w", "broken"), output}, edge("in", "w"), edge("w", "out")),
			state: work.StateFailed, reason: "the source is unavailable",
		},
		"Agent transient failures are retried with backoff": {
			def:   orchestration([]platformv1.FlowStep{input, agentStep("w", "flaky"), output}, edge("in", "w"), edge("w", "out")),
			state: work.StateCompleted, output: map[string]any{"action": "respond", "text": "done"},
		},
		"Agent transient failures past the last attempt fail the step with a reason": {
			def:   orchestration([]platformv1.FlowStep{input, agentStep("w", "down"), output}, edge("in", "w"), edge("w", "out")),
			state: work.StateFailed, reason: `agent "down" failed 3 times`,
		},
		"a Direct flow invokes its target agent": {
			def:   platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "flaky"}},
			state: work.StateCompleted, output: map[string]any{"action": "respond", "text": "done"},
		},
		"an agent missing at first execution fails the run": {
			def:   orchestration([]platformv1.FlowStep{input, agentStep("w", "ghost"), output}, edge("in", "w"), edge("w", "out")),
			state: work.StateFailed, reason: `invokes agent "ghost", which the workspace does not have`,
		},
		"an invalid snapshot is refused": {
			def:   orchestration([]platformv1.FlowStep{input, output}),
			state: work.StateFailed, reason: "is invalid",
		},
	}
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s)
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				run, _ := h.submit(t, "flow", tc.def)
				h.settle(t)
				run = h.read(t, run.ID)
				g.Expect(run.State).To(Equal(tc.state), run.Reason)
				if tc.state == work.StateCompleted {
					g.Expect(result(g, run)["output"]).To(Equal(tc.output))
				}
				g.Expect(run.Reason).To(ContainSubstring(tc.reason))
				item, err := h.work.WorkItem(context.Background(), ctxA.WorkspaceID, run.WorkItemID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(item.Status).To(Equal(tc.state), "the WorkItem follows its run")
			})
		}
	})
}

func TestAStepSuspensionAsksBeforeTheStepRunsAndTheStepSeesTheAnswer(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		def := orchestration([]platformv1.FlowStep{input,
			{Name: "style", Type: platformv1.TransformStep, Expression: `steps.style.answer`,
				Suspend: &platformv1.FlowSuspend{Kind: platformv1.TextSuspend, Prompt: "Which style?"}}, output},
			edge("in", "style"), edge("style", "out"))
		run, token := h.submit(t, "styled", def)
		h.settle(t)
		action, _ := h.work.OpenPendingAction(context.Background(), run.ID)
		g.Expect(action.Kind).To(Equal(work.KindText))
		g.Expect(action.ContinuationStep).To(Equal("style"))
		h.answer(t, h.read(t, run.ID), token, work.Answer{Value: ptr("formal")})
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(result(g, run)["output"]).To(Equal("formal"))
	})
}

func TestAnAgentThatAskedAnswersWithThePersonsAnswer(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		h.resolver.agents["styler"] = provider.Agent{Name: "styler", Revision: "1",
			Instructions: "@requestChoice Which style?\n@option formal\n@option concise\n@respond A {{subject}} note, as asked"}
		run, token := h.submit(t, "styled", orchestration([]platformv1.FlowStep{input, agentStep("ask", "styler"), output},
			edge("in", "ask"), edge("ask", "out")))
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateActionRequired), run.Reason)
		h.answer(t, run, token, work.Answer{Value: ptr("concise")})
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(result(g, run)["output"]).To(Equal(map[string]any{"action": "respond", "text": "A Quarterly note, as asked", "answer": "concise"}),
			"the agent answers after the question; the answer stays readable as steps.ask.answer")
	})
}

func TestARunKeepsTheAgentRevisionsPinnedAtItsFirstExecution(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		run, token := h.submit(t, "report", reportFlow())
		h.settle(t)
		// The agents change while the run waits; the run goes on with the revisions it pinned.
		h.resolver.setInstructions("confirmer", "@respond no confirmation needed")
		h.resolver.flows["report@1.0.0"] = orchestration([]platformv1.FlowStep{input, output}, edge("in", "out"))
		token = h.answer(t, h.read(t, run.ID), token, work.Answer{Value: ptr("brief")})
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateActionRequired), "the pinned confirmer still asks")
		var agents map[string]provider.Agent
		g.Expect(json.Unmarshal(run.Agents, &agents)).To(Succeed())
		g.Expect(agents["confirmer"].Revision).To(Equal("1"))
		g.Expect(run.FlowDigest).To(Equal("sha256:report1.0.0"))
		h.answer(t, run, token, work.Answer{Confirmed: ptr(false)})
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(result(g, run)["output"]).To(Equal(map[string]any{"title": "Quarterly", "level": "brief", "confirmed": false}))
	})
}

func TestAnAgentStepInterruptedMidCallIsRetriedUnderTheSameIdempotencyKey(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		def := orchestration([]platformv1.FlowStep{input, agentStep("w", "writer"), output}, edge("in", "w"), edge("w", "out"))
		run, _ := h.submit(t, "crash", def)

		// A worker that dies after persisting StepStarted of the agent step, before its answer.
		ctx := context.Background()
		_, err := h.work.Claim(ctx, "dead-worker", time.Millisecond)
		g.Expect(err).NotTo(HaveOccurred())
		for _, tr := range []work.Transition{
			{State: work.StateRunning, CurrentStep: ptr("w"), StepStarted: ptr(true), Attempt: 1,
				Pin: &work.Pin{Digest: "d", Snapshot: mustJSON(def), Agents: mustJSON(map[string]provider.Agent{"writer": h.resolver.agents["writer"]})}},
		} {
			_, err := h.work.Apply(ctx, run.ID, "dead-worker", tr)
			g.Expect(err).NotTo(HaveOccurred())
		}
		time.Sleep(5 * time.Millisecond)
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(h.provider.keys).To(Equal([]string{run.ID + "/w/1"}), "the interrupted attempt is retried with its key, once")
		events, err := h.work.Events(ctx, run.ID, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(ContainElement(And(HaveField("Type", work.EventStepRestarted), HaveField("Step", "w"), HaveField("Attempt", 1))))
	})
}

func TestAWorkerRevalidatesRunsExecuteAndFailsTheRunOfAPrincipalThatLostIt(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		h.denied["p1"] = true
		run, _ := h.submit(t, "flow", orchestration([]platformv1.FlowStep{input, output}, edge("in", "out")))
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateFailed))
		g.Expect(run.Reason).To(ContainSubstring("runs/execute"))
	})
}

func TestPausedAndCancelledRunsAreNotExecuted(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		ctx := context.Background()
		def := orchestration([]platformv1.FlowStep{input, output}, edge("in", "out"))
		paused, _ := h.submit(t, "flow", def)
		cancelled, _ := h.submit(t, "flow", def)
		_, err := h.work.Pause(ctx, ctxA.WorkspaceID, paused.ID)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = h.work.Cancel(ctx, ctxA.WorkspaceID, cancelled.ID, "")
		g.Expect(err).NotTo(HaveOccurred())
		h.settle(t)
		g.Expect(h.read(t, paused.ID).State).To(Equal(work.StatePaused))
		g.Expect(h.read(t, cancelled.ID).State).To(Equal(work.StateCancelled))
		_, err = h.work.Resume(ctx, ctxA.WorkspaceID, paused.ID)
		g.Expect(err).NotTo(HaveOccurred())
		h.settle(t)
		g.Expect(h.read(t, paused.ID).State).To(Equal(work.StateCompleted))
	})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// slowAndFast resolves the flows "slow" (an agent call of 3 s) and "fast" (an immediate answer).
func slowAndFast() *resolver {
	return &resolver{
		flows: map[string]platformv1.FlowDefinition{
			"slow@1.0.0": orchestration([]platformv1.FlowStep{input, agentStep("ask", "slow"), output}, edge("in", "ask"), edge("ask", "out")),
			"fast@1.0.0": orchestration([]platformv1.FlowStep{input, agentStep("ask", "fast"), output}, edge("in", "ask"), edge("ask", "out")),
		},
		agents: map[string]provider.Agent{
			"slow": {Name: "slow", Revision: "1", Instructions: "@latencyMs 3000\n@respond late"},
			"fast": {Name: "fast", Revision: "1", Instructions: "@respond now"},
		},
	}
}

// A workspace's slow agent calls hold at most its share of the workers: another workspace's run,
// submitted after them, completes while they are still executing.
func TestSlowRunsOfOneWorkspaceHoldOnlyItsShareOfTheWorkers(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := work.New(s)
		exec, err := executor.New(executor.Options{Work: w, Resolver: slowAndFast(),
			Provider: provider.DeterministicProvider{}, Workers: 2, WorkspaceShare: 1, Lease: time.Minute, Poll: 20 * time.Millisecond,
			Authorize: func(context.Context, work.Context) error { return nil }})
		g.Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); exec.Run(ctx) }()
		defer func() { cancel(); <-stopped }()

		submit := func(c work.Context, flow string) string {
			_, run, _, err := w.Submit(ctx, work.Submission{Context: c, Type: "t", Title: "t", Instruction: "i", FlowName: flow,
				FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}})
			g.Expect(err).NotTo(HaveOccurred())
			return run.ID
		}
		ctxB := work.Context{TenantID: "t1", WorkspaceID: "ws-b", Namespace: "b", PrincipalID: "p2"}
		var slow []string
		for range 3 {
			slow = append(slow, submit(ctxA, "slow"))
		}
		began := time.Now()
		fast := submit(ctxB, "fast")
		g.Eventually(func() string {
			run, err := w.Run(ctx, ctxB.WorkspaceID, fast)
			g.Expect(err).NotTo(HaveOccurred())
			return run.State
		}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal(work.StateCompleted))
		g.Expect(time.Since(began)).To(BeNumerically("<", 2*time.Second), "the other workspace's run waited for the slow calls")
		for _, id := range slow {
			run, err := w.Run(ctx, ctxA.WorkspaceID, id)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(run.State).NotTo(Equal(work.StateCompleted), "slow runs are still executing")
		}
	})
}

// concurrency counts the agent calls under way, and the most there were at once.
type concurrency struct {
	provider.Provider
	mu        sync.Mutex
	now, most int
}

func (c *concurrency) Invoke(ctx context.Context, req provider.Request) (provider.Action, error) {
	c.mu.Lock()
	c.now++
	c.most = max(c.most, c.now)
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.now--; c.mu.Unlock() }()
	return c.Provider.Invoke(ctx, req)
}

// Workers woken together claim at once, and whichever workspace their claims land in, its runs
// never execute beyond its share: a claim under way counts toward every workspace's share.
func TestClaimsUnderWayAtOnceNeverTakeAWorkspaceBeyondItsShare(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := work.New(s)
		calls := &concurrency{Provider: provider.DeterministicProvider{}}
		runs := &resolver{
			flows:  map[string]platformv1.FlowDefinition{"slow@1.0.0": slowAndFast().flows["slow@1.0.0"]},
			agents: map[string]provider.Agent{"slow": {Name: "slow", Revision: "1", Instructions: "@latencyMs 300\n@respond late"}},
		}
		const share = 3
		exec, err := executor.New(executor.Options{Work: w, Resolver: runs, Provider: calls, Workers: 8, WorkspaceShare: share,
			Lease: time.Minute, Poll: time.Hour, Authorize: func(context.Context, work.Context) error { return nil }})
		g.Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		var ids []string
		for range 4 * share {
			_, run, _, err := w.Submit(ctx, work.Submission{Context: ctxA, Type: "t", Title: "t", Instruction: "i", FlowName: "slow",
				FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}})
			g.Expect(err).NotTo(HaveOccurred())
			ids = append(ids, run.ID)
		}
		stopped := make(chan struct{})
		go func() { defer close(stopped); exec.Run(ctx) }()
		defer func() { cancel(); <-stopped }()
		for range 8 {
			exec.Wake()
		}
		for _, id := range ids {
			g.Eventually(func() string {
				run, err := w.Run(ctx, ctxA.WorkspaceID, id)
				g.Expect(err).NotTo(HaveOccurred())
				return run.State
			}).WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal(work.StateCompleted))
		}
		calls.mu.Lock()
		defer calls.mu.Unlock()
		g.Expect(calls.most).To(Equal(share), "the most agent calls of the workspace under way at once")
	})
}

// twoWorkersOneAWorkspace is an executor of two workers, one of which a workspace may hold, whose
// poll comes long after the test: only wake-ups and reservations move runs.
func twoWorkersOneAWorkspace(t *testing.T, w *work.Store, flows *resolver) *executor.Executor {
	t.Helper()
	exec, err := executor.New(executor.Options{Work: w, Resolver: flows,
		Provider: provider.DeterministicProvider{}, Workers: 2, WorkspaceShare: 1, Lease: time.Minute, Poll: time.Hour,
		Authorize: func(context.Context, work.Context) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// A submission given a reserved worker (as the Work API submits) starts at once without a claim,
// and counts toward its workspace's share like a claimed run: once a workspace holds its share no
// worker is reserved for it, while another workspace still gets one and its run completes; a
// reservation given back (a submission that failed) frees its worker.
func TestAReservedWorkerCountsTowardItsWorkspaceShare(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := work.New(s)
		// Only a reservation can start a run in time.
		exec := twoWorkersOneAWorkspace(t, w, slowAndFast())
		_, ok := exec.Reserve(ctxA.WorkspaceID)
		g.Expect(ok).To(BeFalse(), "a worker was reserved before the executor runs")
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); exec.Run(ctx) }()
		defer func() { cancel(); <-stopped }()

		submitReserved := func(c work.Context, flow string) string {
			var r work.Reservation
			g.Eventually(func() bool { r, ok = exec.Reserve(c.WorkspaceID); return ok }).Should(BeTrue(), "no worker reserved for %s", c.WorkspaceID)
			lease := r.Lease()
			_, run, _, err := w.Submit(ctx, work.Submission{Context: c, Type: "t", Title: "t", Instruction: "i", FlowName: flow,
				FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}, Lease: &lease})
			g.Expect(err).NotTo(HaveOccurred())
			r.Start(run)
			return run.ID
		}
		state := func(c work.Context, id string) func() string {
			return func() string {
				run, err := w.Run(ctx, c.WorkspaceID, id)
				g.Expect(err).NotTo(HaveOccurred())
				return run.State
			}
		}
		ctxB := work.Context{TenantID: "t1", WorkspaceID: "ws-b", Namespace: "b", PrincipalID: "p2"}

		slow := submitReserved(ctxA, "slow")
		g.Eventually(state(ctxA, slow)).Should(Equal(work.StateRunning))
		_, ok = exec.Reserve(ctxA.WorkspaceID)
		g.Expect(ok).To(BeFalse(), "a second worker was reserved for a workspace that holds its share")

		// A reservation given back frees its worker for the next. (The other worker may be looking
		// in the store for a moment, holding its slot: the executor's first look.)
		var r work.Reservation
		g.Eventually(func() (ok bool) { r, ok = exec.Reserve(ctxB.WorkspaceID); return ok }).Should(BeTrue(),
			"no worker reserved for another workspace while one holds its share")
		r.Cancel()
		began := time.Now()
		fast := submitReserved(ctxB, "fast")
		g.Eventually(state(ctxB, fast)).WithTimeout(10 * time.Second).Should(Equal(work.StateCompleted))
		g.Expect(time.Since(began)).To(BeNumerically("<", 2*time.Second), "the other workspace's run waited for the slow call")
		g.Expect(state(ctxA, slow)()).To(Equal(work.StateRunning), "the slow run is still executing")
	})
}

// A submitter that waits for its run (ReserveWithin) while its workspace holds its share is handed
// the worker of the workspace's next run to end, but only once the store has no queued run for
// that worker to claim: a queued run is never passed over by submitters that wait. A waiter that
// gives up takes no worker with it.
func TestAWaitingSubmitterIsHandedAWorkerOnlyOnceNoQueuedRunWantsIt(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := work.New(s)
		flows := slowAndFast()
		flows.agents["slow"] = provider.Agent{Name: "slow", Revision: "1", Instructions: "@latencyMs 700\n@respond late"}
		// Only wake-ups move runs.
		exec := twoWorkersOneAWorkspace(t, w, flows)
		// Before the executor runs, nobody waits for a worker that cannot come.
		began := time.Now()
		_, ok := exec.ReserveWithin(context.Background(), ctxA.WorkspaceID, 5*time.Second)
		g.Expect(ok).To(BeFalse())
		g.Expect(time.Since(began)).To(BeNumerically("<", time.Second), "a waiter waited for an executor that does not run")
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); exec.Run(ctx) }()
		defer func() { cancel(); <-stopped }()

		submit := func(r work.Reservation, flow string) string {
			sub := work.Submission{Context: ctxA, Type: "t", Title: "t", Instruction: "i", FlowName: flow,
				FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}}
			if r == nil {
				_, run, _, err := w.Submit(ctx, sub)
				g.Expect(err).NotTo(HaveOccurred())
				exec.Wake()
				return run.ID
			}
			lease := r.Lease()
			sub.Lease = &lease
			_, run, _, err := w.Submit(ctx, sub)
			g.Expect(err).NotTo(HaveOccurred())
			r.Start(run)
			return run.ID
		}
		state := func(id string) string {
			run, err := w.Run(ctx, ctxA.WorkspaceID, id)
			g.Expect(err).NotTo(HaveOccurred())
			return run.State
		}

		var first work.Reservation
		g.Eventually(func() (ok bool) { first, ok = exec.Reserve(ctxA.WorkspaceID); return ok }).Should(BeTrue())
		running := submit(first, "slow")
		queued := submit(nil, "slow")
		g.Consistently(func() string { return state(queued) }).WithTimeout(200*time.Millisecond).Should(Equal(work.StatePending),
			"the queued run started beyond its workspace's share")

		// A waiter whose client went away takes no worker.
		gone, goneCancel := context.WithCancel(ctx)
		goneCancel()
		_, ok = exec.ReserveWithin(gone, ctxA.WorkspaceID, 5*time.Second)
		g.Expect(ok).To(BeFalse(), "a worker was handed to a waiter that gave up")

		type handed struct {
			r          work.Reservation
			ok         bool
			queuedWas  string
			runningWas string
		}
		got := make(chan handed, 1)
		go func() {
			r, ok := exec.ReserveWithin(ctx, ctxA.WorkspaceID, 10*time.Second)
			got <- handed{r, ok, state(queued), state(running)}
		}()
		var h handed
		g.Eventually(got).WithTimeout(10 * time.Second).Should(Receive(&h))
		g.Expect(h.ok).To(BeTrue(), "the waiter was handed no worker")
		started := false
		defer func() {
			if !started {
				h.r.Cancel() // the executor stops only once every worker handed over is back
			}
		}()
		g.Expect(h.runningWas).To(Equal(work.StateCompleted))
		g.Expect(h.queuedWas).To(Equal(work.StateCompleted), "the waiter was handed the worker the queued run waited for")

		// The worker handed over executes the waiter's run, within the workspace's share.
		started = true
		handedRun := submit(h.r, "fast")
		g.Eventually(func() string { return state(handedRun) }).WithTimeout(10 * time.Second).Should(Equal(work.StateCompleted))
		var again work.Reservation
		g.Eventually(func() (ok bool) { again, ok = exec.Reserve(ctxA.WorkspaceID); return ok }).Should(BeTrue(),
			"the workspace's share was not given back")
		again.Cancel()
	})
}

// TestAWorkerThatFoundNoRunnableRunLooksInTheStoreAgainOnlyOnceOneMayHaveBecomeRunnable: a worker
// freed while a submitter waits goes to it without a trip to the store when the last look found
// no runnable run and no run became runnable since; once one may have, it looks first.
func TestAWorkerThatFoundNoRunnableRunLooksInTheStoreAgainOnlyOnceOneMayHaveBecomeRunnable(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := work.New(s)
		exec := twoWorkersOneAWorkspace(t, w, slowAndFast())
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); exec.Run(ctx) }()
		// The executor stops once every worker it handed over is back: a failed test gives back
		// the one it holds and those handed to the waiters it did not hear from.
		var (
			held    work.Reservation
			waiting []chan work.Reservation
		)
		defer func() {
			cancel()
			if held != nil {
				held.Cancel()
			}
			for _, got := range waiting {
				if r := <-got; r != nil {
					r.Cancel()
				}
			}
			<-stopped
		}()

		// handOver frees the worker held by held while a submitter waits for one, and returns the
		// worker handed over and the statements the store ran meanwhile.
		handOver := func() int64 {
			got := make(chan work.Reservation, 1)
			waiting = append(waiting, got)
			go func() {
				r, ok := exec.ReserveWithin(ctx, ctxA.WorkspaceID, 10*time.Second)
				if !ok {
					r = nil
				}
				got <- r
			}()
			// The submitter waits: its workspace's share is held.
			g.Consistently(got).WithTimeout(50 * time.Millisecond).ShouldNot(Receive())
			before := s.Counts()
			held.Cancel()
			held = nil
			g.Eventually(got).WithTimeout(10 * time.Second).Should(Receive(&held))
			waiting = waiting[:len(waiting)-1]
			g.Expect(held).NotTo(BeNil(), "the waiter was handed no worker")
			return s.Counts().Sub(before).Statements
		}
		g.Eventually(func() (ok bool) { held, ok = exec.Reserve(ctxA.WorkspaceID); return ok }).Should(BeTrue())
		// The executor's first look found the store empty, and nothing became runnable since
		// (the expiry of pending actions, once a second, may run meanwhile: a few tries).
		g.Eventually(handOver).WithTimeout(10*time.Second).Should(BeZero(), "a worker handed over looked in the store, which had no runnable run")

		// A run queued meanwhile: the next worker freed looks, and takes it, before any waiter.
		sub := work.Submission{Context: ctxA, Type: "t", Title: "t", Instruction: "i", FlowName: "fast",
			FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}}
		_, queued, _, err := w.Submit(ctx, sub)
		g.Expect(err).NotTo(HaveOccurred())
		exec.Wake()
		handOver()
		run, err := w.Run(ctx, ctxA.WorkspaceID, queued.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(run.State).To(Equal(work.StateCompleted), "the worker went to the waiter before the queued run")
		held.Cancel()
		held = nil
	})
}
