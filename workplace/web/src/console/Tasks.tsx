import { useCallback, useEffect, useRef, useState } from "react";
import { ApiError, enc, get } from "../shared/api";
import { taskStateLabel, when } from "../shared/format";
import { connectHub, type LiveState } from "../shared/hub";
import { QuestionCard } from "../shared/questions";
import type { Items, Task } from "../shared/types";
import type { ConsoleEnv } from "./App";

const PAGE = 20;

/**
 * Rule 19: a paginated projection of the workspace's real Tasks, live. When the Work API does not
 * answer, the page says so and shows no Task at all: never a stale or invented list.
 */
export function Tasks({ env }: { env: ConsoleEnv }) {
  const ws = env.context.workspace.name;
  const [pages, setPages] = useState<string[]>([""]);
  const [tasks, setTasks] = useState<Task[]>();
  const [error, setError] = useState<string>();
  const [live, setLive] = useState<LiveState>("connecting");
  const [hasMore, setHasMore] = useState(false);
  const cursor = pages[pages.length - 1];
  const cursorRef = useRef(cursor);
  cursorRef.current = cursor;

  const load = useCallback(async () => {
    try {
      const before = cursorRef.current ? `&before=${enc(cursorRef.current)}` : "";
      const list = await get<Items<Task>>(`/api/workspaces/${enc(ws)}/tasks?take=${PAGE + 1}${before}`);
      setHasMore(list.items.length > PAGE);
      setTasks(list.items.slice(0, PAGE));
      setError(undefined);
    } catch (e) {
      setTasks(undefined);
      setError(
        e instanceof ApiError && e.unavailable
          ? "The Work API is unavailable, so no Task is shown. The list comes back when it answers again."
          : `The Tasks cannot be read: ${e instanceof ApiError ? e.message : String(e)}`,
      );
    }
  }, [ws]);

  useEffect(() => {
    void load();
  }, [load, cursor]);

  useEffect(
    () =>
      connectHub({
        url: "/hubs/workplace",
        workspaceId: env.context.workspace.id,
        onState: setLive,
        onJoined: () => void load(),
        onEvent: (e) => {
          if (e.name.startsWith("Task") || e.name.startsWith("PendingAction")) void load();
        },
      }),
    [env.context.workspace.id, load],
  );

  const workplace = (path: string) => new URL(path, env.workplaceUrl).toString();

  return (
    <>
      <div className="toolbar">
        <h1>Tasks</h1>
        <span className={`live live-${live}`} role="status">
          {live === "connected" ? "Live" : "Live updates disconnected"}
        </span>
        <button type="button" onClick={() => void load()}>Refresh</button>
      </div>
      {error && (
        <p className="state-note error" role="alert" data-state="api-unavailable">
          {error}
        </p>
      )}
      {!tasks && !error && <p role="status">Loading Tasks…</p>}
      {tasks && tasks.length === 0 && <p className="state-note info" data-state="empty">No Task in this workspace{cursor ? " before this page" : ""}.</p>}
      {tasks && tasks.length > 0 && (
        <table aria-label="Tasks">
          <thead>
            <tr>
              <th scope="col">Task</th>
              <th scope="col">State</th>
              <th scope="col">Updated</th>
              <th scope="col">Conversation</th>
            </tr>
          </thead>
          <tbody>
            {tasks.map((t) => (
              <tr key={t.id} data-task-id={t.id}>
                <td>
                  <a href={workplace(`w/${enc(ws)}/tasks/${enc(t.id)}`)}>{t.title}</a>
                  {t.reason && <div className="muted">{t.reason}</div>}
                  {/* A question of the Task is answered here: an autonomous Task's on the Task, a conversation's with a fresh token. */}
                  {t.pendingActions?.map((q) => (
                    <QuestionCard key={q.id} place={{ api: `/api/workspaces/${enc(ws)}`, workspace: ws, interactionId: t.interactionId, taskId: t.id }} action={q} onAnswered={() => void load()} />
                  ))}
                </td>
                <td>
                  <span className={`pill state-${t.state}`}>{taskStateLabel(t.state, t.pendingActions)}</span>
                </td>
                <td>{when(t.updatedAt)}</td>
                <td>{t.interactionId ? <a href={workplace(`w/${enc(ws)}?c=${enc(t.interactionId)}`)}>Open in the Workplace</a> : <span className="muted">Autonomous</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div className="toolbar" aria-label="Pages">
        <button type="button" disabled={pages.length === 1} onClick={() => setPages((p) => p.slice(0, -1))}>Newer</button>
        <span className="muted">Page {pages.length}</span>
        <button type="button" disabled={!hasMore || !tasks} onClick={() => tasks && setPages((p) => [...p, tasks[tasks.length - 1].updatedAt])}>Older</button>
      </div>
    </>
  );
}
