package executor_test

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/provider/openaitest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/usage"
	"platform.dev/platform/apiserver/work"
)

// budgets is an in-memory executor.Budgets: the same limits for every call.
type budgets struct {
	mu     sync.Mutex
	limits []usage.Limit
	entry  executor.EntryRef
	// resourceNamespaces are the resource namespaces of kube namespaces; `default` for others.
	resourceNamespaces map[string]string
}

func (b *budgets) ResourceNamespace(_ context.Context, run *work.FlowRun) (string, error) {
	if rns, ok := b.resourceNamespaces[run.Namespace]; ok {
		return rns, nil
	}
	return "default", nil
}

func (b *budgets) Entry(context.Context, *work.FlowRun) (executor.EntryRef, error) {
	return b.entry, nil
}

func (b *budgets) Limits(context.Context, *work.FlowRun, executor.EntryRef, string) ([]usage.Limit, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]usage.Limit(nil), b.limits...), nil
}

// stepUsage is the usage an event of the run's history gives the step.
func stepUsage(t *testing.T, h *harness, runID, eventType, step string) *work.ModelUsage {
	t.Helper()
	events, err := h.work.Events(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Type == eventType && e.Step == step && e.Usage != nil {
			return e.Usage
		}
	}
	return nil
}

func TestEveryModelCallRecordsTheTokensTheEndpointAnsweredWithTheCostOfItsProvidersPriceTable(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		srv := openaitest.New()
		defer srv.Close()
		srv.APIKey = "sk-managed"
		srv.Usage = func(openaitest.ChatRequest) (int64, int64) { return 120, 80 }
		h := managedHarness(t, s, srv, platformv1.ModelPricing{Currency: "USD", Models: []platformv1.ModelPrice{
			{ModelID: "gpt-test", InputPerMillion: "2.50", OutputPerMillion: "10.00"}}})
		b := &budgets{entry: executor.EntryRef{ResourceNamespace: "default", Name: "ask"}}
		opts := h.options()
		opts.Budgets = b
		h.build(t, opts)

		run, _ := h.submit(t, "assist", assistantFlow())
		h.settle(t)
		g.Expect(h.read(t, run.ID).State).To(Equal(work.StateCompleted))

		// 120 input tokens at 2.50 and 80 output tokens at 10.00 per million: 0.0003 + 0.0008.
		want := &work.ModelUsage{ModelCalls: 1, InputTokens: 120, OutputTokens: 80, TotalTokens: 200,
			Cost: &usage.Amount{Amount: "0.001100", Currency: "USD"}, Costs: []usage.Amount{{Amount: "0.001100", Currency: "USD"}}}
		g.Expect(h.work.RunUsage(context.Background(), run.ID)).To(Equal(want))
		g.Expect(stepUsage(t, h, run.ID, work.EventStepCompleted, "ask")).To(Equal(want), "the step's completion carries its usage")
		rows, _, err := h.work.UsageReport(context.Background(), ctxA.WorkspaceID, "2000-01-01", "2999-12-31",
			[]string{work.GroupByAgent, work.GroupByEntry, work.GroupByModel})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rows).To(HaveLen(1))
		g.Expect(rows[0]).To(Equal(work.UsageRow{Agent: "assistant", Entry: "ask", Model: "gpt-test",
			Totals: usage.Totals{ModelCalls: 1, InputTokens: 120, OutputTokens: 80, CostMicros: 1100, Currency: "USD"}}))
	})
}

func TestTheDeterministicModelReportsATokenPerFourCharactersItReadAndWrote(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		// "@respond Twelve chars" answers "Twelve chars" (12 characters: 3 tokens); it reads its
		// instructions (21 characters) and the message.
		h.resolver.agents["counter"] = provider.Agent{Name: "counter", Revision: "1", Instructions: "@respond Twelve chars"}
		opts := h.options()
		opts.DeterministicPrice = &usage.Price{Currency: "EUR", InputPerMillionMicros: 1_000_000, OutputPerMillionMicros: 2_000_000}
		h.build(t, opts)
		run, _ := h.submit(t, "count", orchestration([]platformv1.FlowStep{input, agentStep("count", "counter"), output},
			edge("in", "count"), edge("count", "out")))
		h.settle(t)
		g.Expect(h.read(t, run.ID).State).To(Equal(work.StateCompleted))

		in := provider.DeterministicTokens("@respond Twelve chars", `{"instruction":"Prepare the quarterly report","title":"Quarterly","type":"report"}`)
		g.Expect(in).To(BeNumerically(">", 20))
		used, err := h.work.RunUsage(context.Background(), run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(used.ModelCalls).To(Equal(int64(1)))
		g.Expect(used.InputTokens).To(Equal(in))
		g.Expect(used.OutputTokens).To(Equal(int64(3)))
		// The instance's price: a micro per input token and two per output token.
		g.Expect(used.Cost).To(Equal(&usage.Amount{Amount: usage.FormatMicros(in + 6), Currency: "EUR"}))
	})
}

// budgetFlow calls the writer twice: the first call crosses the budget, the second would start
// past it.
func budgetFlow() platformv1.FlowDefinition {
	return orchestration([]platformv1.FlowStep{input, agentStep("draft", "writer"), agentStep("polish", "writer"), output},
		edge("in", "draft"), edge("draft", "polish"), edge("polish", "out"))
}

