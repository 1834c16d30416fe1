import { describe, expect, it } from "vitest";
import type { Activity, DashboardView, Interaction } from "../shared/types";
import { bytesToBase64, composerState, dashboardLayout, foldSteps, followUpNote, sendShortcut, submission } from "./presentation";
import { waitingLine, waitsFor } from "../shared/format";

const entry = (name: string, role: "Primary" | "Featured" | "Standard", order = 0) => ({
  namespace: "default",
  name,
  role,
  order,
  state: "available",
  entry: { name, namespace: "default", workspace: "w", ownerWorkspaceId: "id", presentation: {} },
});

describe("rule 4: the Dashboard order", () => {
  it("puts the one Primary Entry first, then Featured, then Standard, each by order", () => {
    const view: DashboardView = {
      name: "home",
      isDefault: true,
      entries: [entry("s2", "Standard", 2), entry("f", "Featured"), entry("s1", "Standard", 1), entry("p", "Primary")],
    };
    const layout = dashboardLayout(view);
    expect(layout.primary?.name).toBe("p");
    expect(layout.featured.map((e) => e.name)).toEqual(["f"]);
    expect(layout.standard.map((e) => e.name)).toEqual(["s1", "s2"]);
  });
  it("has no Primary when none is referenced, and leaves out references without a published Entry", () => {
    const missing = { ...entry("gone", "Featured"), entry: undefined, state: "unavailable" };
    const layout = dashboardLayout({ name: "d", isDefault: false, entries: [missing, entry("s", "Standard")] });
    expect(layout.primary).toBeUndefined();
    expect(layout.featured).toEqual([]);
    expect(layout.standard.map((e) => e.name)).toEqual(["s"]);
  });
});

describe("rule 16: the generic renderer's submission", () => {
  const fields = [
    { name: "request", role: "PrimaryInput" as const, type: "MultilineText" as const, label: "Request" },
    { name: "level", type: "Choice" as const, choices: [{ value: "a" }, { value: "b" }], default: "a" },
    { name: "count", type: "Number" as const },
    { name: "urgent", type: "Boolean" as const },
  ];
  it("types each field's value as the Entry declares it", () => {
    const s = submission(fields, { request: "Sales\nby region", level: "b", count: "3", urgent: "true" });
    expect(s.errors).toEqual({});
    expect(s.input).toEqual({ request: "Sales\nby region", level: "b", count: 3, urgent: true });
  });
  it("refuses an empty primary input and a number that is not one, naming the field", () => {
    const s = submission(fields, { request: "  ", count: "many" });
    expect(s.errors.request).toBe("Request is required");
    expect(s.errors.count).toBe("count must be a number");
  });
  it("sends with Ctrl or Command + Enter, never with Enter alone", () => {
    expect(sendShortcut({ key: "Enter", ctrlKey: true, metaKey: false })).toBe(true);
    expect(sendShortcut({ key: "Enter", ctrlKey: false, metaKey: true })).toBe(true);
    expect(sendShortcut({ key: "Enter", ctrlKey: false, metaKey: false })).toBe(false);
  });
});

describe("rule 9: a blocking question disables the composer with an explanation", () => {
  const i = (over: Partial<Interaction>): Interaction => ({
    id: "i", entry: { namespace: "default", name: "e" }, title: "t", state: "Active", blocked: false, version: 1, createdAt: "", updatedAt: "", ...over,
  });
  it("explains a blocked conversation and a closed one, and leaves a working one open", () => {
    expect(composerState(i({ blocked: true }), false)).toEqual({ disabled: true, reason: expect.stringContaining("Answer the question") });
    expect(composerState(i({ blocked: true }), false, "administrator")).toEqual({ disabled: true, reason: expect.stringContaining("waits for an administrator") });
    expect(composerState(i({ state: "Closed" }), false).disabled).toBe(true);
    expect(composerState(i({ state: "Active" }), false)).toEqual({ disabled: false });
    expect(composerState(i({ state: "Idle" }), false)).toEqual({ disabled: false });
  });
});

