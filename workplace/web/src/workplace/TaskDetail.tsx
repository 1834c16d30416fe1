import { useCallback, useEffect, useState } from "react";
import { ApiError, enc, get, post } from "../shared/api";
import { size, taskStateLabel, waitingLine, waitsFor, when } from "../shared/format";
import { Link } from "../shared/router";
import type { Activity, Artifact, Items, Message, Task, TaskResult } from "../shared/types";
import { ResultView } from "../shared/markdown";
import { QuestionCard } from "../shared/questions";
import { Loading, StateNote } from "./components";
import { foldSteps } from "./presentation";
import { usageSentence } from "../shared/usage";
import { bearerToken } from "./session";

interface Props {
  api: string;
  workspace: string;
  taskId: string;
  tick: number;
  backHref: string;
  onChanged: () => void;
  onApiDown: (detail: string) => void;
  /** Whether the reader may run work here (runs/execute): pause, resume and cancel need it. */
  mayRun?: boolean;
}

interface Detail {
  task: Task;
  activities: Activity[];
  results: TaskResult[];
  artifacts: Artifact[];
  context?: Message[];
}

/**
 * Rule 15: finished steps folded, the current step, the conversation's context, readable results,
 * artifact cards, and pause, resume or cancel only where they apply. No run id, node name,
 * storage key or raw JSON is shown.
 */
