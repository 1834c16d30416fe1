import { describe, expect, it } from "vitest";
import { ApiError } from "./api";
import { answerProblem, closedLabel, expiryNote, readOnlyReason } from "./questions";

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
    // Escalated while the page showed it: not gone, but read again (it then shows read-only).
    const escalated = answerProblem(new ApiError(403, "Forbidden", "only they may answer it now", [], { code: "EscalatedToAdministrators" }));
    expect(escalated).toMatchObject({ gone: false, reread: true, state: "escalated" });
    expect(escalated.text).toContain("only an administrator of this workspace may answer it now");
    expect(answerProblem(new ApiError(403, "Forbidden", "no")).reread).toBeUndefined();
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

describe("readOnlyReason", () => {
  it("shows an escalated question read-only, in plain words, to whoever may no longer answer it", () => {
    const escalated = { status: "created" as const, escalatedAt: "2026-03-01T10:00:00Z" };
    expect(readOnlyReason({ ...escalated, mayAnswer: false, answerRefusal: "EscalatedToAdministrators" })).toContain("now waits for an administrator of this workspace");
    expect(readOnlyReason({ ...escalated, mayAnswer: true })).toBeUndefined();
    expect(readOnlyReason({ status: "created", mayAnswer: false, answerRefusal: "NotPermitted" })).toBe("You may read this question but not answer it.");
    // A server that does not say offers the form; the answer's refusal explains.
    expect(readOnlyReason({ status: "created" })).toBeUndefined();
    expect(readOnlyReason({ status: "completed", mayAnswer: false })).toBeUndefined();
  });
});