describe("a blocked composer says whom the work waits for, as its reader sees the question", () => {
  const i = (over: Partial<Interaction>): Interaction => ({
    id: "i", entry: { namespace: "default", name: "e" }, title: "t", state: "Active", blocked: true, version: 1, createdAt: "", updatedAt: "", ...over,
  });
  const q = (over: { mayAnswer?: boolean; escalatedAt?: string }) => [over];
  const escalatedAt = "2026-05-01T12:00:00Z";
  const cases: Record<string, { question: { mayAnswer?: boolean; escalatedAt?: string }; says: RegExp; never?: RegExp }> = {
    "whoever may answer is asked to": { question: { mayAnswer: true }, says: /^Answer the question above/ },
    "an Admin of an escalated question is asked to": { question: { mayAnswer: true, escalatedAt }, says: /^Answer the question above/ },
    "a Member of an escalated question is told it waits for an administrator": { question: { mayAnswer: false, escalatedAt }, says: /waits for an administrator of this workspace/ },
    "a Viewer of a question not escalated is told it waits for someone who may answer, not an administrator": {
      question: { mayAnswer: false },
      says: /waits for someone in this workspace who may answer the question above: you may follow it, but not answer/,
      never: /administrator/,
    },
    "a Viewer of an escalated question is told it waits for an administrator": { question: { mayAnswer: false, escalatedAt }, says: /waits for an administrator/ },
  };
  for (const [name, c] of Object.entries(cases)) {
    it(name, () => {
      const who = waitsFor(q(c.question));
      const state = composerState(i({}), false, who);
      expect(state.disabled).toBe(true);
      expect(state.reason).toMatch(c.says);
      if (c.never) expect(state.reason).not.toMatch(c.never);
      // The conversation's and the Task's activity line say the same.
      const line = waitingLine(who);
      if (c.never) expect(line).not.toMatch(c.never);
      expect(line).toBe(
        c.question.mayAnswer !== false ? "Waiting for your answer" : c.question.escalatedAt ? "Waiting for an administrator's answer" : "Waiting for someone in this workspace who may answer",
      );
    });
  }
  it("is not blocked by what the reader cannot answer once the conversation is closed or not blocked", () => {
    expect(composerState(i({ blocked: false }), false, "others")).toEqual({ disabled: false });
    expect(composerState(i({ state: "Closed" }), false, "administrator").reason).toMatch(/closed/);
  });
  it("never lets a reader who may only follow the work send to it, and says so", () => {
    expect(composerState(i({ state: "Idle", blocked: false }), false, "you", false)).toEqual({ disabled: true, reason: expect.stringContaining("follow this conversation, not send to it") });
    expect(composerState(i({ blocked: true }), false, "others", false).reason).toMatch(/waits for someone in this workspace who may answer/);
    expect(composerState(i({ state: "Closed", blocked: false }), false, "you", false).reason).toMatch(/closed/);
    expect(composerState(i({ state: "Idle", blocked: false }), false, "you", true)).toEqual({ disabled: false });
  });
});

describe("the follow-up policy in the composer", () => {
  const i = (over: Partial<Interaction>): Interaction => ({
    id: "i", entry: { namespace: "default", name: "e" }, title: "t", state: "Active", blocked: false, version: 1, createdAt: "", updatedAt: "", ...over,
  });
  it("says what sending now does while work is in progress, for each policy", () => {
    expect(followUpNote(i({}), true)).toContain("waits and starts when it ends");
    expect(followUpNote(i({ followUpPolicy: "Enqueue" }), true)).toContain("waits");
    expect(followUpNote(i({ followUpPolicy: "Reject" }), true)).toContain("refused until it ends");
    expect(followUpNote(i({ followUpPolicy: "Interrupt" }), true)).toContain("stops it and starts on your message");
  });
  it("says nothing when no work is in progress or a question blocks the composer", () => {
    expect(followUpNote(i({ followUpPolicy: "Reject", state: "Idle" }), false)).toBeUndefined();
    expect(followUpNote(i({ followUpPolicy: "Interrupt", blocked: true }), true)).toBeUndefined();
  });
});

