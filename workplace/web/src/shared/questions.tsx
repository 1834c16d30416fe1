// Questions (pending actions) are answerable wherever they are shown: in their conversation, in
// their Task (Workplace and Console), in the inbox. A conversation's question needs its resume
// token: the tab that received it keeps it in sessionStorage (its own reloads); any other page
// asks the API for a fresh single-use one on the click (the old one stops working) and answers.
// An autonomous Task's question is answered on the Task, with no token.
import { useEffect, useId, useState, type ReactNode } from "react";
import { bytesToBase64 } from "../workplace/presentation";
import { ApiError, enc, onReachable, post } from "./api";
import type { ApprovalCall, Exchange, PendingAction } from "./types";
import { budgetLine, type Budget } from "./usage";

const tokenKey = (workspace: string, interactionId: string) => `platform.resumeToken/${workspace}/${interactionId}`;

function storage(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined; // storage disabled: the token is then fetched fresh at each answer
  }
}

/** The token of a conversation answers its run's next pending action; this tab keeps it across its reloads. */
export function rememberResumeToken(workspace: string, interactionId: string, token: string | undefined) {
  if (token) storage()?.setItem(tokenKey(workspace, interactionId), token);
}

export function resumeToken(workspace: string, interactionId: string): string | undefined {
  return storage()?.getItem(tokenKey(workspace, interactionId)) ?? undefined;
}

export function forgetResumeToken(workspace: string, interactionId: string) {
  storage()?.removeItem(tokenKey(workspace, interactionId));
}

/** Where a question is answered: its conversation (interactionId) or, for an autonomous Task, the Task. */
export interface QuestionPlace {
  /** The workspace's API base: /api/workspaces/{workspace}. */
  api: string;
  workspace: string;
  interactionId?: string;
  taskId?: string;
}

const tokenRefused = (e: unknown) => e instanceof ApiError && e.status === 400 && /resume token/i.test(e.message);

/**
 * answerQuestion answers a question where it belongs. For a conversation's question without a
 * token here (a reload in another tab, a notification, the inbox), or with one that no longer
 * matches (another page took a fresh one), it gets a fresh token first, transparently.
 */
export async function answerQuestion(place: QuestionPlace, actionId: string, body: Record<string, unknown>): Promise<Exchange | PendingAction> {
  const { api, workspace, interactionId, taskId } = place;
  if (!interactionId) return post<PendingAction>(`${api}/tasks/${enc(taskId ?? "")}/pending-actions/${enc(actionId)}/responses`, body);
  const path = `${api}/interactions/${enc(interactionId)}/pending-actions/${enc(actionId)}`;
  const reissue = async () => (await post<{ resumeToken: string }>(`${path}/resume-token`)).resumeToken;
  let token = resumeToken(workspace, interactionId) ?? (await reissue());
  let x: Exchange;
  // Another page that takes a fresh token meanwhile (two tabs answering at once) makes this one
  // stale: take another, a few times. An answer given meanwhile makes the reissue a 409.
  for (let attempt = 1; ; attempt++) {
    try {
      x = await post<Exchange>(`${path}/responses?waitSeconds=5`, { ...body, resumeToken: token });
      break;
    } catch (e) {
      if (!tokenRefused(e) || attempt === 3) throw e;
      token = await reissue();
    }
  }
  forgetResumeToken(workspace, interactionId);
  rememberResumeToken(workspace, interactionId, x.resumeToken);
  return x;
}

/** The label of a question that can no longer be answered, else undefined. */
export function closedLabel(status: PendingAction["status"] | undefined, expiresAt?: string): string | undefined {
  if (status === "created" && expiresAt && new Date(expiresAt).getTime() <= Date.now()) return "Expired";
  switch (status) {
    case "completed":
      return "Answered";
    case "expired":
      return "Expired";
    case "cancelled":
      return "Closed";
  }
  return undefined;
}

/**
 * What a refused answer tells the person, whether the question is gone, and whether it changed
 * hands (escalated while the page showed it: read again, it shows read-only).
 */
