import { describe, expect, it } from "vitest";
import { ApiError } from "./api";
import { answerProblem, closedLabel } from "./questions";

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
