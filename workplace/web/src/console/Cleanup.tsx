import type React from "react";
import { useCallback, useEffect, useState } from "react";
import { ApiError, del, enc, get, requestWithETag } from "../shared/api";
import { taskStateLabel, when } from "../shared/format";
import { Link } from "../shared/router";
import type { Items, Task } from "../shared/types";
import type { ConsoleEnv } from "./App";
import { keyOf, retained, runCleanup, summary, type CleanupItem, type CleanupKind, type CleanupOutcome } from "./cleanup";

interface FlowRun {
  id: string;
  state: string;
  flow: { name: string; version: string };
  correlation?: { workTaskId?: string; interactionId?: string };
  version: number;
  createdAt: string;
}

interface Resource {
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  definition?: { displayName?: string };
  systemManaged?: boolean;
}

interface Lists {
  tasks: Task[];
  runs: FlowRun[];
  entries: Resource[];
  flows: Resource[];
  agents: Resource[];
}

const kindLabels: Record<CleanupKind, string> = { task: "Task", run: "run", entry: "Entry", flow: "Flow", agent: "Agent" };

const quote = (v: string | number) => `"${v}"`;

/** Rule 20: workspace cleanup. */
export function Cleanup({ env }: { env: ConsoleEnv }) {
  const ws = env.context.workspace.name;
  const allowed = env.can("resources/delete") && env.can("runs/delete");
  const [lists, setLists] = useState<Lists>();
  const [error, setError] = useState<string>();
  const [selected, setSelected] = useState<Map<string, CleanupItem>>(new Map());
  const [removeDashboardReferences, setRemoveDashboardReferences] = useState(false);
  const [closeInteractions, setCloseInteractions] = useState(false);
  const [systemFlows, setSystemFlows] = useState(false);
  const [running, setRunning] = useState(false);
  const [outcomes, setOutcomes] = useState<CleanupOutcome[]>();

  const load = useCallback(async () => {
    try {
      const [tasks, runs, entries, flows, agents] = await Promise.all([
        get<Items<Task>>(`/api/workspaces/${enc(ws)}/tasks?state=completed,failed,cancelled&take=100`),
        get<Items<FlowRun>>(`/api/flowRuns?state=Completed,Failed,Cancelled&take=100`),
        get<Items<Resource>>(`/api/entry-drafts`),
        get<Items<Resource>>(`/api/flows`),
        get<Items<Resource>>(`/api/agents`),
      ]);
      // A Task's runs go with the Task; the other runs are technical and listed apart.
      const taskIds = new Set(tasks.items.map((t) => t.id));
      setLists({
        tasks: tasks.items,
        runs: runs.items.filter((r) => !r.correlation?.workTaskId || !taskIds.has(r.correlation.workTaskId)),
        entries: entries.items,
        flows: flows.items,
        agents: agents.items,
      });
      setError(undefined);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    }
  }, [ws]);

  useEffect(() => {
    void load();
  }, [load]);

  const toggle = (item: CleanupItem) =>
    setSelected((old) => {
      const next = new Map(old);
      if (next.has(keyOf(item))) next.delete(keyOf(item));
      else next.set(keyOf(item), item);
      return next;
    });

  const remove = async (item: CleanupItem) => {
    switch (item.kind) {
      case "task":
        return del(`/api/workspaces/${enc(ws)}/tasks/${enc(item.id)}`, { "If-Match": quote(item.version!) });
      case "run":
        return del(`/api/flowRuns/${enc(item.id)}`, { "If-Match": quote(item.version!) });
      case "entry": {
        const path = item.namespace && item.namespace !== "default" ? `/api/namespaces/${enc(item.namespace)}/entries/${enc(item.id)}` : `/api/entries/${enc(item.id)}`;
        const { etag } = await requestWithETag(path);
        const q = new URLSearchParams();
        if (removeDashboardReferences) q.set("removeDashboardReferences", "true");
        if (closeInteractions) q.set("closeInteractions", "true");
        return del(`${path}${q.size ? `?${q}` : ""}`, { "If-Match": etag });
      }
      case "flow":
      case "agent": {
        const path = `/api/${item.kind}s/${enc(item.id)}`;
        const { etag } = await requestWithETag(path);
        // The normal Flow delete refuses a system-managed Flow; the platform removes it once no
        // published Entry uses it (rules 20 and 21).
        return del(item.systemManaged ? `/api/system-flows/${enc(item.id)}` : path, { "If-Match": etag });
      }
    }
  };

  const start = async () => {
    setRunning(true);
    setOutcomes([]);
    const items = [...selected.values()];
    const done = await runCleanup(items, remove, (o) => setOutcomes((old) => [...(old ?? []), o]));
    const keep = retained(done);
    setSelected((old) => new Map([...old].filter(([k]) => keep.has(k))));
    setOutcomes(done);
    setRunning(false);
    await load();
  };

  if (!allowed)
    return (
      <>
        <h1>Cleanup</h1>
        <p className="state-note warn" data-state="forbidden">
          Cleanup needs the permissions resources/delete and runs/delete in this workspace; you do not have both.
        </p>
      </>
    );

  const box = (kind: CleanupKind, id: string, label: string, extra: Partial<CleanupItem> = {}, disabled = false) => {
    const item: CleanupItem = { kind, id, label, ...extra };
    return (
      <input
        type="checkbox"
        aria-label={`Select ${kindLabels[kind]} ${label}`}
        checked={selected.has(keyOf(item))}
        disabled={disabled || running}
        onChange={() => toggle(item)}
      />
    );
  };

  return (
    <>
      <h1>Workspace cleanup</h1>
      <p>
        Select what to delete. The deletes run one by one in this order: runs (finished Tasks with their history first), Entries, Flows, Agents. A failed
        delete does not stop the others and nothing is rolled back; what failed stays selected. Running, paused, pending and action-required Tasks are
        protected and not listed.
      </p>
      {error && <p className="state-note error" role="alert" data-state="failure">{error}</p>}
      {!lists && !error && <p role="status">Loading…</p>}
      {lists && (
        <>
          <section aria-labelledby="c-tasks">
            <h2 id="c-tasks">Finished Tasks</h2>
            {lists.tasks.length === 0 ? (
              <p className="state-note info" data-state="empty">No completed, failed or cancelled Task.</p>
            ) : (
              <table>
                <tbody>
                  {lists.tasks.map((t) => (
                    <tr key={t.id}>
                      <td>{box("task", t.id, t.title, { version: t.version })}</td>
                      <td>{t.title}</td>
                      <td><span className={`pill state-${t.state}`}>{taskStateLabel(t.state)}</span></td>
                      <td>{when(t.updatedAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
          <section aria-labelledby="c-runs">
            <h2 id="c-runs">Technical runs</h2>
            {lists.runs.length === 0 ? (
              <p className="state-note info" data-state="empty">No finished technical run.</p>
            ) : (
              <table>
                <tbody>
                  {lists.runs.map((r) => (
                    <tr key={r.id}>
                      <td>{box("run", r.id, `of ${r.flow.name} (${when(r.createdAt)})`, { version: String(r.version) })}</td>
                      <td><Link href={`/runs/${enc(r.id)}`}>{r.flow.name} {r.flow.version}</Link></td>
                      <td>{r.state}</td>
                      <td>{when(r.createdAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
          <section aria-labelledby="c-entries">
            <h2 id="c-entries">Entries</h2>
            <div className="toolbar">
              <label className="inline">
                <input type="checkbox" checked={removeDashboardReferences} onChange={(e) => setRemoveDashboardReferences(e.target.checked)} disabled={running} /> Also remove them from
                the Dashboards that show them
              </label>
              <label className="inline">
                <input type="checkbox" checked={closeInteractions} onChange={(e) => setCloseInteractions(e.target.checked)} disabled={running} /> Also close their open conversations
              </label>
            </div>
            <ResourceTable items={lists.entries} kind="entry" box={box} link={(n) => `/entries/${enc(n)}`} />
          </section>
          <section aria-labelledby="c-flows">
            <h2 id="c-flows">Flows</h2>
            <div className="toolbar">
              <label className="inline">
                <input
                  type="checkbox"
                  checked={systemFlows}
                  onChange={(e) => {
                    setSystemFlows(e.target.checked);
                    if (!e.target.checked) setSelected((old) => new Map([...old].filter(([, i]) => !i.systemManaged)));
                  }}
                  disabled={running}
                />{" "}
                Also remove system-managed Direct Agent Flows that no published Entry uses any more
              </label>
            </div>
            <ResourceTable items={lists.flows} kind="flow" box={box} systemFlows={systemFlows} />
          </section>
          <section aria-labelledby="c-agents">
            <h2 id="c-agents">Agents</h2>
            <ResourceTable items={lists.agents} kind="agent" box={box} />
          </section>
          <div className="toolbar">
            <button type="button" className="danger" disabled={running || selected.size === 0} onClick={() => void start()}>
              {running ? "Deleting…" : `Delete ${selected.size} selected`}
            </button>
          </div>
        </>
      )}
      {outcomes && (
        <section className="card report" aria-labelledby="c-report" aria-live="polite">
          <h2 id="c-report">Cleanup report</h2>
          {!running && <p data-state={outcomes.every((o) => o.ok) ? "complete" : "partial"}>{summary(outcomes)}</p>}
          <ul>
            {outcomes.map((o) => (
              <li key={keyOf(o.item)} data-outcome={o.ok ? "deleted" : "failed"}>
                {o.ok ? "Deleted" : "Failed"}: {o.item.kind} {o.item.label}
                {o.error && <span className="error"> — {o.error}</span>}
              </li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}

function ResourceTable({
  items,
  kind,
  box,
  link,
  systemFlows = false,
}: {
  items: Resource[];
  kind: CleanupKind;
  box: (kind: CleanupKind, id: string, label: string, extra?: Partial<CleanupItem>, disabled?: boolean) => React.JSX.Element;
  link?: (name: string) => string;
  systemFlows?: boolean;
}) {
  if (items.length === 0) return <p className="state-note info" data-state="empty">None.</p>;
  return (
    <table>
      <tbody>
        {items.map((r) => {
          const name = r.metadata.name;
          const system = !!r.systemManaged;
          return (
            <tr key={name}>
              <td>{box(kind, name, name, { namespace: r.metadata.namespace, systemManaged: system || undefined }, system && !systemFlows)}</td>
              <td>{link ? <Link href={link(name)}>{name}</Link> : name}</td>
              <td>{r.definition?.displayName}</td>
              <td className="muted">{system ? (systemFlows ? "system-managed Direct Agent Flow: removed only when no published Entry uses it" : "system-managed Direct Agent Flow: select the option above to remove it") : r.metadata.annotations?.["platform/builtin"] === "true" ? "built-in" : ""}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
