import { useEffect, useState, type FormEvent } from "react";
import { ApiError, enc, get, post } from "../shared/api";
import { Link } from "../shared/router";
import type { Items, PublishedEntry } from "../shared/types";
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

interface Discovered extends PublishedEntry {
  reason?: string;
}

interface Discovery {
  items: Discovered[];
  fallbacks: { entry: Discovered; ownerWorkspaceId: string; query: string }[];
}

const targetLabel: Record<string, string> = { Executable: "Executable", Disabled: "Disabled", Unavailable: "Unavailable", Unknown: "Not checked yet" };

/**
 * Rule 23: discovery of the Entries the caller may start from the Console, each with whether its
 * pinned Flow can run. A search that finds nothing offers the Fallback Entries, each an explicit
 * choice carrying its owner workspace and the typed query: nothing runs until one is chosen.
 */
function Discover({ env }: { env: ConsoleEnv }) {
  const [query, setQuery] = useState("");
  const [searched, setSearched] = useState<string>();
  const [found, setFound] = useState<Discovery>();
  const [error, setError] = useState<string>();
  const [chosen, setChosen] = useState<string>();
  const [started, setStarted] = useState<{ entry: string; href: string }>();
  const [starting, setStarting] = useState(false);

  const search = (q: string) => {
    setError(undefined);
    setChosen(undefined);
    setStarted(undefined);
    get<Discovery>(`/api/entries?surface=Console&take=100${q ? `&search=${enc(q)}` : ""}`).then(
      (d) => {
        setFound(d);
        setSearched(q);
      },
      (e: ApiError) => setError(e.message),
    );
  };
  useEffect(() => search(""), [env.context.workspace.id]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    search(query.trim());
  };
  const start = async (f: Discovery["fallbacks"][number]) => {
    // The typed query becomes the Entry's primary input; the Entry runs in its owner workspace.
    const primary = f.entry.presentation.fields?.find((x) => x.role === "PrimaryInput")?.name ?? f.entry.presentation.fields?.[0]?.name ?? "request";
    setStarting(true);
    setError(undefined);
    try {
      const x = await post<{ interaction: { id: string }; task?: { id: string } }>(`/api/workspaces/${enc(f.entry.workspace)}/entries/${enc(f.entry.name)}/interactions`, { input: { [primary]: f.query } });
      const path = x.task ? `w/${enc(f.entry.workspace)}/tasks/${enc(x.task.id)}` : `w/${enc(f.entry.workspace)}/d/home?c=${enc(x.interaction.id)}`;
      setStarted({ entry: f.entry.presentation.displayName || f.entry.name, href: new URL(path, env.workplaceUrl).toString() });
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    } finally {
      setStarting(false);
    }
  };
  const fallback = found?.fallbacks.find((f) => `${f.entry.workspace}/${f.entry.namespace}/${f.entry.name}` === chosen);

  return (
    <section className="card discover" aria-labelledby="discover-h">
      <h2 id="discover-h">Discover Entries</h2>
      <form role="search" className="toolbar" onSubmit={submit}>
        <label htmlFor="entry-search" className="visually-hidden">Search the Entries you may start</label>
        <input id="entry-search" type="search" className="search" placeholder="Search by name or description" value={query} maxLength={256} onChange={(e) => setQuery(e.target.value)} />
        <button type="submit" className="primary">Search</button>
      </form>
      {error && <p className="state-note error" role="alert">{error}</p>}
      {!found && !error && <p role="status">Loading…</p>}
      {found && found.items.length > 0 && (
        <ul className="list discovered" aria-label="Entries you may start">
          {found.items.map((e) => (
            <li key={`${e.workspace}/${e.namespace}/${e.name}`} data-entry={e.name} data-target-state={e.targetState}>
              {/* The table below links the workspace's Entries to their dependencies. */}
              <strong>{e.presentation.displayName || e.name}</strong>
              <span className="muted">in {e.workspace}</span>
              <span className={`pill target-${(e.targetState ?? "Unknown").toLowerCase()}`}>{targetLabel[e.targetState ?? "Unknown"] ?? e.targetState}</span>
              {e.targetState !== "Executable" && e.reason && <span className="muted">reason: <code>{e.reason}</code></span>}
            </li>
          ))}
        </ul>
      )}
      {found && found.items.length === 0 && (
        <div data-state="no-match">
          <p className="state-note info">{searched ? <>No Entry you may start matches “{searched}”.</> : "No Entry is offered in the Console yet."}</p>
          {found.fallbacks.length > 0 && (
            <fieldset className="fallbacks">
              <legend>Hand “{searched}” to a fallback Entry instead?</legend>
              <p className="hint">Nothing runs until you choose one and start it.</p>
              {found.fallbacks.map((f) => {
                const key = `${f.entry.workspace}/${f.entry.namespace}/${f.entry.name}`;
                return (
                  <label key={key} className="fallback-choice">
                    <input type="radio" name="fallback" value={key} checked={chosen === key} onChange={() => setChosen(key)} />
                    <span>
                      <strong>{f.entry.presentation.displayName || f.entry.name}</strong> <span className="muted">in workspace {f.entry.workspace}</span>
                      {f.entry.presentation.description && <span className="hint">{f.entry.presentation.description}</span>}
                    </span>
                  </label>
                );
              })}
              <p>
                <button type="button" className="primary" disabled={!fallback || starting} onClick={() => fallback && void start(fallback)}>
                  {fallback ? `Start ${fallback.entry.presentation.displayName || fallback.entry.name} with “${fallback.query}”` : "Choose a fallback Entry"}
                </button>
              </p>
            </fieldset>
          )}
        </div>
      )}
      {started && (
        <p className="state-note info" role="status" data-state="started">
          {started.entry} started. <a href={started.href}>Follow it in the Workplace</a>
        </p>
      )}
    </section>
  );
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
      <Discover env={env} />
      <h2>Entries of this workspace</h2>
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
