import { useCallback, useEffect, useState, type FormEvent } from "react";
import { get, post, request } from "../shared/api";
import { when } from "../shared/format";
import { Link } from "../shared/router";
import type { Items } from "../shared/types";
import type { ConsoleEnv } from "./App";
import {
  applyMove,
  bindingTarget,
  coordinateErrors,
  groupByKind,
  itemStatus,
  problemSentence,
  removeLabel,
  requiredBySentence,
  type ComposerItem,
  type ComposerPreview,
  type Move,
  type PackProject,
} from "./packs";

interface ProjectForm {
  publisher: string;
  name: string;
  version: string;
  displayName: string;
  description: string;
  audience: string;
  purpose: string;
}

const emptyForm: ProjectForm = { publisher: "", name: "", version: "1.0.0", displayName: "", description: "", audience: "universal", purpose: "standard" };

const roleNote = (it: ComposerItem) => {
  if (it.note) return it.note;
  if (it.role === "binding") return "Becomes a binding; its value is never copied.";
  if (it.role === "unsupported") return "Packs cannot carry this kind.";
  return "";
};

/**
 * The Composer: pick resources of the workspace, see the closure that a Pack of them needs
 * (recomputed by the server on every change), its bindings and issues, then create an archive.
 */
export function Composer({ env }: { env: ConsoleEnv }) {
  const [items, setItems] = useState<ComposerItem[]>();
  const [truncated, setTruncated] = useState(false);
  const [loadError, setLoadError] = useState<string>();
  const [selection, setSelection] = useState<string[]>([]);
  const [closure, setClosure] = useState<ComposerPreview>();
  const [previewError, setPreviewError] = useState<string>();
  const [computing, setComputing] = useState(false);
  const [form, setForm] = useState<ProjectForm>(emptyForm);
  const [touched, setTouched] = useState(false);
  const [created, setCreated] = useState<PackProject>();
  const [createError, setCreateError] = useState<string>();
  const [creating, setCreating] = useState(false);
  const [projects, setProjects] = useState<PackProject[]>();
  const canWrite = env.can("resources/write");

  useEffect(() => {
    get<Items<ComposerItem> & { truncated?: boolean }>("/api/pack-projects/composer/resources").then(
      (l) => {
        setItems(l.items ?? []);
        setTruncated(!!l.truncated);
        setLoadError(undefined);
      },
      (e) => setLoadError(problemSentence(e)),
    );
  }, [env.context.workspace.id]);

  const loadProjects = useCallback(() => {
    get<Items<PackProject>>("/api/pack-projects").then(
      (l) => setProjects(l.items ?? []),
      () => setProjects(undefined),
    );
  }, []);
  useEffect(loadProjects, [loadProjects, env.context.workspace.id]);

  // Every change recomputes the whole closure; a newer selection aborts the older request.
  useEffect(() => {
    if (!selection.length) {
      setClosure(undefined);
      setPreviewError(undefined);
      return;
    }
    const ctl = new AbortController();
    setComputing(true);
    request<ComposerPreview>("/api/pack-projects/composer/preview", { method: "POST", body: { selection }, signal: ctl.signal }).then(
      (p) => {
        setClosure(p);
        setPreviewError(undefined);
        setComputing(false);
      },
      (e) => {
        if ((e as Error).name === "AbortError") return;
        setPreviewError(problemSentence(e));
        setComputing(false);
      },
    );
    return () => ctl.abort();
  }, [selection]);

  const move = (m: Move) => {
    setCreated(undefined);
    setSelection((s) => applyMove(s, m));
  };

  const errors = coordinateErrors(form);
  const create = async (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (Object.keys(errors).length || !selection.length) return;
    setCreating(true);
    try {
      const p = await post<PackProject>("/api/pack-projects", {
        publisher: form.publisher,
        name: form.name,
        version: form.version,
        displayName: form.displayName || undefined,
        description: form.description || undefined,
        audience: form.audience,
        purpose: form.purpose,
        categories: [],
        tags: [],
        selection,
      });
      setCreated(p);
      setCreateError(undefined);
      loadProjects();
    } catch (err) {
      setCreateError(problemSentence(err));
      setCreated(undefined);
    } finally {
      setCreating(false);
    }
  };

  const field = (k: keyof ProjectForm, label: string, opts: { required?: boolean; hint?: string; error?: string } = {}) => (
    <div className="field">
      <label htmlFor={`pf-${k}`}>{label}</label>
      <input
        id={`pf-${k}`}
        value={form[k]}
        required={opts.required}
        aria-invalid={touched && !!opts.error}
        aria-describedby={opts.hint || opts.error ? `pf-${k}-hint` : undefined}
        onChange={(e) => setForm({ ...form, [k]: e.target.value })}
        maxLength={k === "description" ? 1024 : 128}
      />
      {touched && opts.error ? (
        <p className="field-error" id={`pf-${k}-hint`}>
          {opts.error}
        </p>
      ) : (
        opts.hint && (
          <p className="muted small" id={`pf-${k}-hint`}>
            {opts.hint}
          </p>
        )
      )}
    </div>
  );

  const automatic = closure?.resources.filter((r) => r.origin === "automatic") ?? [];
  return (
    <>
      <p>
        <Link href="/packs">← Packs</Link>
      </p>
      <h1>Compose a Pack</h1>
      <p className="muted">Choose resources of the workspace's default namespace. What they need comes along automatically; ModelProfiles you leave out and every Secret become bindings that whoever installs the Pack chooses.</p>
      {loadError && (
        <p className="state-note error" role="alert">
          {loadError}
        </p>
      )}
      <div className="composer-grid">
        <section className="card" aria-labelledby="inv-h">
          <h2 id="inv-h">Workspace resources</h2>
          {items && items.length === 0 && <p className="state-note info">The workspace has no resources to compose yet.</p>}
          {truncated && <p className="state-note warn">The workspace has more resources of some kind than the Composer lists; only the first ones are shown.</p>}
          {items &&
            groupByKind(items).map((g) => (
              <fieldset key={g.kind} className="inventory-group" data-kind={g.kind}>
                <legend>{g.kind}</legend>
                {g.items.map((it) => {
                  const st = itemStatus(it, selection, closure);
                  const id = `inv-${it.key}`;
                  return (
                    <div key={it.key} className={`inventory-item status-${st}`} data-key={it.key}>
                      <input
                        type="checkbox"
                        id={id}
                        checked={st === "selected"}
                        disabled={!it.selectable}
                        aria-describedby={roleNote(it) || st === "automatic" ? `${id}-note` : undefined}
                        onChange={(e) => move({ op: e.target.checked ? "select" : "unselect", key: it.key })}
                      />
                      <label htmlFor={id}>
                        {it.displayName || it.name}
                        {it.displayName && it.displayName !== it.name && <span className="muted small"> {it.name}</span>}
                      </label>
                      {st === "automatic" && <span className="pill tone-busy">included automatically</span>}
                      {(roleNote(it) || st === "automatic") && (
                        <span className="muted small note" id={`${id}-note`}>
                          {st === "automatic" ? "Another selection needs it." : roleNote(it)}
                        </span>
                      )}
                    </div>
                  );
                })}
              </fieldset>
            ))}
        </section>
        <section className="card" aria-labelledby="closure-h" aria-busy={computing}>
          <h2 id="closure-h">In the Pack</h2>
          {!selection.length && <p className="muted">Nothing selected yet.</p>}
          {previewError && (
            <p className="state-note error" role="alert">
              {previewError}
            </p>
          )}
          {closure && selection.length > 0 && (
            <>
              <table aria-label="Pack contents">
                <thead>
                  <tr>
                    <th scope="col">Resource</th>
                    <th scope="col">Origin</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {closure.resources.map((r) => (
                    <tr key={r.key} data-key={r.key} data-origin={r.origin}>
                      <td>
                        {r.kind} <strong>{r.name}</strong>
                        {r.path && <div className="muted small">{r.path}</div>}
                      </td>
                      <td>
                        {r.origin === "direct" ? "Selected" : "Automatic"}
                        {requiredBySentence(r) && <div className="muted small">{requiredBySentence(r)}</div>}
                      </td>
                      <td>
                        {r.origin === "automatic" ? (
                          <button type="button" onClick={() => move({ op: "keep", key: r.key })} aria-label={`Keep ${r.kind} ${r.name}`}>
                            Keep
                          </button>
                        ) : (
                          <button type="button" onClick={() => move({ op: "unselect", key: r.key })} aria-label={`${removeLabel(r)}: ${r.kind} ${r.name}`}>
                            {removeLabel(r)}
                          </button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <p className="muted small">
                {closure.resources.length - automatic.length} selected, {automatic.length} automatic.
              </p>
              <h3>Bindings</h3>
              {closure.bindings.length === 0 ? (
                <p className="muted">None: the Pack carries everything it needs.</p>
              ) : (
                <ul className="composer-bindings" aria-label="Bindings">
                  {closure.bindings.map((b) => (
                    <li key={b.name} data-binding={b.name}>
                      <strong>{b.displayName || b.name}</strong>: a {bindingTarget(b.targetKind)} {b.required ? "(required)" : "(optional)"}
                      {b.for?.length ? <span className="muted small"> for {b.for.join(", ")}</span> : null}
                    </li>
                  ))}
                </ul>
              )}
              <h3>Issues</h3>
              {closure.issues.length === 0 ? (
                <p className="muted" data-state="no-issues">
                  No issues.
                </p>
              ) : (
                <ul className="issues" role="list" aria-label="Issues">
                  {closure.issues.map((i, n) => (
                    <li key={n} className="state-note warn">
                      {i.key ? <strong>{i.key}: </strong> : null}
                      {i.message}
                    </li>
                  ))}
                </ul>
              )}
            </>
          )}
        </section>
      </div>
      {canWrite ? (
        <form className="card project-form" onSubmit={(e) => void create(e)} aria-labelledby="meta-h" noValidate>
          <h2 id="meta-h">The Pack</h2>
          <div className="form-grid">
            {field("publisher", "Publisher", { required: true, hint: "Lowercase letters, digits and -.", error: errors.publisher })}
            {field("name", "Name", { required: true, hint: "Lowercase letters, digits and -.", error: errors.name })}
            {field("version", "Version", { required: true, hint: "A semantic version, such as 1.0.0.", error: errors.version })}
            {field("displayName", "Display name")}
          </div>
          {field("description", "Description")}
          <div className="form-grid">
            <div className="field">
              <label htmlFor="pf-audience">Audience</label>
              <select id="pf-audience" value={form.audience} onChange={(e) => setForm({ ...form, audience: e.target.value })}>
                <option value="universal">Universal</option>
                <option value="professional">Professional</option>
                <option value="personal">Personal</option>
              </select>
            </div>
            <div className="field">
              <label htmlFor="pf-purpose">Purpose</label>
              <select id="pf-purpose" value={form.purpose} onChange={(e) => setForm({ ...form, purpose: e.target.value })}>
                <option value="standard">Standard</option>
                <option value="template">Template</option>
                <option value="sample">Sample</option>
              </select>
            </div>
          </div>
          {touched && !selection.length && (
            <p className="field-error" role="alert">
              Select at least one resource.
            </p>
          )}
          <p className="toolbar">
            <button type="submit" className="primary" disabled={creating}>
              Create archive
            </button>
            {creating && <span role="status">Creating the archive…</span>}
          </p>
          {createError && (
            <p className="state-note error" role="alert">
              {createError}
            </p>
          )}
          {created && (
            <p className="state-note info" role="status" data-state="created">
              Archive ready: <a href={created.archiveUrl} download={created.fileName}>Download {created.fileName}</a>
              <span className="muted small"> ({created.direct.length} selected, {created.automatic.length} automatic)</span>
            </p>
          )}
        </form>
      ) : (
        <p className="state-note info">Creating an archive needs the right to change resources in this workspace.</p>
      )}
      {projects && (
        <section aria-labelledby="proj-h">
          <h2 id="proj-h">Archives created here</h2>
          {projects.length === 0 ? (
            <p className="muted" data-state="empty">
              None yet.
            </p>
          ) : (
            <table aria-label="Pack projects">
              <thead>
                <tr>
                  <th scope="col">Archive</th>
                  <th scope="col">Resources</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {projects.map((p) => (
                  <tr key={p.id}>
                    <td className="wrap">
                      <a href={p.archiveUrl} download={p.fileName}>
                        {p.fileName}
                      </a>
                    </td>
                    <td>
                      {p.direct?.length ?? 0} selected, {p.automatic?.length ?? 0} automatic
                    </td>
                    <td>{when(p.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      )}
    </>
  );
}

