import { describe, expect, it } from "vitest";
import { taskStateLabel, when } from "./format";

describe("when reads an instant relative to now", () => {
  const now = new Date("2026-05-01T12:00:00Z");
  it("reads a past instant backward and a few seconds of clock skew as now", () => {
    expect(when("2026-05-01T11:50:00Z", now)).toBe("10 min ago");
    expect(when("2026-05-01T12:00:10Z", now)).toBe("just now");
  });
  it("reads a future instant (a Trigger's next) forward, never as just now", () => {
    expect(when("2026-05-01T12:05:00Z", now)).toBe("in 5 min");
    expect(when("2026-05-03T12:00:00Z", now)).not.toMatch(/just now|ago/);
  });
});

describe("taskStateLabel", () => {
  it("says a Task waits for an administrator when none of its questions is the viewer's to answer and each was escalated", () => {
    expect(taskStateLabel("action-required")).toBe("Needs your answer");
    expect(taskStateLabel("action-required", [{ mayAnswer: false, escalatedAt: "2026-05-01T12:00:00Z" }])).toBe("Waiting for an administrator");
    expect(taskStateLabel("action-required", [{ mayAnswer: false }])).toBe("Waiting for an answer");
    expect(taskStateLabel("action-required", [{ mayAnswer: false }, { mayAnswer: true }])).toBe("Needs your answer");
    expect(taskStateLabel("action-required", [{}])).toBe("Needs your answer");
    expect(taskStateLabel("completed", [{ mayAnswer: false }])).toBe("Completed");
  });
});