func TestABudgetCrossedByARunningAgentPausesTheRunAtItsNextModelCallAndResumesWhenApproved(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		b := &budgets{limits: []usage.Limit{{Scope: usage.ScopeAgent, Name: "writer", Period: platformv1.DayBudget, Tokens: 10}}}
		opts := h.options()
		opts.Budgets = b
		h.build(t, opts)

		run, token := h.submit(t, "budget", budgetFlow())
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateActionRequired), run.Reason)
		g.Expect(run.CurrentStep).To(Equal("polish"), "the first call ran; the next one waits")
		action, err := h.work.OpenPendingAction(context.Background(), run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(action.Kind).To(Equal(work.KindApproval))
		g.Expect(action.Prompt).To(HavePrefix("Continue past the budget of Agent writer (10 tokens a day)?"))
		g.Expect(action.Budget).NotTo(BeNil())
		g.Expect(action.Budget.Scope).To(Equal(usage.ScopeAgent))
		g.Expect(action.Budget.LimitTokens).To(Equal(int64(10)))
		g.Expect(action.Budget.UsedTokens).To(BeNumerically(">=", 10))
		used, _ := h.work.RunUsage(context.Background(), run.ID)
		g.Expect(used.ModelCalls).To(Equal(int64(1)), "no call past the budget before the approval")

		h.answer(t, run, token, work.Answer{Approved: ptr(true)})
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		used, _ = h.work.RunUsage(context.Background(), run.ID)
		g.Expect(used.ModelCalls).To(Equal(int64(2)))

		// The approval holds for this run's period only: another run asks again.
		other, _ := h.submit(t, "budget", budgetFlow())
		h.settle(t)
		g.Expect(h.read(t, other.ID).State).To(Equal(work.StateActionRequired))
		g.Expect(h.read(t, other.ID).CurrentStep).To(Equal("draft"))
	})
}

func TestContinuingPastABudgetRejectedFailsTheStepWithTheReason(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		b := &budgets{limits: []usage.Limit{{Scope: usage.ScopeWorkspace, Name: "a", Period: platformv1.MonthBudget, Tokens: 1}}}
		opts := h.options()
		opts.Budgets = b
		h.build(t, opts)

		run, token := h.submit(t, "budget", budgetFlow())
		h.settle(t)
		g.Expect(h.read(t, run.ID).CurrentStep).To(Equal("polish"))
		action, _ := h.work.OpenPendingAction(context.Background(), run.ID)
		_, _, _, err := h.work.Respond(context.Background(), work.Response{WorkspaceID: h.wctx.WorkspaceID, RunID: run.ID,
			ActionID: action.ID, Token: token, PrincipalID: "p1", Answer: work.Answer{Approved: ptr(false), Reason: "the month is spent"}})
		g.Expect(err).NotTo(HaveOccurred())
		h.settle(t)
		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateFailed))
		g.Expect(run.Reason).To(Equal(`Agent step "polish": the budget of Workspace a (1 token a month) is used up and a person declined to continue past it: the month is spent`))
	})
}

// TestAPacksAgentIsNamedWithItsResourceNamespaceApartFromTheWorkspacesAgentOfTheSameName: an agent
// a Pack installed and the workspace's own agent of the same name are two agents: their usage is
// two rows, the Pack's named publisher.name/agent as its Entries are, and a budget of one does not
// count the other's calls.
func TestAPacksAgentIsNamedWithItsResourceNamespaceApartFromTheWorkspacesAgentOfTheSameName(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		h := newHarness(t, s)
		h.resolver.agents["writer"] = provider.Agent{Name: "writer", Revision: "1", Instructions: "@respond Noted."}
		packNamespace := "a-acme-kit-0123456789"
		b := &budgets{resourceNamespaces: map[string]string{packNamespace: "acme.kit"},
			limits: []usage.Limit{{Scope: usage.ScopeAgent, Name: "writer", Period: platformv1.DayBudget, Tokens: 1_000_000}}}
		opts := h.options()
		opts.Budgets = b
		h.build(t, opts)
		flow := orchestration([]platformv1.FlowStep{input, agentStep("write", "writer"), output}, edge("in", "write"), edge("write", "out"))

		own, _ := h.submit(t, "note", flow)
		h.wctx.Namespace = packNamespace
		packs, _ := h.submit(t, "note", flow)
		h.settle(t)
		g.Expect(h.read(t, own.ID).State).To(Equal(work.StateCompleted))
		g.Expect(h.read(t, packs.ID).State).To(Equal(work.StateCompleted))

		rows, _, err := h.work.UsageReport(context.Background(), ctxA.WorkspaceID, "2000-01-01", "2999-12-31", []string{work.GroupByAgent})
		g.Expect(err).NotTo(HaveOccurred())
		agents := map[string]int64{}
		for _, r := range rows {
			agents[r.Agent] = r.ModelCalls
		}
		g.Expect(agents).To(Equal(map[string]int64{"writer": 1, "acme.kit/writer": 1}), "two agents, two rows")
		own1, err := h.work.RunUsage(context.Background(), own.ID)
		g.Expect(err).NotTo(HaveOccurred())
		tokens, _, err := h.work.UsedSince(context.Background(), ctxA.WorkspaceID, usage.ScopeAgent, "writer", "2000-01-01", "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tokens).To(Equal(own1.TotalTokens), "the workspace's writer's budget counts its own calls only")
	})
}
