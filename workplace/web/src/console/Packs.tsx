import { useCallback, useEffect, useId, useRef, useState } from "react";
import { ApiError, get, post, put, request } from "../shared/api";
import { when } from "../shared/format";
import { Markdown } from "../shared/markdown";
import { Link, navigate, useLocation } from "../shared/router";
import type { Items } from "../shared/types";
import type { ConsoleEnv } from "./App";
import { REGISTRIES_PATH } from "./SourceRegistries";
import { shortDigest, shortId } from "./sourceregistries";
import {
  actionLabel,
  bindingTarget,
  changeSummary,
  conditionLabel,
  conflicts,
  consolePackPath,
  headerFileName,
  importedSourceRequest,
  type ImportedSourceRef,
  needsDashboardAuthorization,
  packPath,
  parseSelection,
  problemSentence,
  readinessSentence,
  selectionValue,
  showValue,
  sourceLabel,
  stateLabel,
  stateTone,
  type BindingSelection,
  type BindingState,
  type Change,
  type InstalledPack,
  type Preview,
  type UninstallPreview,
  type UninstallResult,
} from "./packs";

// The detail follows a running operation (install, update, uninstall) with a light poll.
const BUSY_POLL_MS = 1_500;

function Problem({ error }: { error?: string }) {
  return error ? (
    <p className="state-note error" role="alert">
      {error}
    </p>
  ) : null;
}

export function StatePill({ state, readiness }: { state: string; readiness?: string }) {
  return (
    <span className={`pill pack-state tone-${stateTone(state, readiness)}`} data-state={state}>
      {stateLabel(state, readiness)}
    </span>
  );
}

const busy = (p?: InstalledPack) => !!p && (p.state === "installing" || p.state === "uninstalling" || p.operation?.phase === "Applying" || p.operation?.phase === "Compensating");