export function TaskDetail({ api, workspace, taskId, tick, backHref, onChanged, onApiDown, mayRun = true }: Props) {
  const base = `${api}/tasks/${enc(taskId)}`;
  const [detail, setDetail] = useState<Detail>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<string>();

  const load = useCallback(async () => {
    try {
      const task = await get<Task>(base);
      const [a, r, f] = await Promise.all([
        get<Items<Activity>>(`${base}/activities?detail=detailed`),
        get<Items<TaskResult>>(`${base}/results`),
        get<Items<Artifact>>(`${base}/artifacts`),
      ]);
      let context: Message[] | undefined;
      if (task.interactionId) {
        context = (await get<Items<Message>>(`${api}/interactions/${enc(task.interactionId)}/messages?take=200`).catch(() => ({ items: [] }))).items.filter(
          (m) => m.role === "User",
        );
      }
      setDetail({ task, activities: a.items, results: r.items, artifacts: f.items, context });
      setError(undefined);
    } catch (e) {
      if (e instanceof ApiError && e.unavailable) onApiDown(e.message);
      else setError(e instanceof ApiError && e.status === 404 ? "This Task does not exist in this workspace (it may have been deleted)." : (e as Error).message);
    }
  }, [api, base, onApiDown]);

  useEffect(() => {
    void load();
  }, [load, tick]);

  // Followed over REST while it works (the hub, when connected, refreshes it too).
  useEffect(() => {
    if (!detail || ["completed", "failed", "cancelled", "paused"].includes(detail.task.state)) return;
    const t = setTimeout(() => void load(), 2000);
    return () => clearTimeout(t);
  }, [detail, load]);

  const act = async (op: "pause" | "resume" | "cancel") => {
    setBusy(true);
    setNotice(undefined);
    try {
      await post<Task>(`${base}/${op}`);
      onChanged();
      await load();
    } catch (e) {
      if (e instanceof ApiError && e.unavailable) onApiDown(e.message);
      setNotice(e instanceof ApiError ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  const download = async (a: Artifact) => {
    // A bearer token cannot ride on a plain link: fetch the bytes and hand them to the browser.
    const resp = await fetch(`${base}/artifacts/${enc(a.id)}/content`, { headers: { Authorization: `Bearer ${bearerToken()}` } });
    const url = URL.createObjectURL(await resp.blob());
    const link = document.createElement("a");
    link.href = url;
    link.download = a.name;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };

  if (error)
    return (
      <div className="task-detail">
        <Link href={backHref}>← Back to the Dashboard</Link>
        <StateNote state="failure" tone="error">{error}</StateNote>
      </div>
    );
  if (!detail) return <Loading label="Loading the Task…" />;
  const { task, activities, results, artifacts, context } = detail;
  const { finished, current } = foldSteps(activities);
  // Questions the reader may not answer wait for an administrator (escalated) or for someone who
  // may answer (a reader who may only follow the work).
  const waiting = waitsFor(task.pendingActions);
  const readable = results.filter((r) => r.text || (r.output !== null && typeof r.output === "object"));

  return (
    <article className="task-detail" aria-labelledby="task-title" data-task-state={task.state}>
      <Link href={backHref}>← Back to the Dashboard</Link>
      <header>
        <h1 id="task-title">{task.title}</h1>
        <span className={`pill state-${task.state}`}>{taskStateLabel(task.state, task.pendingActions)}</span>
        <span className="muted">Started {when(task.createdAt)}{task.endedAt ? ` · ended ${when(task.endedAt)}` : ""}</span>
      </header>
      {task.state === "failed" && <StateNote state="failure" tone="error">This Task failed{task.reason ? `: ${task.reason}` : "."}</StateNote>}
      {task.state === "cancelled" && <StateNote state="cancellation" tone="warn">This Task was cancelled{task.reason ? `: ${task.reason}` : "."}</StateNote>}

      {mayRun && (task.actions.pause || task.actions.resume || task.actions.cancel) && (
        <div className="actions" role="group" aria-label="Task actions">
          {task.actions.pause && <button type="button" disabled={busy} onClick={() => void act("pause")}>Pause</button>}
          {task.actions.resume && <button type="button" className="primary" disabled={busy} onClick={() => void act("resume")}>Resume</button>}
          {task.actions.cancel && <button type="button" className="danger" disabled={busy} onClick={() => void act("cancel")}>Cancel Task</button>}
        </div>
      )}
      {notice && <p className="state-note error" role="alert" data-state="failure">{notice}</p>}

      {task.pendingActions && task.pendingActions.length > 0 && (
        <section aria-labelledby="questions-h" className="questions">
          <h2 id="questions-h">{task.pendingActions.every((q) => q.mayAnswer === false) ? (task.pendingActions.length === 1 ? "Its question" : "Its questions") : task.pendingActions.length === 1 ? "A question for you" : "Questions for you"}</h2>
          {task.pendingActions.map((q) => (
            <QuestionCard
              key={q.id}
              place={{ api, workspace, interactionId: task.interactionId, taskId: task.id }}
              action={q}
              onApiDown={onApiDown}
              onAnswered={() => (onChanged(), void load())}
            />
          ))}
        </section>
      )}

      <section aria-labelledby="progress-h">
        <h2 id="progress-h">Progress</h2>
        {current ? (
          <p className="current-step" role="status">
            {current.state !== "waiting" && <span className="spinner" aria-hidden="true" />}{" "}
            {current.state === "waiting" ? `${waitingLine(waiting)}: ${current.label}` : current.label}
            {current.participant && <span className="muted"> ({current.participant})</span>}
          </p>
        ) : (
          !["completed", "failed", "cancelled"].includes(task.state) && <p className="muted">{task.state === "paused" ? "Paused." : "Starting…"}</p>
        )}
        {finished.length > 0 ? (
          <details>
            <summary>{finished.length === 1 ? "1 finished step" : `${finished.length} finished steps`}</summary>
            <ol className="steps">
              {finished.map((s, n) => (
                <li key={n} data-step-state={s.state}>
                  {s.label}
                  {s.participant && <span className="muted"> ({s.participant})</span>}
                  {s.state !== "finished" && <span className="muted"> — {s.state}</span>}
                </li>
              ))}
            </ol>
          </details>
        ) : (
          <p className="muted">No finished step yet.</p>
        )}
      </section>

      {task.usage && (
        <section aria-labelledby="usage-h" data-section="usage">
          <h2 id="usage-h">Usage</h2>
          <p className="task-usage">{usageSentence(task.usage)}</p>
        </section>
      )}

      {context && (
        <section aria-labelledby="context-h">
          <h2 id="context-h">Conversation</h2>
          {context.length > 0 ? (
            <ul className="context">
              {context.map((m) => (
                <li key={m.id}>{m.text}</li>
              ))}
            </ul>
          ) : (
            <p className="muted">No message yet.</p>
          )}
          <Link href={`${backHref}?c=${enc(task.interactionId!)}`}>Open the conversation</Link>
        </section>
      )}

      <section aria-labelledby="results-h">
        <h2 id="results-h">Results</h2>
        {readable.length === 0 ? (
          <StateNote state="no-result">{["completed", "failed", "cancelled"].includes(task.state) ? "This Task has no result." : "No result yet."}</StateNote>
        ) : (
          readable.map((r) => (
            <div className="result" key={r.id}>
              <ResultView text={r.text} output={r.output} />
              <span className="muted">{when(r.createdAt)}</span>
            </div>
          ))
        )}
      </section>

      <section aria-labelledby="artifacts-h">
        <h2 id="artifacts-h">Artifacts</h2>
        {artifacts.length === 0 ? (
          <StateNote state="no-artifact">This Task produced no artifact.</StateNote>
        ) : (
          <ul className="artifacts">
            {artifacts.map((a) => (
              <li key={a.id} className="artifact-card">
                <strong>{a.name}</strong>
                <span className="muted">
                  {a.mediaType} · {size(a.length)}
                </span>
                {bearerToken() ? (
                  <button type="button" onClick={() => void download(a)}>Download {a.name}</button>
                ) : (
                  <a href={`${base}/artifacts/${enc(a.id)}/content`} download={a.name}>Download {a.name}</a>
                )}
              </li>
            ))}
          </ul>
        )}
      </section>
    </article>
  );
}
