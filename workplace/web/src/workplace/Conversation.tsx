import { useCallback, useEffect, useId, useRef, useState, type KeyboardEvent } from "react";
import { ApiError, enc, get, post } from "../shared/api";
import { taskStateLabel, waitingLine, waitsFor } from "../shared/format";
import { Link } from "../shared/router";
import type { Activity, Exchange, Items, Message, PendingAction, TaskResult } from "../shared/types";
import { Loading, StateNote } from "./components";
import { answerProblem, answerQuestion, closedLabel, PendingActionControls, rememberResumeToken, useUnavailableNoticeCleared } from "../shared/questions";
import { composerState, followUpNote, sendShortcut } from "./presentation";
import { Markdown } from "../shared/markdown";

interface Props {
  api: string;
  interactionId: string;
  workspace: string;
  tick: number;
  live: boolean;
  title?: string;
  onNewRequest: () => void;
  onChanged: () => void;
  onApiDown: (detail: string) => void;
  onTask: (taskId: string | undefined) => void;
  /** The Development host shows automatic Results in a collapsed diagnostic control (rule 14). */
  diagnostics?: boolean;
  /** Whether the reader may run work here (runs/execute): a reader who may only follow it cannot send. */
  mayRun?: boolean;
}

/** The active conversation (rules 5, 9, 11, 13): messages, inline questions, the Task reference and the permanent composer. */
export function Conversation({ api, interactionId, workspace, tick, live, onNewRequest, onChanged, onApiDown, onTask, diagnostics, mayRun = true }: Props) {
  const base = `${api}/interactions/${enc(interactionId)}`;
  const [exchange, setExchange] = useState<Exchange>();
  const [messages, setMessages] = useState<Message[]>();
  const [progress, setProgress] = useState<Activity[]>([]);
  const [loadError, setLoadError] = useState<string>();
  const [notice, setNotice] = useState<{ state: string; text: string; tone: "warn" | "error" }>();
  useUnavailableNoticeCleared(notice, setNotice);
  const [busy, setBusy] = useState(false);
  const [draft, setDraft] = useState("");
  const composerId = useId();

  const load = useCallback(async () => {
    try {
      const [x, m] = await Promise.all([get<Exchange>(base), get<Items<Message>>(`${base}/messages?take=200`)]);
      setExchange(x);
      setMessages(m.items);
      onTask(x.task?.id);
      setLoadError(undefined);
      if (x.task) {
        const a = await get<Items<Activity>>(`${api}/tasks/${enc(x.task.id)}/activities?detail=compact`).catch(() => ({ items: [] }));
        setProgress(a.items);
      }
    } catch (e) {
      if (e instanceof ApiError && e.unavailable) onApiDown(e.message);
      else setLoadError(e instanceof ApiError && e.status === 404 ? "This conversation does not exist in this workspace." : (e as Error).message);
    }
  }, [api, base, onApiDown, onTask]);

  useEffect(() => {
    void load();
  }, [load, tick]);

  // Without the hub, work in progress is followed over REST, only while this conversation works.
  const working = exchange?.action?.type === "working" || (exchange?.interaction.state === "Active" && !exchange.interaction.blocked) || messages?.some((m) => m.pending);
  const pollRef = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => {
    if (live || !working) return;
    pollRef.current = setTimeout(() => void load(), 1500);
    return () => clearTimeout(pollRef.current);
  }, [live, working, exchange, messages, load]);

  const after = (x: Exchange) => {
    rememberResumeToken(workspace, interactionId, x.resumeToken);
    setNotice(undefined);
    onChanged();
    void load();
  };

  const fail = (e: unknown, answering: boolean) => {
    const p = answerProblem(e);
    if (p.unavailable && e instanceof ApiError) onApiDown(e.message);
    if (answering && p.gone) {
      setNotice({ ...p, text: `${p.text} The conversation was refreshed.` });
      void load();
    } else if (answering && p.reread) {
      setNotice(p);
      void load();
    } else setNotice(p);
  };

  // A question is answered from any tab: without this tab's token, a fresh one is fetched on the click.
  const answer = async (action: PendingAction, body: Record<string, unknown>) => {
    setBusy(true);
    try {
      after((await answerQuestion({ api, workspace, interactionId }, action.id, body)) as Exchange);
    } catch (e) {
      fail(e, true);
    } finally {
      setBusy(false);
    }
  };

  const send = async () => {
    const text = draft.trim();
    if (!text || state.disabled) return;
    setBusy(true);
    try {
      const x = await post<Exchange>(`${base}/messages?waitSeconds=5`, { text });
      setDraft("");
      after(x);
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) setNotice({ state: "blocked", text: e.message, tone: "warn" });
      else fail(e, false);
    } finally {
      setBusy(false);
    }
  };

  if (loadError) return <StateNote state="failure" tone="error">{loadError}</StateNote>;
  if (!exchange || !messages) return <Loading label="Loading the conversation…" />;

  const i = exchange.interaction;
  const action = exchange.action;
  const open = action?.pendingAction && !closedLabel(action.pendingAction.status, action.pendingAction.expiresAt) ? action.pendingAction : undefined;
  // A question the caller may not answer blocks the work all the same: it waits for an
  // administrator (escalated) or, for a reader who may only follow the work, someone who may answer.
  const who = waitsFor(open ? [open] : undefined);
  const state = composerState(i, busy, who, mayRun);
  const followUp = followUpNote(i, !!working);
  const task = exchange.task;
  const currentActivity = progress.filter((a) => a.phase === "started" || a.phase === "waiting").pop();
  const onKey = (e: KeyboardEvent) => {
    if (sendShortcut(e)) {
      e.preventDefault();
      void send();
    }
  };

  return (
    <section className="conversation" aria-labelledby={`${composerId}-title`} data-interaction-state={i.state}>
      <header className="conversation-head">
        <h2 id={`${composerId}-title`}>{i.title}</h2>
        <button type="button" onClick={onNewRequest}>New request</button>
      </header>

      {task && (
        <div className="task-ref" data-task-state={task.state} aria-label="Task">
          <div>
            <strong>{task.title}</strong> <span className={`pill state-${task.state}`}>{taskStateLabel(task.state, open ? [open] : undefined)}</span>
          </div>
          {currentActivity && !["completed", "failed", "cancelled"].includes(task.state) && (
            <p className="progress" role="status">
              {/* Work that waits for a person is not busy: no spinner. */}
              {currentActivity.phase !== "waiting" && <span className="spinner" aria-hidden="true" />} {currentActivity.phase === "waiting" ? waitingLine(who) : currentActivity.label}
            </p>
          )}
          {task.state === "failed" && <p className="state-note error" data-state="failure">The Task failed{task.reason ? `: ${task.reason}` : "."}</p>}
          {task.state === "cancelled" && <p className="state-note warn" data-state="cancellation">The Task was cancelled{task.reason ? `: ${task.reason}` : "."}</p>}
          <Link href={`/w/${enc(workspace)}/tasks/${enc(task.id)}`}>Task details</Link>
        </div>
      )}

      <ol className="messages" aria-label="Messages">
        {messages.map((m) => (
          <li key={m.id} className={`message role-${m.role.toLowerCase()} kind-${m.kind}`} data-kind={m.kind}>
            <span className="visually-hidden">{m.role === "User" ? "You:" : "Assistant:"}</span>
            {m.kind === "error" ? (
              <p className="state-note error" data-state="failure">{m.text}</p>
            ) : m.kind === "cancelled" ? (
              <p className="state-note warn" data-state="cancellation">{m.text || "The work was cancelled."}</p>
            ) : m.role !== "User" && (m.kind === "reply" || m.kind === "result") ? (
              <Markdown className="text" text={m.text} />
            ) : (
              <p className="text">{m.text}</p>
            )}
            {m.pending && <p className="muted">Queued: it starts when the current work ends.</p>}
            {m.kind === "question" && m.question && open && m.question.pendingActionId === open.id && (
              <PendingActionControls action={open} busy={busy} onAnswer={(body) => void answer(open, body)} />
            )}
            {m.kind === "question" && m.question && (!open || m.question.pendingActionId !== open.id) && (
              <span className="muted tag" data-state={closedLabel(m.question.status) === "Expired" ? "expired-action" : undefined}>
                {closedLabel(m.question.status) ?? "Answered or closed"}
              </span>
            )}
          </li>
        ))}
        {open && !messages.some((m) => m.question?.pendingActionId === open.id) && (
          <li className="message role-platform kind-question">
            <p className="text">{open.prompt}</p>
            <PendingActionControls action={open} busy={busy} onAnswer={(body) => void answer(open, body)} />
          </li>
        )}
        {action?.type === "working" && !currentActivity && task?.state === "paused" && (
          <li className="message role-platform waiting" role="status" data-state="paused">
            Paused: the work goes on once the Task is resumed.
          </li>
        )}
        {action?.type === "working" && !currentActivity && task?.state !== "paused" && (
          <li className="message role-platform waiting" role="status">
            <span className="spinner" aria-hidden="true" /> Working on it…
          </li>
        )}
      </ol>

      {diagnostics && i.taskId && !messages.some((m) => m.kind === "result") && <DiagnosticResults api={api} taskId={i.taskId} tick={tick} />}

      {notice && (
        <p className={`state-note ${notice.tone}`} role="alert" data-state={notice.state}>
          {notice.text}
        </p>
      )}

      <form
        className="composer"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <label htmlFor={`${composerId}-composer`} className="visually-hidden">
          Message
        </label>
        <textarea
          id={`${composerId}-composer`}
          rows={2}
          placeholder={state.disabled ? "" : "Ask a follow-up…"}
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={onKey}
          disabled={state.disabled}
          aria-describedby={state.reason ? `${composerId}-why` : followUp ? `${composerId}-follow-up` : undefined}
        />
        <button type="submit" className="primary" disabled={state.disabled || !draft.trim()}>
          Send
        </button>
        {!state.reason && followUp && (
          <p id={`${composerId}-follow-up`} className="composer-why" data-follow-up-policy={i.followUpPolicy ?? "Enqueue"}>
            {followUp}
          </p>
        )}
        {state.reason && (
          <p id={`${composerId}-why`} className="composer-why" data-state={i.blocked ? "blocked" : undefined}>
            {state.reason}
          </p>
        )}
      </form>
    </section>
  );
}

