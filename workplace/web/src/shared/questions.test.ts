import { describe, expect, it } from "vitest";
import { ApiError } from "./api";
import { answerProblem, closedLabel, expiryNote } from "./questions";

describe("closedLabel", () => {
  it("labels a question that can no longer be answered before anyone clicks", () => {
    const past = new Date(Date.now() - 1000).toISOString();
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(closedLabel("created", future)).toBeUndefined();
    expect(closedLabel("created", past)).toBe("Expired");
    expect(closedLabel("completed")).toBe("Answered");
    expect(closedLabel("expired")).toBe("Expired");
    expect(closedLabel("cancelled")).toBe("Closed");
  });
});

describe("answerProblem", () => {
  it("tells a question that is gone from a refusal to retry", () => {
    expect(answerProblem(new ApiError(409, "Conflict", "already completed")).gone).toBe(true);
    expect(answerProblem(new ApiError(429, "Too Many Requests", "try again in a minute")).gone).toBe(false);
    expect(answerProblem(new ApiError(503, "Unavailable", "")).unavailable).toBe(true);
  });
});

describe("expiryNote", () => {
  it("says before the expiry what happens when nobody answers in time", () => {
    expect(expiryNote({ kind: "approval", onExpiry: "reject" })).toBe("If nobody answers in time, the call is rejected.");
    expect(expiryNote({ kind: "choice", onExpiry: "proceed" })).toContain("default answer");
    expect(expiryNote({ kind: "text", onExpiry: "escalate" })).toContain("Owners and Admins");
    expect(expiryNote({ kind: "text", onExpiry: "escalate", escalatedAt: "2026-03-01T10:00:00Z" })).toContain("now waiting for the workspace's Owners and Admins");
    expect(expiryNote({ kind: "text", onExpiry: "fail" })).toBeUndefined();
  });
});