export function answerProblem(e: unknown): { state: string; text: string; tone: "warn" | "error"; gone: boolean; unavailable: boolean; reread?: boolean } {
  if (e instanceof ApiError && e.status === 403 && e.problem.code === "EscalatedToAdministrators")
    return { state: "escalated", text: "Nobody answered in time, so only an administrator of this workspace may answer it now; nothing was sent.", tone: "warn", gone: false, unavailable: false, reread: true };
  if (e instanceof ApiError && e.unavailable)
    return { state: "api-unavailable", text: "The platform API is unavailable; nothing was sent. Try again in a moment.", tone: "error", gone: false, unavailable: true };
  if (e instanceof ApiError && (e.status === 409 || e.status === 404))
    return { state: "expired-action", text: "This question is no longer open: it expired or was already answered.", tone: "warn", gone: true, unavailable: false };
  if (tokenRefused(e))
    return { state: "taken-elsewhere", text: "This question changed in another tab at the same moment; nothing was sent. It was read again: answer once more.", tone: "warn", gone: false, unavailable: false, reread: true };
  if (e instanceof ApiError && e.status === 429) return { state: "failure", text: e.message, tone: "warn", gone: false, unavailable: false };
  if (e instanceof ApiError && e.status === 403) return { state: "failure", text: "You may read this question but not answer it.", tone: "warn", gone: false, unavailable: false };
  return { state: "failure", text: e instanceof ApiError ? e.message : String(e), tone: "error", gone: false, unavailable: false };
}

/**
 * useUnavailableNoticeCleared clears a notice that the API was unavailable ("nothing was sent")
 * once a request reaches the API again: it must not stay under a question the page can answer.
 */
export function useUnavailableNoticeCleared(notice: { state: string } | undefined, clear: (none: undefined) => void) {
  const unavailable = notice?.state === "api-unavailable";
  useEffect(() => (unavailable ? onReachable(() => clear(undefined)) : undefined), [unavailable, clear]);
}

/**
 * A question with its controls, answerable in place (Task detail, inbox, Console): the same
 * controls the conversation shows. A question that can no longer be answered shows why, disabled.
 */
