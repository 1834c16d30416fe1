// Formatting for people: dates, sizes and the functional names of states.
import type { TaskState } from "./types";

export function when(iso: string | undefined, now = new Date()): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const seconds = Math.round((now.getTime() - d.getTime()) / 1000);
  // A future instant (a Trigger's next one) reads forward; a few seconds ahead is clock skew.
  if (seconds < -45 && seconds > -3600) return `in ${Math.round(-seconds / 60)} min`;
  if (seconds < -45) return d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400 && d.getDate() === now.getDate()) return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
}

export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

const taskStates: Record<TaskState, string> = {
  pending: "Waiting to start",
  running: "In progress",
  paused: "Paused",
  "action-required": "Needs your answer",
  completed: "Completed",
  failed: "Failed",
  cancelled: "Cancelled",
};

/**
 * The label of a Task's state. A Task whose questions the viewer may not answer (escalated to
 * the workspace's administrators) does not need the viewer's answer: it waits for theirs.
 */
export function taskStateLabel(state: TaskState, questions?: { mayAnswer?: boolean; escalatedAt?: string }[]): string {
  if (state === "action-required") {
    const who = waitsFor(questions);
    if (who === "administrator") return "Waiting for an administrator";
    if (who === "others") return "Waiting for an answer";
  }
  return taskStates[state] ?? state;
}

/**
 * Whom open questions wait for, as their reader sees them: the reader, when any is theirs to
 * answer (or the server does not say); an administrator of the workspace, when every one was
 * escalated to its Owners and Admins; else someone else who may run work (the reader may only read).
 */
export function waitsFor(questions?: { mayAnswer?: boolean; escalatedAt?: string }[]): WaitsFor {
  if (!questions?.length || !questions.every((q) => q.mayAnswer === false)) return "you";
  return questions.every((q) => q.escalatedAt) ? "administrator" : "others";
}

/** Whom open questions wait for, as their reader sees them (waitsFor). */
export type WaitsFor = "you" | "administrator" | "others";

/**
 * What work stopped on a question is doing, for its reader: waiting for the reader's answer, an
 * administrator's (the question was escalated), or, for a reader who may only follow the work,
 * the answer of someone of the workspace who may give it.
 */
export function waitingLine(who: WaitsFor): string {
  if (who === "administrator") return "Waiting for an administrator's answer";
  if (who === "others") return "Waiting for someone in this workspace who may answer";
  return "Waiting for your answer";
}

export function isTerminal(state: TaskState): boolean {
  return state === "completed" || state === "failed" || state === "cancelled";
}

/** at is an instant as a date and time in a zone (the viewer's when none), with the zone's abbreviation. */
export function at(iso: string | undefined, timeZone?: string): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  try {
    return d.toLocaleString([], { dateStyle: "medium", timeStyle: "long", timeZone });
  } catch {
    return d.toLocaleString([], { dateStyle: "medium", timeStyle: "long" });
  }
}
