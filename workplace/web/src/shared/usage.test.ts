import { describe, expect, it } from "vitest";
import { approvalChoices, isBudgetApproval } from "./questions";
import { addMoney, budgetLine, mergeRows, byDayNewestFirst, byTokens, costText, dayLabel, lastDays, money, rangeProblem, totals, usageSentence, type UsageRow } from "./usage";

// The contract's fixture: what GET /api/workspaces/{workspace}/usage answers.
const days: UsageRow[] = [
  { day: "2026-11-26", modelCalls: 2, inputTokens: 100, outputTokens: 50, totalTokens: 150, cost: { amount: "0.000300", currency: "USD" } },
  { day: "2026-11-27", modelCalls: 3, inputTokens: 120, outputTokens: 80, totalTokens: 200, cost: { amount: "0.000400", currency: "USD" } },
];

describe("costs keep their currency and never drift", () => {
  it("says a cost with as many decimals as a fraction of a cent needs, and at least two", () => {
    expect(money({ amount: "0.000400", currency: "USD" })).toBe("$0.0004");
    expect(money({ amount: "1.2", currency: "EUR" })).toBe("€1.20");
    expect(money({ amount: "12345.5", currency: "USD" })).toBe("$12,345.50");
  });
  it("writes a currency the browser does not know after the amount", () => {
    expect(money({ amount: "0.5", currency: "CREDITS" })).toBe("0.50 CREDITS");
  });
  it("sums decimal amounts exactly, per currency", () => {
    // 0.1 + 0.2 is 0.30000000000000004 in floats.
    expect(addMoney([{ amount: "0.1", currency: "USD" }, { amount: "0.2", currency: "USD" }])).toEqual([{ amount: "0.3", currency: "USD" }]);
    expect(addMoney([{ amount: "0.000300", currency: "USD" }, { amount: "1.5", currency: "EUR" }, { amount: "0.000400", currency: "USD" }, undefined])).toEqual([
      { amount: "0.000700", currency: "USD" },
      { amount: "1.5", currency: "EUR" },
    ]);
    expect(costText(addMoney([{ amount: "1", currency: "USD" }, { amount: "0.3", currency: "EUR" }]))).toBe("$1.00 and €0.30");
    expect(costText([])).toBe("no price known");
  });
});

describe("the usage report reads as a person reads it", () => {
  it("totals the rows: calls, tokens and cost", () => {
    expect(totals(days)).toEqual({ modelCalls: 5, inputTokens: 220, outputTokens: 130, totalTokens: 350, costs: [{ amount: "0.000700", currency: "USD" }] });
  });
  it("lists days newest first and agents by the tokens they used", () => {
    expect([...days].sort(byDayNewestFirst).map((r) => r.day)).toEqual(["2026-11-27", "2026-11-26"]);
    const agents: UsageRow[] = [
      { agent: "reviewer", modelCalls: 1, inputTokens: 5, outputTokens: 5, totalTokens: 10 },
      { agent: "writer", modelCalls: 3, inputTokens: 120, outputTokens: 80, totalTokens: 200 },
    ];
    expect(agents.sort(byTokens).map((r) => r.agent)).toEqual(["writer", "reviewer"]);
  });
  it("shows a day priced in two currencies as one line with both costs", () => {
    const rows: UsageRow[] = [
      { day: "2026-11-27", modelCalls: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15, cost: { amount: "0.01", currency: "USD" } },
      { day: "2026-11-27", modelCalls: 2, inputTokens: 20, outputTokens: 10, totalTokens: 30, cost: { amount: "0.02", currency: "EUR" } },
      { day: "2026-11-26", modelCalls: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 },
    ];
    expect(mergeRows(rows, (r) => r.day ?? "")).toEqual([
      { day: "2026-11-27", modelCalls: 3, inputTokens: 30, outputTokens: 15, totalTokens: 45, costs: [{ amount: "0.01", currency: "USD" }, { amount: "0.02", currency: "EUR" }] },
      { day: "2026-11-26", modelCalls: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2, costs: [] },
    ]);
  });
  it("says a UTC day with its weekday, whatever the viewer's zone", () => {
    expect(dayLabel("2026-11-27")).toBe("Fri, Nov 27, 2026");
  });
});