/** The Packs page: installed Packs with state and readiness, and installing one from a file. */
export function Packs({ env }: { env: ConsoleEnv }) {
  const loc = useLocation();
  const imported = importedRefFrom(loc.query);
  const [items, setItems] = useState<InstalledPack[]>();
  const [error, setError] = useState<string>();
  const load = useCallback(() => {
    get<Items<InstalledPack>>("/api/packs").then(
      (l) => {
        setItems(l.items ?? []);
        setError(undefined);
      },
      (e) => setError(problemSentence(e)),
    );
  }, []);
  useEffect(load, [load, env.context.workspace.id]);
  useEffect(() => {
    if (!items?.some((p) => busy(p))) return;
    const t = setInterval(load, BUSY_POLL_MS);
    return () => clearInterval(t);
  }, [items, load]);

  return (
    <>
      <div className="toolbar page-head">
        <h1>Packs</h1>
        {env.can("resources/read") && <Link href="/packs/compose">Compose a Pack</Link>}
      </div>
      <p className="muted">Packs bundle Agents, Flows, Entries and their profiles. Each installs into its own namespace, named after its publisher and name.</p>
      <Problem error={error} />
      {items && items.length === 0 && (
        <p className="state-note info" data-state="empty">
          No Pack is installed in this workspace yet.
        </p>
      )}
      {items && items.length > 0 && (
        <table aria-label="Installed Packs" className="packs-table">
          <thead>
            <tr>
              <th scope="col">Pack</th>
              <th scope="col">State</th>
              <th scope="col">Version</th>
              <th scope="col">Retained version</th>
              <th scope="col">Source</th>
            </tr>
          </thead>
          <tbody>
            {items.map((p) => (
              <tr key={`${p.publisher}.${p.name}`} data-pack={`${p.publisher}.${p.name}`}>
                <td>
                  <Link href={consolePackPath(p.publisher, p.name)}>{p.displayName || p.name}</Link>
                  <div className="muted small">
                    {p.publisher}.{p.name}
                  </div>
                </td>
                <td>
                  <StatePill state={p.state} readiness={p.readiness} />
                </td>
                <td>{p.version}</td>
                <td>{p.retainedVersion || <span className="muted">none</span>}</td>
                <td className="wrap">{sourceLabel(p.source) || <span className="muted">unknown</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {imported && env.can("resources/write") && (
        <InstallFromImport
          key={JSON.stringify(imported)}
          source={imported}
          onDone={(p) => {
            load();
            navigate(consolePackPath(p.publisher, p.name));
          }}
          onCancel={() => navigate("/packs")}
        />
      )}
      {env.can("resources/write") ? (
        <InstallFromFile
          title="Install from a file"
          onDone={(p) => {
            load();
            navigate(consolePackPath(p.publisher, p.name));
          }}
          canWrite
        />
      ) : (
        <p className="state-note info">Installing a Pack needs the right to change resources in this workspace.</p>
      )}
    </>
  );
}

interface Named {
  metadata: { name: string };
  definition?: { displayName?: string };
}

/** useBindingTargets reads the workspace's ModelProfiles and Secrets that can satisfy a binding. */
function useBindingTargets(needed: boolean) {
  const [targets, setTargets] = useState<{ modelProfile: Named[]; secret: Named[] }>();
  useEffect(() => {
    if (!needed) return;
    Promise.all([get<Items<Named>>("/api/modelprofiles").catch(() => ({ items: [] as Named[] })), get<Items<Named>>("/api/secrets").catch(() => ({ items: [] as Named[] }))]).then(([mp, s]) =>
      setTargets({ modelProfile: mp.items ?? [], secret: s.items ?? [] }),
    );
  }, [needed]);
  return targets;
}

/**
 * BindingsEditor chooses a ModelProfile or Secret of the workspace for each binding and saves the
 * choice against the Pack's identity (allowed before install too: a preview then shows it).
 */
function BindingsEditor({ publisher, name, bindings, canWrite, onSaved }: { publisher: string; name: string; bindings: BindingState[]; canWrite: boolean; onSaved: (b: BindingState[]) => void }) {
  const targets = useBindingTargets(bindings.length > 0);
  const [chosen, setChosen] = useState<Record<string, string>>({});
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const [saving, setSaving] = useState(false);
  const uid = useId();
  useEffect(() => setChosen(Object.fromEntries(bindings.map((b) => [b.name, selectionValue(b.selection)]))), [bindings]);
  if (!bindings.length) return <p className="muted">The Pack declares no bindings.</p>;
  const changed = bindings.some((b) => (chosen[b.name] ?? "") !== selectionValue(b.selection));
  const save = async () => {
    setSaving(true);
    try {
      const body: Record<string, BindingSelection> = {};
      for (const b of bindings) {
        const s = parseSelection(chosen[b.name] ?? "");
        if (s) body[b.name] = s;
      }
      const r = await put<{ bindings: BindingState[] }>(`${packPath(publisher, name)}/bindings`, { bindings: body });
      setDone("Bindings saved.");
      setError(undefined);
      onSaved(r.bindings ?? []);
    } catch (e) {
      setError(problemSentence(e));
      setDone(undefined);
    } finally {
      setSaving(false);
    }
  };
  return (
    <div className="bindings">
      <table aria-label="Bindings">
        <thead>
          <tr>
            <th scope="col">Binding</th>
            <th scope="col">Needs</th>
            <th scope="col">Satisfied</th>
            <th scope="col">Selection</th>
          </tr>
        </thead>
        <tbody>
          {bindings.map((b) => {
            const options = (b.targetKind === "secret" ? targets?.secret : targets?.modelProfile) ?? [];
            const id = `${uid}-binding-${b.name}`;
            const current = selectionValue(b.selection);
            return (
              <tr key={b.name} data-binding={b.name}>
                <td>
                  <label htmlFor={id}>{b.displayName || b.name}</label>
                  {b.displayName && <div className="muted small">{b.name}</div>}
                </td>
                <td>
                  {bindingTarget(b.targetKind)} {b.required ? "(required)" : "(optional)"}
                </td>
                <td>
                  <span className={`pill ${b.satisfied ? "tone-ok" : b.required ? "tone-warn" : ""}`}>{b.satisfied ? "Satisfied" : "Not satisfied"}</span>
                </td>
                <td>
                  <select id={id} value={chosen[b.name] ?? ""} disabled={!canWrite || !targets} onChange={(e) => setChosen({ ...chosen, [b.name]: e.target.value })}>
                    <option value="">{targets ? "Not selected" : "Loading…"}</option>
                    {current && !options.some((o) => `default/${o.metadata.name}` === current) && <option value={current}>{current}</option>}
                    {options.map((o) => (
                      <option key={o.metadata.name} value={`default/${o.metadata.name}`}>
                        {o.definition?.displayName ? `${o.definition.displayName} (${o.metadata.name})` : o.metadata.name}
                      </option>
                    ))}
                  </select>
                  {targets && options.length === 0 && <div className="muted small">The workspace has no {bindingTarget(b.targetKind)} yet.</div>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {canWrite && (
        <p className="toolbar">
          <button type="button" onClick={() => void save()} disabled={!changed || saving}>
            Save bindings
          </button>
          {done && !changed && <span role="status">{done}</span>}
        </p>
      )}
      <Problem error={error} />
    </div>
  );
}

function Diff({ c }: { c: Change }) {
  if (!c.diff?.length) return null;
  return (
    <details className="diff">
      <summary>
        {c.diff.length === 1 ? "1 field changes" : `${c.diff.length} fields change`}
      </summary>
      <ul>
        {c.diff.map((d) => (
          <li key={d.path}>
            <code>{d.path}</code>: <span className="from">{showValue(d.from)}</span> → <span className="to">{showValue(d.to)}</span>
          </li>
        ))}
      </ul>
    </details>
  );
}

/** ChangesTable lists each resource's action, with the field diff of an update and the reason of a conflict. */
export function ChangesTable({ changes, label }: { changes: Change[]; label: string }) {
  if (!changes.length) return <p className="muted">No resources.</p>;
  return (
    <table aria-label={label} className="changes">
      <thead>
        <tr>
          <th scope="col">Resource</th>
          <th scope="col">Action</th>
          <th scope="col">Details</th>
        </tr>
      </thead>
      <tbody>
        {changes.map((c) => (
          <tr key={`${c.kind}/${c.name}`} data-action={c.action} data-resource={`${c.kind}/${c.name}`}>
            <td>
              {c.kind} <strong>{c.name}</strong>
            </td>
            <td>
              <span className={`pill action-${c.action}`}>{actionLabel(c.action)}</span>
            </td>
            <td className="wrap">
              {c.reason && <span>{c.reason}</span>}
              <Diff c={c} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

type Mode = "install" | "update" | "rollback";

/** PreviewPanel shows what an install, update or rollback would do, before anything changes. */
function PreviewPanel({ preview, mode, canWrite, onBindingsSaved }: { preview: Preview; mode: Mode; canWrite: boolean; onBindingsSaved: () => void }) {
  const { pack, changeSet: cs } = preview;
  const blocking = conflicts(cs.changes);
  return (
    <div className="pack-preview" data-mode={mode}>
      <header>
        <h3>
          {pack.displayName || pack.name} <span className="muted">{pack.version}</span>
        </h3>
        <p className="muted">
          {pack.publisher}.{pack.name}
          {pack.fileName && mode !== "rollback" ? ` · ${pack.fileName}` : ""}
          {pack.audience ? ` · for ${pack.audience} use` : ""}
          {pack.purpose ? ` · ${pack.purpose}` : ""}
        </p>
        {pack.description && <p>{pack.description}</p>}
      </header>
      {mode === "update" && (
        <p className="state-note info">
          {cs.fromVersion === cs.version
            ? `Version ${cs.version} is installed; installing it again restores what differs from it.`
            : `Updates the installed version ${cs.fromVersion} to ${cs.version}.`}
        </p>
      )}
      {mode === "rollback" && (
        <p className="state-note info">
          Rolls back from {cs.fromVersion} to the retained version {cs.version}.
        </p>
      )}
      {pack.readme && (
        <details className="readme" open={mode === "install"}>
          <summary>README</summary>
          <Markdown text={pack.readme} className="markdown" />
        </details>
      )}
      <h4>Resources: {changeSummary(cs.changes)}</h4>
      <p className="muted small">Into the namespace {cs.namespace}.</p>
      <ChangesTable changes={cs.changes} label="Planned changes" />
      <h4>Bindings</h4>
      <BindingsEditor publisher={pack.publisher} name={pack.name} bindings={cs.bindings ?? []} canWrite={canWrite} onSaved={onBindingsSaved} />
      <p className={`state-note ${cs.readiness === "ready" ? "info" : "warn"}`} data-readiness={cs.readiness}>
        {readinessSentence(cs.readiness)}
      </p>
      {cs.blocked && (
        <p className="state-note error" role="alert">
          Blocked: {blocking.length === 1 ? "one resource conflicts" : `${blocking.length} resources conflict`}, so nothing will be changed. Resolve{" "}
          {blocking.length === 1 ? "it" : "them"} in the workspace and choose the file again.
        </p>
      )}
    </div>
  );
}

/**
 * InstallFromFile: choose a .zip, read its preview (nothing changes), then install or update.
 * A refused archive says why in words.
 */
function InstallFromFile({ title, onDone, canWrite, expect }: { title: string; onDone: (p: InstalledPack) => void; canWrite: boolean; expect?: { publisher: string; name: string } }) {
  const [file, setFile] = useState<File>();
  const [preview, setPreview] = useState<Preview>();
  const [error, setError] = useState<string>();
  const [working, setWorking] = useState<"reading" | "installing">();
  const [conflictChanges, setConflictChanges] = useState<Change[]>();
  const input = useRef<HTMLInputElement>(null);
  const uid = useId();

  const read = useCallback(async (f: File) => {
    setWorking("reading");
    setError(undefined);
    setConflictChanges(undefined);
    try {
      const p = await request<Preview>("/api/packs/preview", { method: "POST", body: f, headers: { "Content-Type": "application/zip", "X-Pack-File-Name": headerFileName(f.name) } });
      setPreview(p);
    } catch (e) {
      setPreview(undefined);
      setError(problemSentence(e));
    } finally {
      setWorking(undefined);
    }
  }, []);

  const choose = (f?: File) => {
    setFile(f);
    setPreview(undefined);
    if (f) void read(f);
  };

  const reset = () => {
    setFile(undefined);
    setPreview(undefined);
    setError(undefined);
    setConflictChanges(undefined);
    setDashboards(false);
    if (input.current) input.current.value = "";
  };

  const [dashboards, setDashboards] = useState(false);
  const install = async (removeDashboardReferences = false) => {
    if (!file || !preview) return;
    setWorking("installing");
    setDashboards(false);
    try {
      const p = await request<InstalledPack>(`/api/packs${removeDashboardReferences ? "?removeDashboardReferences=true" : ""}`, { method: "POST", body: file, headers: { "Content-Type": "application/zip", "X-Pack-File-Name": headerFileName(file.name) } });
      reset();
      onDone(p ?? { publisher: preview.pack.publisher, name: preview.pack.name });
    } catch (e) {
      setError(problemSentence(e));
      setDashboards(needsDashboardAuthorization(e));
      if (e instanceof ApiError && Array.isArray(e.problem.changes)) setConflictChanges(conflicts(e.problem.changes as Change[]));
    } finally {
      setWorking(undefined);
    }
  };

  const mode: Mode = preview?.changeSet.fromVersion ? "update" : "install";
  const other = expect && preview && (preview.pack.publisher !== expect.publisher || preview.pack.name !== expect.name);
  return (
    <section className="card install" aria-labelledby={`${uid}-h`}>
      <h2 id={`${uid}-h`}>{title}</h2>
      <label htmlFor={`${uid}-file`}>Pack archive (.zip)</label>
      <input id={`${uid}-file`} ref={input} type="file" accept=".zip,application/zip" onChange={(e) => choose(e.target.files?.[0])} disabled={!canWrite || working === "installing"} />
      {working === "reading" && <p role="status">Reading the archive…</p>}
      <Problem error={error} />
      {conflictChanges && conflictChanges.length > 0 && <ChangesTable changes={conflictChanges} label="Conflicts" />}
      {preview && (
        <>
          {other && (
            <p className="state-note warn">
              This file is the Pack {preview.pack.publisher}.{preview.pack.name}, not {expect!.publisher}.{expect!.name}; installing it installs that Pack.
            </p>
          )}
          <PreviewPanel preview={preview} mode={mode} canWrite={canWrite} onBindingsSaved={() => file && void read(file)} />
          <p className="toolbar">
            {dashboards && (
              <button type="button" className="danger" disabled={!!working} onClick={() => void install(true)}>
                Take the Entries off the Dashboards and go on
              </button>
            )}
            <button type="button" className="primary" disabled={preview.changeSet.blocked || !!working} onClick={() => void install()}>
              {mode === "install" ? `Install ${preview.pack.displayName || preview.pack.name}` : preview.changeSet.fromVersion === preview.changeSet.version ? `Reinstall ${preview.changeSet.version}` : `Update to ${preview.changeSet.version}`}
            </button>
            <button type="button" onClick={reset} disabled={!!working}>
              Cancel
            </button>
            {working === "installing" && <span role="status">{mode === "update" ? "Updating…" : "Installing…"}</span>}
          </p>
        </>
      )}
    </section>
  );
}

/** importedRefFrom reads the imported Source version the discovery page links here with. */
function importedRefFrom(q: URLSearchParams): ImportedSourceRef | undefined {
  const sourceVersion = q.get("sourceVersion") ?? "";
  const publisher = q.get("publisher") ?? "";
  const source = q.get("source") ?? "";
  const version = q.get("version") ?? "";
  if (!sourceVersion && !(publisher && source && version)) return undefined;
  return { sourceVersion, publisher, source, version };
}

/**
 * InstallFromImport previews the Pack of a Source version imported from a registry (the server
 * fetches its archive under the registry's outbound rules and checks it against the manifest's
 * digest), then installs it: the same preview, bindings and refusals as a file.
 */
function InstallFromImport({ source, onDone, onCancel }: { source: ImportedSourceRef; onDone: (p: InstalledPack) => void; onCancel: () => void }) {
  const [preview, setPreview] = useState<Preview>();
  const [error, setError] = useState<string>();
  const [working, setWorking] = useState<"reading" | "installing">();
  const [conflictChanges, setConflictChanges] = useState<Change[]>();
  const [dashboards, setDashboards] = useState(false);
  const uid = useId();

  const read = useCallback(async () => {
    setWorking("reading");
    setError(undefined);
    try {
      const r = importedSourceRequest(source, "preview");
      setPreview(await request<Preview>(r.path, r.options));
    } catch (e) {
      setPreview(undefined);
      setError(problemSentence(e));
    } finally {
      setWorking(undefined);
    }
  }, [source]);
  useEffect(() => void read(), [read]);

  const install = async (removeDashboardReferences = false) => {
    if (!preview) return;
    setWorking("installing");
    setDashboards(false);
    try {
      const r = importedSourceRequest(source, "install", removeDashboardReferences);
      const p = await request<InstalledPack>(r.path, r.options);
      onDone(p ?? { publisher: preview.pack.publisher, name: preview.pack.name });
    } catch (e) {
      setError(problemSentence(e));
      setDashboards(needsDashboardAuthorization(e));
      if (e instanceof ApiError && Array.isArray(e.problem.changes)) setConflictChanges(conflicts(e.problem.changes as Change[]));
    } finally {
      setWorking(undefined);
    }
  };

  const mode: Mode = preview?.changeSet.fromVersion ? "update" : "install";
  const what = source.publisher ? `${source.publisher}/${source.source} ${source.version}` : source.sourceVersion;
  return (
    <section className="card install" aria-labelledby={`${uid}-h`} data-install="imported">
      <h2 id={`${uid}-h`}>Install from an imported Source</h2>
      <p className="muted">
        The Pack of {what}, imported from a Source registry. Its archive is fetched from the registry and must match the manifest's digest.
      </p>
      {working === "reading" && <p role="status">Reading the Pack…</p>}
      <Problem error={error} />
      {conflictChanges && conflictChanges.length > 0 && <ChangesTable changes={conflictChanges} label="Conflicts" />}
      {preview && (
        <>
          <PreviewPanel preview={preview} mode={mode} canWrite onBindingsSaved={() => void read()} />
          <p className="toolbar">
            {dashboards && (
              <button type="button" className="danger" disabled={!!working} onClick={() => void install(true)}>
                Take the Entries off the Dashboards and go on
              </button>
            )}
            <button type="button" className="primary" disabled={preview.changeSet.blocked || !!working} onClick={() => void install()}>
              {mode === "install" ? `Install ${preview.pack.displayName || preview.pack.name}` : preview.changeSet.fromVersion === preview.changeSet.version ? `Reinstall ${preview.changeSet.version}` : `Update to ${preview.changeSet.version}`}
            </button>
            <button type="button" onClick={onCancel} disabled={!!working}>
              Cancel
            </button>
            {working === "installing" && <span role="status">{mode === "update" ? "Updating…" : "Installing…"}</span>}
          </p>
        </>
      )}
    </section>
  );
}

/** PackDetail: one installed Pack, its resources and bindings, update, rollback and uninstall. */
export function PackDetail({ env, publisher, name }: { env: ConsoleEnv; publisher: string; name: string }) {
  const [pack, setPack] = useState<InstalledPack>();
  const [error, setError] = useState<string>();
  const [gone, setGone] = useState(false);
  const [rollback, setRollback] = useState<Preview>();
  const [uninstall, setUninstall] = useState<UninstallPreview>();
  const [result, setResult] = useState<UninstallResult>();
  const [actionError, setActionError] = useState<string>();
  const [working, setWorking] = useState<string>();
  const canWrite = env.can("resources/write");
  const path = packPath(publisher, name);

  const load = useCallback(() => {
    get<InstalledPack>(path).then(
      (p) => {
        setPack(p);
        setError(undefined);
      },
      (e) => {
        if (e instanceof ApiError && e.status === 404) setGone(true);
        else setError(problemSentence(e));
      },
    );
  }, [path]);
  useEffect(load, [load]);
  useEffect(() => {
    if (!busy(pack)) return;
    const t = setInterval(load, BUSY_POLL_MS);
    return () => clearInterval(t);
  }, [pack, load]);

  // Set when the last rollback or uninstall was refused for Entries that Dashboards show.
  const [dashboards, setDashboards] = useState<"rollback" | "uninstall">();
  const act = async (what: string, fn: () => Promise<void>) => {
    setWorking(what);
    setActionError(undefined);
    setDashboards(undefined);
    try {
      await fn();
    } catch (e) {
      setActionError(problemSentence(e));
      if (needsDashboardAuthorization(e) && (what === "rollback" || what === "uninstall")) setDashboards(what);
    } finally {
      setWorking(undefined);
    }
  };

  const previewRollback = () =>
    act("rollback-preview", async () => {
      setUninstall(undefined);
      setRollback(await post<Preview>(`${path}/rollback/preview`));
    });
  const q = (removeDashboardReferences: boolean) => (removeDashboardReferences ? "?removeDashboardReferences=true" : "");
  const confirmRollback = (removeDashboardReferences = false) =>
    act("rollback", async () => {
      const p = await post<InstalledPack>(`${path}/rollback${q(removeDashboardReferences)}`);
      setRollback(undefined);
      if (p) setPack(p);
      load();
    });
  const previewUninstall = () =>
    act("uninstall-preview", async () => {
      setRollback(undefined);
      setUninstall(await get<UninstallPreview>(`${path}/uninstall-preview`));
    });
  const confirmUninstall = (removeDashboardReferences = false) =>
    act("uninstall", async () => {
      const r = await request<UninstallResult>(`${path}${q(removeDashboardReferences)}`, { method: "DELETE" });
      setUninstall(undefined);
      setResult(r ?? { state: "removed" });
      // Still going after the server's wait: the detail follows it until the Pack is gone.
      if (r?.state !== "removed") load();
    });

  const back = (
    <p>
      <Link href="/packs">← Packs</Link>
    </p>
  );
  if (result?.state === "removed")
    return (
      <>
        {back}
        <h1>{pack?.displayName || name}</h1>
        <p className="state-note info" role="status" data-state="removed">
          The Pack {publisher}.{name} is uninstalled.
          {(result.preserved?.length ?? 0) > 0 && " What was kept is listed below."}
          {(result.keptInNamespace?.length ?? 0) === 0 && " Its namespace was removed with it."}
        </p>
        <Preserved items={result.preserved ?? []} />
        <KeptInNamespace namespace={`${publisher}.${name}`} items={result.keptInNamespace} />
      </>
    );
  if (gone && result?.state === "uninstalling")
    return (
      <>
        {back}
        <p className="state-note info" role="status" data-state="removed">
          The Pack {publisher}.{name} is uninstalled.
        </p>
      </>
    );
  if (gone)
    return (
      <>
        {back}
        <p className="state-note warn" data-state="not-installed">
          The Pack {publisher}.{name} is not installed in this workspace.
        </p>
      </>
    );

  return (
    <>
      {back}
      <Problem error={error} />
      {pack && (
        <>
          <div className="toolbar page-head detail-head">
            <h1>{pack.displayName || pack.name}</h1>
            <StatePill state={pack.state} readiness={pack.readiness} />
          </div>
          {pack.description && <p>{pack.description}</p>}
          <dl className="card pack-facts">
            <dt>Identity</dt>
            <dd>
              {pack.publisher}.{pack.name}
            </dd>
            <dt>Version</dt>
            <dd>{pack.version}</dd>
            <dt>Retained version</dt>
            <dd>{pack.retainedVersion || "none"}</dd>
            <dt>Readiness</dt>
            <dd>{pack.readiness ? readinessSentence(pack.readiness) : "unknown"}</dd>
            <dt>Namespace</dt>
            <dd>{pack.namespace}</dd>
            {pack.source?.kind === "Registry" ? (
              <>
                <dt>Source registry</dt>
                <dd className="wrap">
                  {pack.source.registry && env.context.platformAdministrator ? (
                    <Link href={`${REGISTRIES_PATH}?registration=${encodeURIComponent(pack.source.registry)}`}>{pack.source.registry}</Link>
                  ) : (
                    pack.source.registry || "a registration deleted since"
                  )}
                </dd>
                {/* Ids and digests are shortened to what people compare; the whole value is the title. */}
                <dt>Imported version</dt>
                <dd className="wrap">
                  <code title={pack.source.sourceVersion}>{shortId(pack.source.sourceVersion)}</code> <span className="muted small">the immutable Source version it was installed from</span>
                </dd>
                <dt>Observation</dt>
                <dd className="wrap">
                  <code title={pack.source.observationId}>{shortId(pack.source.observationId)}</code> <span className="muted small">the registry's index as it was when imported</span>
                </dd>
                <dt>Manifest digest</dt>
                <dd className="wrap">
                  <code title={pack.source.manifestDigest}>{shortDigest(pack.source.manifestDigest)}</code>
                </dd>
                <dt>Archive digest</dt>
                <dd className="wrap">
                  <code title={pack.source.digest}>{shortDigest(pack.source.digest)}</code> <span className="muted small">checked against the manifest before installing</span>
                </dd>
              </>
            ) : (
              <>
                <dt>Source file</dt>
                <dd className="wrap">{pack.source?.fileName || "unknown"}</dd>
              </>
            )}
            {pack.installedAt && (
              <>
                <dt>Installed</dt>
                <dd>{when(pack.installedAt)}</dd>
              </>
            )}
          </dl>
          {pack.operation && pack.operation.phase && pack.operation.phase !== "Done" && (
            <p className={`state-note ${pack.operation.phase === "Failed" ? "error" : "info"}`} role="status">
              {pack.operation.kind ?? "Operation"} {pack.operation.phase === "Failed" ? "failed" : pack.operation.phase === "Compensating" ? "is being undone" : "in progress"}
              {pack.operation.total ? `: ${pack.operation.done ?? 0} of ${pack.operation.total} steps` : ""}
              {pack.operation.failedResource ? ` at ${pack.operation.failedResource}` : ""}
              {pack.operation.error ? `. ${pack.operation.error}` : "."}
            </p>
          )}
          {!result && (pack.preserved?.length ?? 0) > 0 && (
            <div className="state-note warn" data-state="preserved">
              <p>An uninstall left these resources in place:</p>
              <Preserved items={pack.preserved!} />
            </div>
          )}
          {result?.state === "uninstalling" && pack.state === "uninstalling" && (
            <p className="state-note info" role="status">
              Uninstalling: what the Pack manages is being removed.
            </p>
          )}
          {result?.state === "degraded" && (
            <div className="state-note warn" role="status" data-state={result.state}>
              <p>Uninstalled what was still managed; the Pack is degraded because some resources were kept:</p>
              <Preserved items={result.preserved ?? []} />
              <p>
                The namespace {pack.namespace} stays with them: delete them (or what refers to them) and uninstall again to remove it.
              </p>
            </div>
          )}
          <section aria-labelledby="res-h">
            <h2 id="res-h">Resources</h2>
            {(pack.resources?.length ?? 0) === 0 ? (
              <p className="muted">No resources.</p>
            ) : (
              <table aria-label="Resources">
                <thead>
                  <tr>
                    <th scope="col">Resource</th>
                    <th scope="col">Condition</th>
                    <th scope="col">Supplied by</th>
                  </tr>
                </thead>
                <tbody>
                  {pack.resources!.map((r) => (
                    <tr key={`${r.kind}/${r.name}`} data-resource={`${r.kind}/${r.name}`} data-condition={r.condition}>
                      <td>
                        {r.kind} <strong>{r.name}</strong>
                      </td>
                      <td>
                        <span className={`pill condition-${r.condition}`}>{conditionLabel(r.condition)}</span>
                      </td>
                      <td>{r.suppliedByVersion ? `version ${r.suppliedByVersion}` : ""}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
          <section aria-labelledby="bind-h">
            <h2 id="bind-h">Bindings</h2>
            <BindingsEditor publisher={pack.publisher} name={pack.name} bindings={pack.bindings ?? []} canWrite={canWrite} onSaved={() => load()} />
          </section>
          {canWrite && (
            <section aria-labelledby="ops-h" className="pack-ops">
              <h2 id="ops-h">Change the installation</h2>
              <p className="toolbar">
                {pack.retainedVersion && (
                  <button type="button" onClick={() => void previewRollback()} disabled={!!working || busy(pack)}>
                    Roll back to {pack.retainedVersion}
                  </button>
                )}
                {env.can("resources/delete") && (
                  <button type="button" className="danger" onClick={() => void previewUninstall()} disabled={!!working || busy(pack)}>
                    Uninstall…
                  </button>
                )}
              </p>
              <Problem error={actionError} />
              {dashboards && (
                <p className="toolbar">
                  <button type="button" className="danger" disabled={!!working} onClick={() => void (dashboards === "rollback" ? confirmRollback(true) : confirmUninstall(true))}>
                    Take the Entries off the Dashboards and {dashboards === "rollback" ? "roll back" : "uninstall"}
                  </button>
                </p>
              )}
              {rollback && (
                <div className="card" aria-label="Rollback preview" role="region">
                  <PreviewPanel preview={rollback} mode="rollback" canWrite={canWrite} onBindingsSaved={() => void previewRollback()} />
                  <p className="toolbar">
                    <button type="button" className="primary" disabled={rollback.changeSet.blocked || !!working} onClick={() => void confirmRollback()}>
                      Confirm rollback to {rollback.changeSet.version}
                    </button>
                    <button type="button" onClick={() => setRollback(undefined)}>
                      Cancel
                    </button>
                  </p>
                </div>
              )}
              {uninstall && (
                <div className="card uninstall-preview" aria-label="Uninstall preview" role="region">
                  <h3>Uninstalling {pack.displayName || pack.name}</h3>
                  <h4>Will be removed</h4>
                  {uninstall.remove.length ? (
                    <ul data-list="remove">
                      {uninstall.remove.map((r) => (
                        <li key={`${r.kind}/${r.name}`}>
                          {r.kind} <strong>{r.name}</strong>
                        </li>
                      ))}
                    </ul>
                  ) : (
                    <p className="muted">Nothing.</p>
                  )}
                  <h4>Will stay</h4>
                  {uninstall.preserve.length ? <Preserved items={uninstall.preserve} /> : <p className="muted">Nothing: every resource is still as installed.</p>}
                  <KeptInNamespace namespace={pack.namespace} items={uninstall.keptInNamespace} />
                  {uninstall.preserve.length === 0 && (uninstall.keptInNamespace?.length ?? 0) === 0 && (
                    <p className="muted small" data-state="namespace-removed">
                      The namespace {pack.namespace} is removed with it.
                    </p>
                  )}
                  {uninstall.preserve.length > 0 && (uninstall.keptInNamespace?.length ?? 0) === 0 && (
                    <p className="muted small">The namespace {pack.namespace} stays with what is kept.</p>
                  )}
                  <p className="muted small">Binding selections are kept for a later reinstall.</p>
                  <p className="toolbar">
                    <button type="button" className="danger" disabled={!!working} onClick={() => void confirmUninstall()}>
                      Confirm uninstall
                    </button>
                    <button type="button" onClick={() => setUninstall(undefined)}>
                      Cancel
                    </button>
                    {working === "uninstall" && <span role="status">Uninstalling…</span>}
                  </p>
                </div>
              )}
              <InstallFromFile
                title="Update from a file"
                expect={{ publisher: pack.publisher, name: pack.name }}
                canWrite={canWrite}
                onDone={(p) => {
                  if (p.publisher === pack.publisher && p.name === pack.name) load();
                  else navigate(consolePackPath(p.publisher, p.name));
                }}
              />
            </section>
          )}
        </>
      )}
    </>
  );
}

/** The resources a person wrote in the Pack's namespace, which keep the namespace. */
function KeptInNamespace({ namespace, items }: { namespace: string; items?: string[] }) {
  if (!items?.length) return null;
  return (
    <div data-list="kept-in-namespace">
      <p>The namespace {namespace} stays for resources the Pack did not install:</p>
      <ul>
        {items.map((r) => (
          <li key={r}>{r}</li>
        ))}
      </ul>
    </div>
  );
}

function Preserved({ items }: { items: { kind: string; name: string; reason?: string }[] }) {
  if (!items.length) return null;
  return (
    <ul data-list="preserve">
      {items.map((r) => (
        <li key={`${r.kind}/${r.name}`}>
          {r.kind} <strong>{r.name}</strong>
          {r.reason ? `: ${r.reason}` : ""}
        </li>
      ))}
    </ul>
  );
}
