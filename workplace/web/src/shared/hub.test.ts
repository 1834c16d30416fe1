import { describe, expect, it } from "vitest";
import { invalidation } from "./hub";

describe("rule 17: a hub event touches only the projection it concerns", () => {
  it("refreshes the named conversation for conversation events", () => {
    expect(invalidation({ name: "MessageAdded", payload: { interactionId: "i1" } })).toMatchObject({ conversation: true, tasks: false, notifications: false, interactionId: "i1" });
  });
  it("refreshes Tasks (and their conversation when named) for Task events", () => {
    expect(invalidation({ name: "TaskStatusChanged", payload: { taskId: "t1" } })).toMatchObject({ conversation: false, tasks: true, taskId: "t1" });
    expect(invalidation({ name: "TaskActivityAdded", payload: { task: { taskId: "t1", interactionId: "i1" } } })).toMatchObject({ conversation: true, tasks: true, interactionId: "i1" });
  });
  it("refreshes only the notification summary for notification events", () => {
    expect(invalidation({ name: "UnreadNotificationCountChanged", payload: {} })).toMatchObject({ conversation: false, tasks: false, notifications: true });
  });
});
