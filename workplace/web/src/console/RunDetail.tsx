import { useEffect, useMemo, useState } from "react";
import { ApiError, enc, get } from "../shared/api";
import { when } from "../shared/format";
import { ResultView } from "../shared/markdown";
import { stream } from "../shared/sse";
import type { ConsoleEnv } from "./App";
import { NODE_H, NODE_W, flowGraph, layoutGraph } from "./graph";
import { usageSentence, type UsageTotals } from "../shared/usage";

interface FlowRun {
  id: string;
  state: string;
  flow: { name: string; version: string; digest?: string };
  currentStep?: string;
  attempt?: number;
  reason?: string;
  parentFlowRunId?: string;
  correlation?: { interactionId?: string; workTaskId?: string };
  /** escalatedAt: nobody answered in time and it went to the workspace's Owners and Admins, until expiresAt. */
  pendingAction?: { kind: string; prompt: string; status: string; expiresAt?: string; escalatedAt?: string };
  /** The Output step's result: the last step's output and the Flow's closing message. */
  result?: { output?: unknown; message?: string };
  /** What its model calls used (absent from a server that does not record usage). */
  usage?: UsageTotals;
  /** The usage of each step that called a model. */
  steps?: { name: string; usage?: UsageTotals }[];
  createdAt: string;
  updatedAt: string;
}

interface RunEvent {
  seq: number;
  type: string;
  step?: string;
  attempt?: number;
  state?: string;
  reason?: string;
  createdAt: string;
}

/** A FlowRun's detail: its live event stream (replayed from its history) and its Flow graph with the current step. */
export function RunDetail({ env, runId }: { env: ConsoleEnv; runId: string }) {
  const [run, setRun] = useState<FlowRun>();
  const [snapshot, setSnapshot] = useState<unknown>();
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [streamState, setStreamState] = useState("connecting");
  const [error, setError] = useState<string>();

  useEffect(() => {
    get<FlowRun>(`/api/flowRuns/${enc(runId)}`).then(
      (r) => {
        setRun(r);
        get<{ definition: { snapshot: unknown } }>(`/api/flows/${enc(r.flow.name)}/versions/${enc(r.flow.version)}`).then(
          (v) => setSnapshot(v.definition.snapshot),
          () => setSnapshot(null),
        );
      },
      (e: ApiError) => setError(e.status === 404 ? "This run does not exist in this workspace." : e.message),
    );
  }, [runId]);

  useEffect(() => {
    const abort = new AbortController();
    void stream(
      `/api/flowRuns/${enc(runId)}/stream`,
      {
        onState: (s, detail) => setStreamState(detail && s === "failed" ? `failed: ${detail}` : s),
        onEvent: (e) => {
          try {
            const ev = JSON.parse(e.data) as RunEvent;
            setEvents((old) => (old.some((o) => o.seq === ev.seq) ? old : [...old, ev]));
          } catch {
            // not an event of the run's history
          }
        },
      },
      abort.signal,
    );
    return () => abort.abort();
  }, [runId]);

  const last = events[events.length - 1];
  const state = last?.state ?? run?.state;
  const terminal = state === "Completed" || state === "Failed" || state === "Cancelled";
  const current = terminal ? undefined : ([...events].reverse().find((e) => e.step)?.step ?? run?.currentStep);
  const done = useMemo(() => new Set(events.filter((e) => e.type === "StepCompleted" && e.step).map((e) => e.step!)), [events]);
  const graph = useMemo(() => {
    if (snapshot === undefined) return undefined;
    const g = flowGraph(snapshot, events.map((e) => e.step).filter((s): s is string => !!s));
    return layoutGraph(g.steps, g.edges);
  }, [snapshot, events]);

  if (error) return <p className="state-note error" role="alert">{error}</p>;
  if (!run) return <p role="status">Loading the run…</p>;
  return (
    <>
      <h1>
        Run of {run.flow.name} {run.flow.version}
      </h1>
      <dl className="card">
        <dt>State</dt>
        <dd data-run-state={state}>{state}</dd>
        <dt>Current step</dt>
        <dd data-current-step={current ?? ""}>{current ?? (terminal ? "none: the run ended" : "—")}</dd>
        {run.pendingAction && run.pendingAction.status === "created" && !terminal && (
          <>
            <dt>Waiting for</dt>
            <dd>
              {run.pendingAction.kind}: {run.pendingAction.prompt}
              {run.pendingAction.escalatedAt && (
                <p className="muted" data-escalated>
                  <span className="pill escalated">Escalated</span> {when(run.pendingAction.escalatedAt)} to the workspace's Owners and Admins: nobody answered in
                  time, and only they may answer it now.
                  {run.pendingAction.expiresAt ? ` If nobody does by ${new Date(run.pendingAction.expiresAt).toLocaleString([], { dateStyle: "medium", timeStyle: "short" })}, the run fails.` : ""}
                </p>
              )}
            </dd>
          </>
        )}
        <dt>Task</dt>
        <dd data-field="task">
          {run.correlation?.workTaskId ? (
            <a href={new URL(`w/${enc(env.context.workspace.name)}/tasks/${enc(run.correlation.workTaskId)}`, env.workplaceUrl).toString()}>Open the Task in the Workplace</a>
          ) : (
            <span className="muted">none: this run serves no public Task</span>
          )}
        </dd>
        {run.usage && (
          <>
            <dt>Usage</dt>
            <dd data-field="usage">
              {usageSentence(run.usage)}
              {(run.steps ?? []).filter((st) => st.usage?.modelCalls).length > 1 && (
                <ul className="step-usage">
                  {run.steps!.filter((st) => st.usage?.modelCalls).map((st) => (
                    <li key={st.name} data-step={st.name}>
                      Step <code>{st.name}</code>: {usageSentence(st.usage)}
                    </li>
                  ))}
                </ul>
              )}
            </dd>
          </>
        )}
        <dt>Started</dt>
        <dd>{when(run.createdAt)}</dd>
        <dt>Run id</dt>
        <dd><code>{run.id}</code></dd>
      </dl>
      <section aria-labelledby="result-h" className="card run-result" data-field="result">
        <h2 id="result-h">Result</h2>
        <RunResult state={state} result={run.result} reason={run.reason} />
      </section>
      <section aria-labelledby="graph-h">
        <h2 id="graph-h">Flow graph</h2>
        {!graph ? (
          <p role="status">Loading the Flow…</p>
        ) : (
          <svg className="graph" viewBox={`0 0 ${graph.width} ${graph.height}`} width={graph.width} role="img" aria-label={`Flow graph, current step ${current ?? "none"}`}>
            <defs>
              <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
                <path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor" />
              </marker>
            </defs>
            {graph.edges.map((e, i) => (
              <path key={i} className="edge" markerEnd="url(#arrow)" d={`M ${e.from.x + NODE_W} ${e.from.y + NODE_H / 2} C ${e.from.x + NODE_W + 25} ${e.from.y + NODE_H / 2}, ${e.to.x - 25} ${e.to.y + NODE_H / 2}, ${e.to.x} ${e.to.y + NODE_H / 2}`} />
            ))}
            {graph.nodes.map((n) => (
              <g key={n.name} className={`node ${n.name === current ? "current" : ""} ${done.has(n.name) ? "done" : ""}`} data-step={n.name} transform={`translate(${n.x} ${n.y})`}>
                <rect width={NODE_W} height={NODE_H} rx="8" />
                <text x={NODE_W / 2} y={NODE_H / 2 + 4} textAnchor="middle">
                  {n.label.length > 22 ? `${n.label.slice(0, 21)}…` : n.label}
                </text>
                <title>{`${n.label}${n.type ? ` (${n.type})` : ""}${n.name === current ? ", current step" : done.has(n.name) ? ", done" : ""}`}</title>
              </g>
            ))}
          </svg>
        )}
      </section>
      <section aria-labelledby="events-h">
        <h2 id="events-h">
          Events <span className="muted">(stream {streamState})</span>
        </h2>
        <ol className="events" aria-live="polite">
          {events.map((e) => (
            <li key={e.seq} data-event={e.type}>
              <strong>{e.type}</strong> {e.step && <>step {e.step}</>} {e.state && <span className="muted">→ {e.state}</span>} {e.reason && <span className="error">{e.reason}</span>}{" "}
              <span className="muted">{when(e.createdAt)}</span>
            </li>
          ))}
        </ol>
      </section>
      {env.context.platformAdministrator && <CapturedRequests contains={runId} />}
    </>
  );
}

