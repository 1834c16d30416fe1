import { useCallback, useEffect, useId, useRef, useState, type KeyboardEvent } from "react";
import { ApiError, enc, get, post } from "../shared/api";
import { taskStateLabel } from "../shared/format";
import { Link } from "../shared/router";
import type { Activity, Exchange, Items, Message, PendingAction } from "../shared/types";
import { Loading, StateNote } from "./components";
import { bytesToBase64, composerState, sendShortcut } from "./presentation";
import { forgetResumeToken, rememberResumeToken, resumeToken } from "./session";
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
}

/** The active conversation (rules 5, 9, 11, 13): messages, inline questions, the Task reference and the permanent composer. */
export function Conversation({ api, interactionId, workspace, tick, live, onNewRequest, onChanged, onApiDown, onTask }: Props) {
  const base = `${api}/interactions/${enc(interactionId)}`;
  const [exchange, setExchange] = useState<Exchange>();
  const [messages, setMessages] = useState<Message[]>();
  const [progress, setProgress] = useState<Activity[]>([]);
  const [loadError, setLoadError] = useState<string>();
  const [notice, setNotice] = useState<{ state: string; text: string; tone: "warn" | "error" }>();
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
    rememberResumeToken(interactionId, x.resumeToken);
    setNotice(undefined);
    onChanged();
    void load();
  };

  const fail = (e: unknown, answering: boolean) => {
    if (e instanceof ApiError && e.unavailable) {
      onApiDown(e.message);
      setNotice({ state: "api-unavailable", text: "The platform API is unavailable; nothing was sent. Try again in a moment.", tone: "error" });
    } else if (e instanceof ApiError && e.status === 409 && answering) {
      setNotice({ state: "expired-action", text: "This question is no longer open: it expired or was already answered. The conversation was refreshed.", tone: "warn" });
      void load();
    } else if (e instanceof ApiError && e.status === 400 && answering && !resumeToken(interactionId)) {
      setNotice({
        state: "expired-action",
        text: "This question was asked to another page (or before this page was reloaded): only that page can answer it. Cancel the Task or start a new request.",
        tone: "warn",
      });
    } else {
      setNotice({ state: "failure", text: e instanceof ApiError ? e.message : String(e), tone: "error" });
    }
  };

  const answer = async (action: PendingAction, body: Record<string, unknown>) => {
    setBusy(true);
    try {
      const token = resumeToken(interactionId);
      const x = await post<Exchange>(`${base}/pending-actions/${enc(action.id)}/responses?waitSeconds=5`, { ...body, resumeToken: token });
      forgetResumeToken(interactionId);
      after(x);
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
  const open = action?.pendingAction && action.pendingAction.status === "created" ? action.pendingAction : undefined;
  const state = composerState(i, busy);
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
            <strong>{task.title}</strong> <span className={`pill state-${task.state}`}>{taskStateLabel(task.state)}</span>
          </div>
          {currentActivity && !["completed", "failed", "cancelled"].includes(task.state) && (
            <p className="progress" role="status">
              <span className="spinner" aria-hidden="true" /> {currentActivity.phase === "waiting" ? "Waiting for your answer" : currentActivity.label}
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
            {m.kind === "question" && m.question && (!open || m.question.pendingActionId !== open.id) && <span className="muted tag">Answered or closed</span>}
          </li>
        ))}
        {open && !messages.some((m) => m.question?.pendingActionId === open.id) && (
          <li className="message role-platform kind-question">
            <p className="text">{open.prompt}</p>
            <PendingActionControls action={open} busy={busy} onAnswer={(body) => void answer(open, body)} />
          </li>
        )}
        {action?.type === "working" && !currentActivity && (
          <li className="message role-platform waiting" role="status">
            <span className="spinner" aria-hidden="true" /> Working on it…
          </li>
        )}
      </ol>

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
          aria-describedby={state.reason ? `${composerId}-why` : undefined}
        />
        <button type="submit" className="primary" disabled={state.disabled || !draft.trim()}>
          Send
        </button>
        {state.reason && (
          <p id={`${composerId}-why`} className="composer-why" data-state={i.blocked ? "blocked" : undefined}>
            {state.reason}
          </p>
        )}
      </form>
    </section>
  );
}

/** Rule 9: a choice is one-click buttons, a confirmation one click, an input a small inline composer; files and approvals inline too. */
function PendingActionControls({ action, busy, onAnswer }: { action: PendingAction; busy: boolean; onAnswer: (body: Record<string, unknown>) => void }) {
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
    case "approval":
      return (
        <div className="actions approval" role="group" aria-label={action.prompt}>
          <label htmlFor={`${id}-reason`}>Reason (optional)</label>
          <input id={`${id}-reason`} value={reason} onChange={(e) => setReason(e.target.value)} disabled={busy} maxLength={2048} />
          <button type="button" className="primary" disabled={busy} onClick={() => onAnswer({ approved: true, reason })}>
            Approve
          </button>
          <button type="button" disabled={busy} onClick={() => onAnswer({ approved: false, reason })}>
            Reject
          </button>
        </div>
      );
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
