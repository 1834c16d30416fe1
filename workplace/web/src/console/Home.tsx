import { useCallback, useEffect, useState, type ReactNode } from "react";
import { ApiError, enc, get } from "../shared/api";
import { at, taskStateLabel, when } from "../shared/format";
import { Link } from "../shared/router";
import type { Items, Task, TaskState } from "../shared/types";
import type { ConsoleEnv } from "./App";
import type { Trigger } from "./triggers";

/** What the home page counts: at most this many of each kind are read. */
const TAKE = 100;
const DAY_MS = 24 * 60 * 60 * 1000;

const taskStates: TaskState[] = ["action-required", "running", "pending", "paused", "failed", "completed", "cancelled"];

interface FailedRun {
  id: string;
  flow: { name: string; version?: string };
  reason?: string;
  updatedAt: string;
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

interface Watched {
  metadata: { name: string; namespace?: string };
  definition?: { displayName?: string };
  status?: { conditions?: Condition[]; availability?: string };
}

interface WorkspaceLimits {
  requestsPerSecond: number;
  runsPerMinute: number;
  tokenRequestsPerSecond: number;
  tokenRunsPerMinute: number;
  recent: { windowMinutes: number; refused: number; lastRefusedAt?: string };
}

type Load<T> = { data?: T; error?: string };

/** limitText says a limit for people: 0 is no limit. */
const limitText = (n: number, unit: string) => (n > 0 ? `${n} ${unit}` : "no limit");

function useRead<T>(path: string | undefined, deps: unknown[]): [Load<T>, () => void] {
  const [state, setState] = useState<Load<T>>({});
  const load = useCallback(() => {
    if (!path) return;
    get<T>(path).then(
      (data) => setState({ data }),
      (e: unknown) =>
        setState({
          error: e instanceof ApiError ? (e.status === 403 ? "You have no permission to read this here." : e.unavailable ? "The platform API is unavailable." : e.message) : String(e),
        }),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [path, ...deps]);
  useEffect(load, [load]);
  return [state, load];
}

function Panel({ id, title, children, action }: { id: string; title: string; children: ReactNode; action?: ReactNode }) {
  return (
    <section className="card home-panel" aria-labelledby={`${id}-h`} data-panel={id}>
      <header>
        <h2 id={`${id}-h`}>{title}</h2>
        {action}
      </header>
      {children}
    </section>
  );
}

function Status<T>({ load, empty, children }: { load: Load<T>; empty: boolean; children: ReactNode }) {
  if (load.error) return <p className="state-note error" role="alert">{load.error}</p>;
  if (!load.data) return <p role="status" className="muted">Loading…</p>;
  if (empty) return null;
  return <>{children}</>;
}

const ready = (o: Watched) => o.status?.conditions?.find((c) => c.type === "Ready");

/**
 * nextFiring is a Trigger's next instant: "in 12 min" within the hour, else the date and time in
 * the Trigger's own zone, as the Triggers pages show it.
 */
function nextFiring(iso: string, timeZone?: string): string {
  const ahead = new Date(iso).getTime() - Date.now();
  return ahead < 3_600_000 ? when(iso) : at(iso, timeZone);
}

/** The Console's home answers "what needs me": questions, failures, what fires next, what is unhealthy. */
export function Home({ env }: { env: ConsoleEnv }) {
  const ws = env.context.workspace.name;
  const wsId = env.context.workspace.id;
  const workplace = (path: string) => new URL(path, env.workplaceUrl).toString();
  const [counts, setCounts] = useState<Load<Record<string, number>>>({});
  const [questions] = useRead<Items<Task>>(`/api/workspaces/${enc(ws)}/tasks?state=action-required&take=${TAKE}`, [wsId]);
  const [runs] = useRead<Items<FailedRun>>(env.can("runs/read") ? `/api/flowRuns?state=Failed&take=${TAKE}` : undefined, [wsId]);
  const [triggers] = useRead<Items<Trigger>>(env.can("resources/read") ? "/api/triggers" : undefined, [wsId]);
  const [vaults] = useRead<Items<Watched>>(env.can("resources/read") ? "/api/vaults" : undefined, [wsId]);
  const [providers] = useRead<Items<Watched>>(env.can("resources/read") ? "/api/modelproviders" : undefined, [wsId]);
  const [tools] = useRead<Items<Watched>>(env.can("resources/read") ? "/api/toolproviders" : undefined, [wsId]);
  const [limits] = useRead<WorkspaceLimits>(env.can("workspaces/read") ? `/api/workspaces/${enc(ws)}/limits` : undefined, [wsId]);

  useEffect(() => {
    let stop = false;
    Promise.all(taskStates.map((s) => get<Items<Task>>(`/api/workspaces/${enc(ws)}/tasks?state=${s}&take=${TAKE}`).then((l) => [s, l.items.length] as const))).then(
      (pairs) => !stop && setCounts({ data: Object.fromEntries(pairs) }),
      (e: unknown) => !stop && setCounts({ error: e instanceof ApiError ? e.message : String(e) }),
    );
    return () => {
      stop = true;
    };
  }, [ws, wsId]);

  const since = Date.now() - DAY_MS;
  const failed = (runs.data?.items ?? []).filter((r) => new Date(r.updatedAt).getTime() >= since);
  const next = (triggers.data?.items ?? [])
    .filter((t) => t.status?.nextFireTime)
    .sort((a, b) => (a.status!.nextFireTime! < b.status!.nextFireTime! ? -1 : 1))
    .slice(0, 5);
  const watched = [
    ...(vaults.data?.items ?? []).map((o) => ({ kind: "Vault", href: undefined, o })),
    ...(providers.data?.items ?? []).map((o) => ({ kind: "Model provider", href: undefined, o })),
    ...(tools.data?.items ?? []).map((o) => ({ kind: "Tool provider", href: undefined, o })),
  ];
  const unhealthy = watched.filter((w) => ready(w.o)?.status !== "True");
  const count = (n: number) => (n >= TAKE ? `${TAKE}+` : String(n));

  return (
    <>
      <h1>Home</h1>
      <p className="muted">
        What needs an operator in the workspace <strong>{env.context.workspace.displayName || ws}</strong> now. People delegate work in the{" "}
        <a href={env.workplaceUrl}>Workplace</a>.
      </p>
      <div className="home-grid">
        <Panel id="questions" title="Questions waiting" action={<Link href="/tasks">All Tasks</Link>}>
          <Status load={questions} empty={false}>
            {questions.data?.items.length === 0 ? (
              <p className="state-note info" data-state="empty">No Task waits for an answer.</p>
            ) : (
              <ul className="list attention-list" aria-label="Tasks waiting for an answer">
                {questions.data?.items.slice(0, 10).map((t) => (
                  <li key={t.id} data-task-id={t.id}>
                    <a href={workplace(`w/${enc(ws)}/tasks/${enc(t.id)}`)}>{t.title || "Untitled Task"}</a>
                    <span className="pill state-action-required">{taskStateLabel(t.state)}</span>
                    <span className="muted">{when(t.updatedAt)}</span>
                  </li>
                ))}
              </ul>
            )}
            {(questions.data?.items.length ?? 0) > 10 && <p className="muted">and {count(questions.data!.items.length - 10)} more.</p>}
          </Status>
        </Panel>

        <Panel id="task-states" title="Tasks by state">
          <Status load={counts} empty={false}>
            <dl className="counts">
              {taskStates.map((s) => (
                <div key={s} data-state={s} className={counts.data?.[s] ? "" : "zero"}>
                  <dt>{taskStateLabel(s)}</dt>
                  <dd>{count(counts.data?.[s] ?? 0)}</dd>
                </div>
              ))}
            </dl>
          </Status>
        </Panel>

        <Panel id="failed-runs" title="Failed runs, last 24 hours">
          {!env.can("runs/read") ? (
            <p className="muted">You have no permission to read runs here.</p>
          ) : (
            <Status load={runs} empty={false}>
              {failed.length === 0 ? (
                <p className="state-note info" data-state="empty">No run failed in the last 24 hours.</p>
              ) : (
                <ul className="list" aria-label="Failed runs">
                  {failed.slice(0, 10).map((r) => (
                    <li key={r.id} data-run-id={r.id}>
                      <Link href={`/runs/${enc(r.id)}`}>
                        {r.flow.name} {r.flow.version ?? ""}
                      </Link>
                      <span className="pill state-failed">Failed</span>
                      {r.reason && <span className="error">{r.reason}</span>}
                      <span className="muted">{when(r.updatedAt)}</span>
                    </li>
                  ))}
                </ul>
              )}
            </Status>
          )}
        </Panel>

        <Panel id="next-firings" title="Next Trigger firings" action={<Link href="/triggers">All Triggers</Link>}>
          {!env.can("resources/read") ? (
            <p className="muted">You have no permission to read Triggers here.</p>
          ) : (
            <Status load={triggers} empty={false}>
              {next.length === 0 ? (
                <p className="state-note info" data-state="empty">No Trigger is due to fire.</p>
              ) : (
                <ul className="list" aria-label="Next Trigger firings">
                  {next.map((t) => (
                    <li key={`${t.status?.namespace ?? ""}/${t.metadata.name}`}>
                      <Link href={`/triggers/${enc(t.metadata.name)}`}>{t.definition.displayName || t.metadata.name}</Link>
                      <time className="muted" dateTime={t.status!.nextFireTime}>
                        {nextFiring(t.status!.nextFireTime!, t.definition.source.schedule?.timeZone)}
                      </time>
                    </li>
                  ))}
                </ul>
              )}
            </Status>
          )}
        </Panel>

        <Panel id="limits" title="Rate limits">
          {!env.can("workspaces/read") ? (
            <p className="muted">You have no permission to read the workspace's limits.</p>
          ) : (
            <Status load={limits} empty={false}>
              {limits.data && (
                <>
                  {limits.data.recent.refused === 0 ? (
                    <p className="state-note info" data-state="not-limited">
                      No request was refused in the last {limits.data.recent.windowMinutes} minutes.
                    </p>
                  ) : (
                    <p className="state-note warn" data-state="limited" role="status">
                      {limits.data.recent.refused} {limits.data.recent.refused === 1 ? "request was" : "requests were"} refused (429) in the last{" "}
                      {limits.data.recent.windowMinutes} minutes
                      {limits.data.recent.lastRefusedAt ? `, the latest ${when(limits.data.recent.lastRefusedAt)}` : ""}.
                    </p>
                  )}
                  <dl className="counts">
                    <div>
                      <dt>Workspace requests</dt>
                      <dd>{limitText(limits.data.requestsPerSecond, "/ s")}</dd>
                    </div>
                    <div>
                      <dt>Workspace runs</dt>
                      <dd>{limitText(limits.data.runsPerMinute, "/ min")}</dd>
                    </div>
                    <div>
                      <dt>Token requests</dt>
                      <dd>{limitText(limits.data.tokenRequestsPerSecond, "/ s")}</dd>
                    </div>
                    <div>
                      <dt>Token runs</dt>
                      <dd>{limitText(limits.data.tokenRunsPerMinute, "/ min")}</dd>
                    </div>
                  </dl>
                </>
              )}
            </Status>
          )}
        </Panel>

        <Panel id="health" title="Vaults and providers">
          {!env.can("resources/read") ? (
            <p className="muted">You have no permission to read them here.</p>
          ) : (
            <Status<unknown> load={vaults.error ? vaults : providers.error ? providers : vaults.data && providers.data ? { data: true } : {}} empty={false}>
              {watched.length === 0 ? (
                <p className="state-note info" data-state="empty">No Vault or provider in this workspace.</p>
              ) : (
                <>
                  <p data-state={unhealthy.length ? "unhealthy" : "healthy"} className={unhealthy.length ? "state-note warn" : "state-note info"}>
                    {unhealthy.length === 0 ? (watched.length === 1 ? "It is ready." : `All ${watched.length} are ready.`) : `${unhealthy.length} of ${watched.length} are not ready.`}
                  </p>
                  <ul className="list" aria-label="Vaults and providers">
                    {watched.map(({ kind, o }) => {
                      const c = ready(o);
                      const ok = c?.status === "True";
                      return (
                        <li key={`${kind}/${o.metadata.name}`} className={ok ? "" : "attention"}>
                          <span>
                            {kind} <strong>{o.definition?.displayName || o.metadata.name}</strong>
                          </span>
                          <span className={`pill ${ok ? "state-completed" : "state-failed"}`}>{ok ? "Ready" : c ? (c.reason ?? "Not ready") : "Not reported yet"}</span>
                          {!ok && c?.message && <span className="muted">{c.message}</span>}
                        </li>
                      );
                    })}
                  </ul>
                </>
              )}
            </Status>
          )}
        </Panel>
      </div>
    </>
  );
}