interface Captured {
  id: number;
  at: string;
  method: string;
  path: string;
  query?: string;
  status: number;
  durationMillis: number;
  requestBody?: string;
  requestTruncated?: boolean;
  responseBody?: string;
  responseTruncated?: boolean;
}

/**
 * CapturedRequests is HTTP payload capture's view for Platform administrators (Development only:
 * the route does not exist elsewhere, and then nothing is shown): the exchanges that mention this
 * run, collapsed, bounded and redacted by the server.
 */
function CapturedRequests({ contains }: { contains: string }) {
  const [items, setItems] = useState<Captured[]>();
  const [open, setOpen] = useState(false);
  useEffect(() => {
    get<{ items: Captured[] }>(`/api/diagnostics/requests?contains=${enc(contains)}&take=50`).then(
      (r) => setItems(r.items),
      () => setItems(undefined),
    );
  }, [contains, open]);
  if (!items) return null;
  return (
    <details className="diagnostics" data-diagnostics="requests" onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Captured requests (Development only): {items.length}</summary>
      {items.length === 0 && <p className="muted">No captured request mentions this run.</p>}
      <ol className="captured">
        {items.map((c) => (
          <li key={c.id}>
            <strong>
              {c.method} {c.path}
              {c.query ? `?${c.query}` : ""}
            </strong>{" "}
            <span className="muted">
              → {c.status}, {c.durationMillis} ms, {when(c.at)}
            </span>
            {c.requestBody && (
              <pre aria-label="Request body">
                {c.requestBody}
                {c.requestTruncated ? " …(cut)" : ""}
              </pre>
            )}
            {c.responseBody && (
              <pre aria-label="Response body">
                {c.responseBody}
                {c.responseTruncated ? " …(cut)" : ""}
              </pre>
            )}
          </li>
        ))}
      </ol>
    </details>
  );
}

/** The run's Result as people read it: an agent's answer as Markdown, else the Flow's closing message, else the output as what it is. */
function RunResult({ state, result, reason }: { state?: string; result: FlowRun["result"]; reason?: string }) {
  if (state === "Failed") return <p className="state-note error">The run failed{reason ? `: ${reason}` : ""}. It has no Result.</p>;
  if (state === "Cancelled") return <p className="state-note warn">The run was cancelled. It has no Result.</p>;
  if (!result) return <p className="muted">{state === "Completed" ? "The run completed without a Result." : "No Result yet: the run has not completed."}</p>;
  const out = result.output;
  const answer = out && typeof out === "object" && !Array.isArray(out) ? (out as { text?: unknown }).text : undefined;
  if (typeof answer === "string" && answer) return <ResultView text={answer} />;
  if (result.message) return <ResultView text={result.message} />;
  return <ResultView output={out} />;
}
