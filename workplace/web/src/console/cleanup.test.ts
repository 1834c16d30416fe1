import { describe, expect, it } from "vitest";
import { keyOf, ordered, retained, runCleanup, summary, type CleanupItem } from "./cleanup";

const item = (kind: CleanupItem["kind"], id: string): CleanupItem => ({ kind, id, label: id });

describe("rule 20: the cleanup's composition", () => {
  it("deletes Runs (Tasks first), then Entries, then Flows, then Agents, whatever the order of selection", () => {
    const order = ordered([item("agent", "a"), item("flow", "f"), item("entry", "e"), item("run", "r"), item("task", "t")]).map((i) => i.kind);
    expect(order).toEqual(["task", "run", "entry", "flow", "agent"]);
  });

  it("goes on after a failed delete, keeps the failed selection and reports partial completion without rollback", async () => {
    const calls: string[] = [];
    const outcomes = await runCleanup([item("agent", "a"), item("run", "r"), item("entry", "e")], async (i) => {
      calls.push(i.id);
      if (i.kind === "entry") throw new Error("a Dashboard shows it");
    });
    expect(calls).toEqual(["r", "e", "a"]);
    expect([...retained(outcomes)]).toEqual([keyOf(item("entry", "e"))]);
    expect(summary(outcomes)).toContain("deleted 2 of 3");
    expect(summary(outcomes)).toContain("nothing is rolled back");
    expect(outcomes.find((o) => !o.ok)?.error).toBe("a Dashboard shows it");
  });

  it("says so when everything or nothing was deleted", async () => {
    expect(summary(await runCleanup([item("run", "r")], async () => undefined))).toBe("Deleted all 1 selected item.");
    expect(summary(await runCleanup([item("run", "r")], async () => Promise.reject(new Error("x"))))).toContain("Nothing was deleted");
  });
});
