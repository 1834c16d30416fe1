// The Workplace's presentation rules as pure functions, so that they are tested without a browser.
import type { WaitsFor } from "../shared/format";
import type { Activity, DashboardView, DashboardViewEntry, EntryField, Interaction, Message, PublishedEntry } from "../shared/types";

export interface DashboardLayout {
  primary?: DashboardViewEntry;
  featured: DashboardViewEntry[];
  standard: DashboardViewEntry[];
}

const byOrder = (a: DashboardViewEntry, b: DashboardViewEntry) => a.order - b.order || a.name.localeCompare(b.name);

/** Rule 4: the optional emphasized Primary Entry, then Featured, then Standard, each in order. */
export function dashboardLayout(view: DashboardView): DashboardLayout {
  const shown = view.entries.filter((e) => e.entry);
  const primary = shown.filter((e) => e.role === "Primary").sort(byOrder);
  return {
    primary: primary[0],
    // A second Primary reference is shown as Featured: one Entry only is emphasized.
    featured: [...primary.slice(1), ...shown.filter((e) => e.role === "Featured")].sort(byOrder),
    standard: shown.filter((e) => e.role === "Standard").sort(byOrder),
  };
}

export function entryTitle(e: PublishedEntry): string {
  return e.presentation.displayName || e.name;
}

export function primaryField(fields: EntryField[] | undefined): EntryField | undefined {
  return (fields ?? []).find((f) => f.role === "PrimaryInput");
}

export function initialValues(fields: EntryField[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fields ?? []) out[f.name] = f.default ?? (f.type === "Boolean" ? "false" : "");
  return out;
}

export interface Submission {
  input: Record<string, unknown>;
  errors: Record<string, string>;
}

/** submission turns the form's texts into the Entry's typed input, or says what is missing. */
export function submission(fields: EntryField[] | undefined, values: Record<string, string>): Submission {
  const input: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const f of fields ?? []) {
    const raw = (values[f.name] ?? "").trim();
    const label = f.label || f.name;
    if (raw === "") {
      if (f.required || f.role === "PrimaryInput") errors[f.name] = `${label} is required`;
      continue;
    }
    switch (f.type) {
      case "Number": {
        const n = Number(raw);
        if (!Number.isFinite(n)) errors[f.name] = `${label} must be a number`;
        else input[f.name] = n;
        break;
      }
      case "Boolean":
        input[f.name] = raw === "true";
        break;
      case "Choice":
        if (f.choices && !f.choices.some((c) => c.value === raw)) errors[f.name] = `${label} must be one of the choices`;
        else input[f.name] = raw;
        break;
      default:
        input[f.name] = values[f.name];
    }
  }
  return { input, errors };
}

/** sendShortcut: Ctrl or Command + Enter sends; Enter alone is a new line. */
export function sendShortcut(e: { key: string; ctrlKey: boolean; metaKey: boolean }): boolean {
  return e.key === "Enter" && (e.ctrlKey || e.metaKey);
}

export interface ComposerState {
  disabled: boolean;
  reason?: string;
}

/**
 * Rule 9 and 5: the composer stays, disabled only by an open question, a closed conversation or a
 * send in flight. A question blocks it whoever may answer it (who, as the reader sees it): the
 * reason says who that is, an administrator for an escalated question, someone who may answer
 * for a reader who may only follow the work.
 */
export function composerState(i: Interaction | undefined, sending: boolean, who: WaitsFor = "you", mayRun = true): ComposerState {
  if (sending) return { disabled: true, reason: "Sending…" };
  if (!i) return { disabled: false };
  if (i.state === "Closed") return { disabled: true, reason: "This conversation was closed. Start a new request to continue." };
  if (i.blocked && who === "administrator")
    return { disabled: true, reason: "Nobody answered in time: the work waits for an administrator of this workspace to answer the question above." };
  if (i.blocked && who === "others")
    return { disabled: true, reason: "The work waits for someone in this workspace who may answer the question above: you may follow it, but not answer." };
  if (i.blocked) return { disabled: true, reason: "Answer the question above to continue: the work waits for it." };
  // Sending starts work, which a reader who may only follow it would be refused.
  if (!mayRun) return { disabled: true, reason: "Your role in this workspace lets you follow this conversation, not send to it." };
  return { disabled: false };
}

