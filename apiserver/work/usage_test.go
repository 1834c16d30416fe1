package work_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/usage"
	"platform.dev/platform/apiserver/work"
)

func TestARunPricedInTwoCurrenciesCostsBothInItsReadItsStepsAndItsTask(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		item, run, _ := submit(t, w)
		claimed, err := w.Claim(ctx, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claimed.ID).To(Equal(run.ID))
		// Two agents of one run whose providers price in dollars and euros, the euro call last,
		// and an unpriced call.
		_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{State: work.StateRunning, Usage: []work.ModelCall{
			{Step: "draft", Attempt: 1, Agent: "writer", Model: "gpt-a", InputTokens: 100, OutputTokens: 10, CostMicros: 1000, Currency: "USD"},
			{Step: "polish", Attempt: 1, Agent: "editor", Model: "gpt-b", InputTokens: 50, OutputTokens: 5, CostMicros: 300, Currency: "USD"},
			{Step: "polish", Attempt: 1, Agent: "editor", Model: "local", InputTokens: 7, OutputTokens: 3},
			{Step: "polish", Attempt: 1, Agent: "translator", Model: "mistral", InputTokens: 20, OutputTokens: 2, CostMicros: 500, Currency: "EUR"},
		}})
		g.Expect(err).NotTo(HaveOccurred())

		both := []usage.Amount{{Amount: "0.000500", Currency: "EUR"}, {Amount: "0.001300", Currency: "USD"}}
		want := &work.ModelUsage{ModelCalls: 4, InputTokens: 177, OutputTokens: 20, TotalTokens: 197,
			Cost: &usage.Amount{Amount: "0.000500", Currency: "EUR"}, Costs: both}
		g.Expect(w.RunUsage(ctx, run.ID)).To(Equal(want), "cost stays the latest priced call's currency; costs has each")
		tasks, err := w.TasksUsage(ctx, wsA.WorkspaceID, item.WorkTaskID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tasks[item.WorkTaskID]).To(Equal(want), "a Task's sum never adds euros to dollars")
		steps, err := w.StepsUsage(ctx, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(steps["draft"].Costs).To(Equal([]usage.Amount{{Amount: "0.001000", Currency: "USD"}}))
		g.Expect(steps["polish"].Costs).To(Equal([]usage.Amount{{Amount: "0.000500", Currency: "EUR"}, {Amount: "0.000300", Currency: "USD"}}))
		g.Expect(steps["polish"].Cost).To(Equal(&usage.Amount{Amount: "0.000500", Currency: "EUR"}))
	})
}