/**
 * DiagnosticResults is rule 14's collapsed diagnostic control: with results.display auto a durable
 * Result stays out of the conversation, and only the Development host lets a developer open it
 * here. It reads the Results when opened, never before.
 */
function DiagnosticResults({ api, taskId, tick }: { api: string; taskId: string; tick: number }) {
  const [open, setOpen] = useState(false);
  const [results, setResults] = useState<TaskResult[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (!open) return;
    get<Items<TaskResult>>(`${api}/tasks/${enc(taskId)}/results`).then(
      (r) => (setResults(r.items), setError(undefined)),
      (e) => setError((e as Error).message),
    );
  }, [api, taskId, open, tick]);
  return (
    <details className="diagnostics" data-diagnostics="results" onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Diagnostics: automatic Results (Development only)</summary>
      {error && <p className="state-note error">{error}</p>}
      {open && !results && !error && <Loading label="Loading the Results…" />}
      {results?.length === 0 && <p className="muted" data-state="no-result">No Result yet.</p>}
      {results?.map((r) => (
        <div key={r.id} className="diagnostic-result">
          {r.text && <Markdown className="text" text={r.text} />}
          {!r.text && r.output !== undefined && <pre>{JSON.stringify(r.output, null, 2)}</pre>}
        </div>
      ))}
    </details>
  );
}
