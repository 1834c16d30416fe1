import { useEffect, useState } from "react";
import { ApiError, enc, get } from "../shared/api";
import { Link } from "../shared/router";
import type { Items } from "../shared/types";
import type { ConsoleEnv } from "./App";

interface EntryDraft {
  metadata: { name: string; namespace?: string };
  definition: { displayName?: string; description?: string; binding?: { agent?: { name: string }; flow?: { name: string; version?: string } }; publication?: string };
}

interface Dependencies {
  binding: { agent?: { name: string }; flow?: { name: string; version?: string } };
  resolvedFlow?: { name: string; version: string; systemManaged: boolean; agent?: string; exists: boolean };
  dashboards?: string[];
}

export function Entries({ env }: { env: ConsoleEnv }) {
  const [items, setItems] = useState<EntryDraft[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    get<Items<EntryDraft>>("/api/entry-drafts").then((l) => setItems(l.items), (e: ApiError) => setError(e.message));
  }, [env.context.workspace.id]);
  return (
    <>
      <h1>Entries</h1>
      {error && <p className="state-note error" role="alert">{error}</p>}
      {!items && !error && <p role="status">Loading…</p>}
      {items && items.length === 0 && <p className="state-note info" data-state="empty">No Entry in this workspace.</p>}
      {items && items.length > 0 && (
        <table aria-label="Entries">
          <thead>
            <tr>
              <th scope="col">Entry</th>
              <th scope="col">Bound to</th>
              <th scope="col">Publication</th>
            </tr>
          </thead>
          <tbody>
            {items.map((e) => (
              <tr key={e.metadata.name}>
                <td>
                  <Link href={`/entries/${enc(e.metadata.name)}`}>{e.definition.displayName || e.metadata.name}</Link>
                  <div className="muted">{e.metadata.name}</div>
                </td>
                <td>{e.definition.binding?.agent ? `Agent ${e.definition.binding.agent.name}` : e.definition.binding?.flow ? `Flow ${e.definition.binding.flow.name}` : "—"}</td>
                <td>{e.definition.publication ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** Rule 21: an Entry's dependencies, its administrative binding beside the Flow it resolves to. */
export function EntryDetail({ name, namespace }: { env: ConsoleEnv; name: string; namespace?: string }) {
  const base = namespace && namespace !== "default" ? `/api/namespaces/${enc(namespace)}/entries/${enc(name)}` : `/api/entries/${enc(name)}`;
  const [deps, setDeps] = useState<Dependencies>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    get<Dependencies>(`${base}/dependencies`).then(setDeps, (e: ApiError) => setError(e.status === 404 ? `The Entry ${name} does not exist in this workspace.` : e.message));
  }, [base, name]);
  return (
    <>
      <p>
        <Link href="/entries">← Entries</Link>
      </p>
      <h1>Entry {name}</h1>
      {error && <p className="state-note error" role="alert">{error}</p>}
      {!deps && !error && <p role="status">Loading…</p>}
      {deps && (
        <dl className="card" aria-label="Dependencies">
          <dt>Administrative binding</dt>
          <dd>
            {deps.binding.agent ? `Agent ${deps.binding.agent.name}` : deps.binding.flow ? `Flow ${deps.binding.flow.name}${deps.binding.flow.version ? ` ${deps.binding.flow.version}` : ""}` : "none"}
          </dd>
          <dt>Resolved Flow</dt>
          <dd>
            {deps.resolvedFlow ? (
              <>
                {deps.resolvedFlow.name} {deps.resolvedFlow.version}
                {deps.resolvedFlow.systemManaged && " (system-managed Direct Agent Flow)"}
                {!deps.resolvedFlow.exists && <span className="error"> — missing</span>}
              </>
            ) : (
              "not published yet"
            )}
          </dd>
          <dt>Dashboards that show it</dt>
          <dd>{deps.dashboards?.length ? deps.dashboards.join(", ") : "none"}</dd>
        </dl>
      )}
    </>
  );
}