describe("rule 15: Task detail folds finished steps and keeps the current one", () => {
  const a = (seq: number, kind: Activity["kind"], phase: Activity["phase"], label: string): Activity => ({ seq, kind, phase, label, createdAt: "" });
  it("folds start/end pairs, leaves out run markers and shows the unresolved step as current", () => {
    const { finished, current } = foldSteps([
      a(1, "question", "waiting", "Which format?"),
      a(2, "question", "answered", "Which format?"),
      a(3, "run", "resumed", "resumed"),
      a(4, "turn", "started", "Planning the report"),
      a(5, "turn", "completed", "Prepared"),
      a(6, "turn", "started", "Creating the Task"),
    ]);
    expect(finished.map((s) => [s.label, s.state])).toEqual([
      ["Which format?", "finished"],
      ["Planning the report", "finished"],
    ]);
    expect(current).toMatchObject({ label: "Creating the Task", state: "current" });
  });
  it("has no current step once everything ended, and marks a failed run's open step failed", () => {
    expect(foldSteps([a(1, "turn", "started", "x"), a(2, "turn", "completed", "y"), a(3, "run", "completed", "Completed")]).current).toBeUndefined();
    const failed = foldSteps([a(1, "turn", "started", "x"), a(2, "run", "failed", "Failed")]);
    expect(failed.current).toBeUndefined();
    expect(failed.finished[0].state).toBe("failed");
  });
  it("keeps a step that asked to go on past a budget as one step, finished with its completed run", () => {
    const { finished, current } = foldSteps([
      a(1, "turn", "started", "Preparing"),
      a(2, "turn", "completed", "Prepared"),
      a(3, "turn", "started", "Preparing"),
      a(4, "question", "waiting", "Continue past the budget of Agent tight?"),
      a(5, "question", "answered", "Continue past the budget of Agent tight?"),
      a(6, "turn", "started", "Preparing"),
      a(7, "turn", "completed", "Prepared"),
      a(8, "run", "completed", "Completed"),
    ]);
    expect(current).toBeUndefined();
    expect(finished.map((s) => [s.label, s.state])).toEqual([
      ["Preparing", "finished"],
      ["Preparing", "finished"],
      ["Continue past the budget of Agent tight?", "finished"],
    ]);
  });
  it("shows what a question's expiry did: the reminder, the escalation, the fallback, and an approved call that was refused", () => {
    const { finished, current } = foldSteps([
      a(1, "question", "waiting", "Which level?"),
      a(2, "question", "reminded", "Reminder: nobody answered yet"),
      a(3, "question", "escalated", "Nobody answered in time: the question now waits for the workspace's Owners and Admins"),
      a(4, "question", "expired", "Nobody answered in time: went on with the default answer (Brief)"),
      a(5, "run", "refused", "An approved tool call was not made: tool kb-echo is no longer enabled"),
    ]);
    expect(current).toBeUndefined();
    expect(finished.map((s) => [s.label, s.state])).toEqual([
      ["Which level?", "finished"],
      ["Reminder: nobody answered yet", "finished"],
      ["Nobody answered in time: the question now waits for the workspace's Owners and Admins", "finished"],
      ["Nobody answered in time: went on with the default answer (Brief)", "finished"],
      ["An approved tool call was not made: tool kb-echo is no longer enabled", "failed"],
    ]);
  });
});

describe("file answers", () => {
  it("encode bytes in standard Base64", () => {
    expect(bytesToBase64(new TextEncoder().encode("a,b\n1,2\n"))).toBe("YSxiCjEsMgo=");
  });
});