export function QuestionCard({
  place,
  action,
  onAnswered,
  onApiDown,
  heading,
}: {
  place: QuestionPlace;
  action: PendingAction;
  onAnswered: () => void;
  onApiDown?: (detail: string) => void;
  heading?: ReactNode;
}) {
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<ReturnType<typeof answerProblem>>();
  useUnavailableNoticeCleared(notice, setNotice);
  const [done, setDone] = useState(false);
  const closed = done ? "Answered" : (closedLabel(action.status, action.expiresAt) ?? (notice?.gone ? "No longer open" : undefined));
  const answer = async (body: Record<string, unknown>) => {
    setBusy(true);
    setNotice(undefined);
    try {
      await answerQuestion(place, action.id, body);
      setDone(true);
      onAnswered();
    } catch (e) {
      const p = answerProblem(e);
      if (p.unavailable && e instanceof ApiError) onApiDown?.(e.message);
      setNotice(p);
      if (p.gone || p.reread) onAnswered();
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="question-card" data-question-id={action.id} data-question-state={closed ? "closed" : "open"}>
      {heading}
      <p className="text">{action.prompt}</p>
      {closed ? (
        <span className="muted tag" data-state={closed === "Expired" ? "expired-action" : undefined}>
          {closed}
        </span>
      ) : (
        <PendingActionControls action={action} busy={busy} onAnswer={(body) => void answer(body)} />
      )}
      {notice && (
        <p className={`state-note ${notice.tone}`} role="alert" data-state={notice.state}>
          {notice.text}
        </p>
      )}
    </div>
  );
}

/**
 * What happens when nobody answers in time, said before it happens: the run fails, the call is
 * rejected, the run goes on with the declared default, or the question goes to the workspace's
 * Owners and Admins (once).
 */
export function expiryNote(action: Pick<PendingAction, "onExpiry" | "escalatedAt" | "kind">): string | undefined {
  if (action.escalatedAt) return "Nobody answered in time: now waiting for the workspace's Owners and Admins. If nobody answers, the work fails.";
  switch (action.onExpiry) {
    case "reject":
      return action.kind === "approval" ? "If nobody answers in time, the call is rejected." : "If nobody answers in time, the answer is No.";
    case "proceed":
      return "If nobody answers in time, the work goes on with a default answer.";
    case "escalate":
      return "If nobody answers in time, the question goes to the workspace's Owners and Admins.";
  }
  return undefined;
}

/** A value of a call's arguments as a readable structure: objects as terms, lists in order. */
function ArgumentValue({ value, depth }: { value: unknown; depth: number }) {
  if (value === null || typeof value !== "object") {
    return <code className="arg-scalar">{typeof value === "string" ? value : JSON.stringify(value)}</code>;
  }
  if (depth > 8) return <code className="arg-scalar">{JSON.stringify(value)}</code>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <code className="arg-scalar">[]</code>;
    return (
      <ol className="arg-list">
        {value.map((v, i) => (
          <li key={i}>
            <ArgumentValue value={v} depth={depth + 1} />
          </li>
        ))}
      </ol>
    );
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return <code className="arg-scalar">{"{}"}</code>;
  return (
    <dl className="arg-object">
      {entries.map(([k, v]) => (
        <div key={k} className="arg-entry">
          <dt>{k}</dt>
          <dd>
            <ArgumentValue value={v} depth={depth + 1} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** The exact call an approval decides: who calls which tool of which provider, the complete arguments and the call's digest. */
export function ApprovalCallView({ call }: { call: ApprovalCall }) {
  return (
    <section className="approval-call" aria-label="The call to approve">
      <dl className="call-facts">
        <div>
          <dt>Tool</dt>
          <dd>
            <code>{call.toolName}</code> <span className="muted">({call.tool})</span>
          </dd>
        </div>
        <div>
          <dt>Provider</dt>
          <dd>
            <code>{call.provider}</code>
          </dd>
        </div>
        <div>
          <dt>Agent</dt>
          <dd>
            <code>{call.agent}</code>
          </dd>
        </div>
      </dl>
      <h4 className="call-heading">Arguments</h4>
      {/* Long arguments scroll inside the card; the region is focusable so a keyboard scrolls it too. */}
      <div className="call-arguments" data-call-arguments role="region" aria-label="Arguments of the call" tabIndex={0}>
        <ArgumentValue value={call.arguments} depth={0} />
      </div>
      <p className="call-digest muted">
        Exactly this call runs once approved: <code data-call-digest>{call.digest}</code>
      </p>
    </section>
  );
}

/**
 * A budget approval asks whether a run goes on past a budget it would cross; it calls no tool.
 * The server says which budget (action.budget); a server that does not yet says so in its prompt.
 */
export function isBudgetApproval(action: Pick<PendingAction, "kind" | "budget" | "call" | "prompt">): boolean {
  return action.kind === "approval" && (!!action.budget || (!action.call && /^continue past\b.*\bbudget\b/i.test(action.prompt)));
}

/** The words of an approval's two answers, and what they do when it is a budget's. */
export function approvalChoices(action: Pick<PendingAction, "kind" | "budget" | "call" | "prompt">): { approve: string; decline: string; note?: string } {
  if (isBudgetApproval(action))
    return { approve: "Approve", decline: "Decline", note: "Approve to let this work go on past the budget; decline to stop it here." };
  return { approve: "Approve", decline: "Reject" };
}

/** The budget a run would cross: what it covers, its period and how much of it is used. */
export function BudgetView({ budget }: { budget: Budget }) {
  const line = budgetLine(budget);
  return (
    <section className="approval-budget" aria-label="The budget">
      <p>
        <strong>{line.title}</strong> <span className="muted">{line.period}</span>
      </p>
      <ul className="budget-uses">
        {line.limits.map((l) => (
          <li key={l.what}>
            {l.used} of {l.limit}
            {Number.isFinite(l.share) && <span className="muted"> ({Math.round(l.share * 100)} %)</span>}
          </li>
        ))}
      </ul>
    </section>
  );
}

/**
 * Why the caller cannot answer an open question, in plain words; undefined when they may (or the
 * server does not say, when the form is offered and the answer's refusal explains).
 */
export function readOnlyReason(action: Pick<PendingAction, "status" | "mayAnswer" | "answerRefusal" | "escalatedAt">): string | undefined {
  if (action.status !== "created" || action.mayAnswer !== false) return undefined;
  if (action.answerRefusal === "EscalatedToAdministrators" || action.escalatedAt)
    return "Nobody answered in time; it now waits for an administrator of this workspace. This page updates when they answer.";
  return "You may read this question but not answer it.";
}

/** Rule 9: a choice is one-click buttons, a confirmation one click, an input a small inline composer; files and approvals inline too. */
export function PendingActionControls({ action, busy, onAnswer }: { action: PendingAction; busy: boolean; onAnswer: (body: Record<string, unknown>) => void }) {
  const readOnly = readOnlyReason(action);
  const note = readOnly ? undefined : expiryNote(action);
  return (
    <>
      {action.escalatedAt && !readOnly && (
        <span className="pill escalated" data-escalated="answerable" title="Nobody answered in time: it was re-addressed to the workspace's Owners and Admins">
          Escalated
        </span>
      )}
      {action.kind === "approval" && action.call && <ApprovalCallView call={action.call} />}
      {action.kind === "approval" && action.budget && <BudgetView budget={action.budget} />}
      {note && (
        <p className="expiry-note muted" data-expiry={action.escalatedAt ? "escalated" : action.onExpiry}>
          {note}
        </p>
      )}
      {readOnly ? (
        <p className="state-note info read-only-question" role="status" data-state="read-only-question" data-refusal={action.answerRefusal ?? "NotPermitted"}>
          {readOnly}
        </p>
      ) : (
        <AnswerControls action={action} busy={busy} onAnswer={onAnswer} />
      )}
    </>
  );
}

function AnswerControls({ action, busy, onAnswer }: { action: PendingAction; busy: boolean; onAnswer: (body: Record<string, unknown>) => void }) {
  const [text, setText] = useState("");
  const [reason, setReason] = useState("");
  const [file, setFile] = useState<File>();
  const id = useId();
  switch (action.kind) {
    case "choice":
      return (
        <div className="actions" role="group" aria-label={action.prompt}>
          {(action.options ?? []).map((o) => (
            <button key={o.value} type="button" className="choice" disabled={busy} onClick={() => onAnswer({ value: o.value })}>
              {o.label || o.value}
            </button>
          ))}
        </div>
      );
    case "confirmation":
      return (
        <div className="actions" role="group" aria-label={action.prompt}>
          <button type="button" className="primary" disabled={busy} onClick={() => onAnswer({ confirmed: true })}>
            Yes
          </button>
          <button type="button" disabled={busy} onClick={() => onAnswer({ confirmed: false })}>
            No
          </button>
        </div>
      );
    case "approval": {
      const words = approvalChoices(action);
      return (
        <>
          {words.note && (
            <p className="muted approval-note" data-approval="budget">
              {words.note}
            </p>
          )}
          <div className="actions approval" role="group" aria-label={action.prompt}>
            <label htmlFor={`${id}-reason`}>Reason (optional)</label>
            <input id={`${id}-reason`} value={reason} onChange={(e) => setReason(e.target.value)} disabled={busy} maxLength={2048} />
            <button type="button" className="primary" disabled={busy} onClick={() => onAnswer({ approved: true, reason })}>
              {words.approve}
            </button>
            <button type="button" disabled={busy} onClick={() => onAnswer({ approved: false, reason })}>
              {words.decline}
            </button>
          </div>
        </>
      );
    }
    case "file":
      return (
        <form
          className="actions"
          onSubmit={async (e) => {
            e.preventDefault();
            if (!file) return;
            const bytes = new Uint8Array(await file.arrayBuffer());
            onAnswer({ file: { name: file.name, mediaType: file.type || "application/octet-stream", contentBase64: bytesToBase64(bytes) } });
          }}
        >
          <label htmlFor={`${id}-file`}>File</label>
          <input id={`${id}-file`} type="file" onChange={(e) => setFile(e.target.files?.[0])} disabled={busy} />
          <button type="submit" className="primary" disabled={busy || !file}>
            Send file
          </button>
        </form>
      );
    default:
      return (
        <form
          className="actions inline-composer"
          onSubmit={(e) => {
            e.preventDefault();
            if (text.trim()) onAnswer({ value: text });
          }}
        >
          <label htmlFor={`${id}-answer`} className="visually-hidden">
            Your answer
          </label>
          <input id={`${id}-answer`} value={text} onChange={(e) => setText(e.target.value)} disabled={busy} placeholder="Your answer" />
          <button type="submit" className="primary" disabled={busy || !text.trim()}>
            Answer
          </button>
        </form>
      );
  }
}