/**
 * What sending now does while the conversation's work is in progress, under the Entry's follow-up
 * policy; nothing to say when no work is in progress or a question blocks the composer.
 */
export function followUpNote(i: Interaction | undefined, working: boolean): string | undefined {
  if (!i || !working || i.blocked || i.state === "Closed") return undefined;
  switch (i.followUpPolicy) {
    case "Reject":
      return "Work is in progress: a message sent now is refused until it ends.";
    case "Interrupt":
      return "Work is in progress: sending now stops it and starts on your message.";
    default:
      return "Work is in progress: a message sent now waits and starts when it ends.";
  }
}

export interface Step {
  label: string;
  state: "finished" | "current" | "waiting" | "failed" | "cancelled";
  participant?: string;
  at: string;
}

/**
 * Rule 15: completed start/end pairs fold into finished steps, unresolved work is the current
 * step, questions show as waiting until answered; the run's own lifecycle markers are left out.
 */
export function foldSteps(activities: Activity[]): { finished: Step[]; current?: Step } {
  const steps: Step[] = [];
  const open: Step[] = [];
  const openQuestions = new Map<string, Step>();
  let previous: Activity | undefined;
  for (const a of [...activities].sort((x, y) => x.seq - y.seq)) {
    const after = previous;
    previous = a;
    if (a.kind === "turn") {
      // A step that asked (an approval of a tool call or of going past a budget) starts again
      // once answered: it is the same step going on, not a second one.
      const resumes = open.length > 0 && after?.kind === "question" && (after.phase === "answered" || after.phase === "expired");
      if (a.phase === "started" && resumes) continue;
      if (a.phase === "started") {
        const s: Step = { label: a.label, state: "current", participant: a.participant, at: a.createdAt };
        open.push(s);
        steps.push(s);
      } else if (a.phase === "completed" || a.phase === "failed" || a.phase === "cancelled") {
        const s = open.pop();
        if (s) s.state = a.phase === "completed" ? "finished" : a.phase;
        else steps.push({ label: a.label, state: a.phase === "completed" ? "finished" : a.phase, participant: a.participant, at: a.createdAt });
      }
    } else if (a.kind === "question") {
      if (a.phase === "waiting") {
        const s: Step = { label: a.label, state: "waiting", at: a.createdAt };
        openQuestions.set(a.label, s);
        steps.push(s);
      } else if (a.phase === "answered") {
        const s = openQuestions.get(a.label);
        if (s) {
          s.state = "finished";
          openQuestions.delete(a.label);
        }
      } else if (a.phase === "expired") {
        // Nobody answered in time: the waiting question ends, and what its fallback did is a step of its own.
        for (const q of openQuestions.values()) q.state = "finished";
        openQuestions.clear();
        steps.push({ label: a.label, state: "finished", at: a.createdAt });
      } else if (a.phase === "reminded" || a.phase === "escalated") {
        steps.push({ label: a.label, state: "finished", at: a.createdAt });
      }
    } else if (a.kind === "run" && a.phase === "refused") {
      steps.push({ label: a.label, state: "failed", at: a.createdAt });
    } else if (a.kind === "run" && a.phase === "completed") {
      // The run ended well: nothing of it is still in progress.
      for (const s of open) s.state = "finished";
      open.length = 0;
    } else if (a.kind === "run" && (a.phase === "failed" || a.phase === "cancelled")) {
      for (const s of open) s.state = a.phase;
      for (const s of openQuestions.values()) s.state = a.phase;
      open.length = 0;
      openQuestions.clear();
    }
  }
  const unresolved = steps.filter((s) => s.state === "current" || s.state === "waiting");
  const current = unresolved[unresolved.length - 1];
  return { finished: steps.filter((s) => s !== current), current };
}

/** The open question of a conversation: the last question message whose action is still open. */
export function openQuestionId(messages: Message[], blocked: boolean): string | undefined {
  if (!blocked) return undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.kind === "question" && m.question) return m.question.pendingActionId;
    if (m.kind === "answer") return undefined;
  }
  return undefined;
}

/** fileToBase64 encodes bytes in the standard alphabet the API expects. */
export function bytesToBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}