describe("a day range is checked before the API is asked", () => {
  it("takes the last n days, today included, as UTC days", () => {
    const now = new Date("2026-11-27T23:30:00Z");
    expect(lastDays(1, now)).toEqual({ from: "2026-11-27", to: "2026-11-27" });
    expect(lastDays(7, now)).toEqual({ from: "2026-11-21", to: "2026-11-27" });
  });
  it("refuses a missing day, a reversed range and one longer than the route reads", () => {
    expect(rangeProblem("2026-11-01", "2026-11-27")).toBeUndefined();
    expect(rangeProblem("", "2026-11-27")).toMatch(/first day/);
    expect(rangeProblem("2026-02-30", "2026-03-01")).toMatch(/first day/);
    expect(rangeProblem("2026-11-28", "2026-11-27")).toMatch(/must not be after/);
    expect(rangeProblem("2025-01-01", "2026-11-27")).toMatch(/at most 366 days/);
    expect(rangeProblem("2025-11-27", "2026-11-27")).toBeUndefined();
  });
});

describe("a run's usage in plain words", () => {
  it("says calls, tokens read and written and the cost, without provider names or raw fields", () => {
    expect(usageSentence({ modelCalls: 3, inputTokens: 120, outputTokens: 80, totalTokens: 200, cost: { amount: "0.000400", currency: "USD" } })).toBe(
      "3 model calls used 200 tokens (120 read, 80 written), costing $0.0004.",
    );
    expect(usageSentence({ modelCalls: 1, inputTokens: 1, outputTokens: 0, totalTokens: 1 })).toBe(
      "1 model call used 1 token (1 read, 0 written) (no price is known for the models called).",
    );
    expect(usageSentence({ modelCalls: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0 })).toBe("No model was called yet.");
    // Calls priced in two currencies cost both, never one of them alone.
    expect(
      usageSentence({
        modelCalls: 2, inputTokens: 10, outputTokens: 4, totalTokens: 14, cost: { amount: "0.30", currency: "EUR" },
        costs: [{ amount: "0.30", currency: "EUR" }, { amount: "1.20", currency: "USD" }],
      }),
    ).toBe("2 model calls used 14 tokens (10 read, 4 written), costing €0.30 and $1.20.");
  });
});

describe("a budget says how much of it is used", () => {
  it("says each declared limit's use and marks an exceeded budget", () => {
    const line = budgetLine({
      scope: "Agent",
      name: "writer",
      period: "Day",
      periodStart: "2026-11-27T00:00:00Z",
      limitTokens: 1000,
      limitCost: { amount: "1.00", currency: "USD" },
      usedTokens: 1200,
      usedCost: { amount: "0.25", currency: "USD" },
      exceeded: true,
    });
    expect(line.title).toBe("Agent writer");
    expect(line.period).toBe("Per day; used today (UTC)");
    expect(line.limits).toEqual([
      { what: "tokens", used: "1,200", limit: "1,000 tokens", share: 1.2 },
      { what: "cost", used: "$0.25", limit: "$1.00", share: 0.25 },
    ]);
    expect(line.state).toBe("exceeded");
  });
  it("warns near a limit and leaves out a limit that is not declared", () => {
    const line = budgetLine({ scope: "Workspace", name: "default", period: "Month", limitTokens: 1000, usedTokens: 850, exceeded: false });
    expect(line.title).toBe("The whole workspace");
    expect(line.limits.map((l) => l.what)).toEqual(["tokens"]);
    expect(line.state).toBe("near");
    expect(budgetLine({ scope: "Entry", name: "support", period: "Week", limitTokens: 1000, usedTokens: 10, exceeded: false }).state).toBe("ok");
  });
});

describe("a budget pause is an approval a person answers", () => {
  const budget = { scope: "Workspace" as const, name: "default", period: "Day", limitTokens: 100, usedTokens: 120, exceeded: true };
  it("is told apart from a tool approval, and its answers say what they do", () => {
    expect(isBudgetApproval({ kind: "approval", prompt: "Continue past the budget?", budget })).toBe(true);
    expect(isBudgetApproval({ kind: "approval", prompt: "Continue past the daily budget of agent writer? This day used 1,200 tokens." })).toBe(true);
    // A Flow's own approval step about a budget is no budget pause.
    expect(isBudgetApproval({ kind: "approval", prompt: "Approve the budget for Q3?" })).toBe(false);
    expect(isBudgetApproval({ kind: "approval", prompt: "Run search?", call: { agent: "a", tool: "t", toolName: "search", provider: "p", arguments: {}, digest: "sha256:00" } })).toBe(false);
    expect(approvalChoices({ kind: "approval", prompt: "Continue past the budget?", budget })).toMatchObject({ approve: "Approve", decline: "Decline" });
    expect(approvalChoices({ kind: "approval", prompt: "Run search?" })).toEqual({ approve: "Approve", decline: "Reject" });
  });
});
