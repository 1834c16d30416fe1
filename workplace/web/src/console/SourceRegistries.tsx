import { useCallback, useEffect, useId, useState, type FormEvent } from "react";
import { ApiError, enc, get, post, request, requestWithETag, writeUnlessChanged } from "../shared/api";
import { when } from "../shared/format";
import { Link, navigate, useLocation } from "../shared/router";
import type { Items } from "../shared/types";
import type { ConsoleEnv } from "./App";
import {
  durationFields,
  durationLabels,
  durationWords,
  elapsed,
  emptyRegistrationForm,
  errorSentence,
  formErrors,
  formFromRegistration,
  freshness,
  freshnessWords,
  isEtagConflict,
  nameFromDisplayName,
  OFFICIAL_REGISTRATION,
  originLabel,
  outcomeLabel,
  outcomeTone,
  problemSentence,
  refreshDefaults,
  requestFromForm,
  shortDigest,
  trustPolicies,
  trustWords,
  type RefreshRecord,
  type Registration,
  type RegistrationForm,
} from "./sourceregistries";

export const REGISTRIES_PATH = "/settings/source-registries";
const api = "/api/sourceregistries";
const itemPath = (name: string) => `${api}/${enc(name)}`;
const readRegistration = (name: string) => requestWithETag<Registration>(itemPath(name));
// What a person edits and confirms: the status is the platform's to write.
const definitionOf = (r: Registration) => r.properties;

function Problem({ error }: { error?: string }) {
  return error ? (
    <p className="state-note error" role="alert">
      {error}
    </p>
  ) : null;
}

/** NotPermitted is what a person who is not a Platform administrator sees instead of the pages. */
export function NotPermitted({ what }: { what: string }) {
  return (
    <p className="state-note warn" data-state="not-permitted">
      Only Platform administrators manage {what}. Ask one of them to register a registry or to import a Source for you.
    </p>
  );
}

/** notOfferedYet: a route this server does not answer is said plainly, never filled with made-up data. */
export const notOfferedYet = (e: unknown) => e instanceof ApiError && (e.status === 404 || e.status === 405);

function FreshnessPill({ r }: { r: Registration }) {
  const f = freshness(r);
  const tone = f === "fresh" ? "ok" : f === "stale" ? "warn" : "";
  return (
    <span className={`pill tone-${tone}`} data-freshness={f}>
      {freshnessWords[f]}
    </span>
  );
}

/** The Source registries page: the registrations with their freshness, and one opened below to edit, refresh or delete. */
export function SourceRegistries({ env }: { env: ConsoleEnv }) {
  const loc = useLocation();
  const selected = loc.query.get("registration") ?? undefined;
  const creating = loc.query.get("new") === "1";
  const [items, setItems] = useState<Registration[]>();
  const [error, setError] = useState<string>();
  const [missing, setMissing] = useState(false);
  const admin = env.context.platformAdministrator;

  const load = useCallback(() => {
    if (!admin) return;
    get<Items<Registration>>(api).then(
      (l) => {
        setItems(l.items ?? []);
        setError(undefined);
        setMissing(false);
      },
      (e) => {
        if (notOfferedYet(e)) setMissing(true);
        else setError(problemSentence(e));
      },
    );
  }, [admin]);
  useEffect(load, [load]);

  const head = (
    <div className="toolbar page-head">
      <h1>Source registries</h1>
      {admin && <Link href={`${REGISTRIES_PATH}/discovery`}>Discover Sources</Link>}
    </div>
  );
  if (!admin)
    return (
      <>
        {head}
        <NotPermitted what="Source registries" />
      </>
    );
  if (missing)
    return (
      <>
        {head}
        <p className="state-note warn" data-state="not-offered">
          This server does not offer Source registries (<code>/api/sourceregistries</code> does not answer). Nothing is shown rather than made-up registrations.
        </p>
      </>
    );
  return (
    <>
      {head}
      <p className="muted">
        A registry lists Sources and their opaque versions; the Console reads what a refresh cached, and imports one exact version to install its Pack. Registrations belong to the instance.
      </p>
      <Problem error={error} />
      {items && items.length === 0 && (
        <p className="state-note info" data-state="empty">
          No registry is registered.
        </p>
      )}
      {items && items.length > 0 && (
        <div className="scroll-x">
          <table aria-label="Registrations" className="registries" tabIndex={0}>
            <thead>
              <tr>
                <th scope="col">Registry</th>
                <th scope="col">Enabled</th>
                <th scope="col">Trust policy</th>
                <th scope="col">Origin</th>
                <th scope="col">Freshness</th>
                <th scope="col">Last success</th>
                <th scope="col">Failures in a row</th>
                <th scope="col">Last refresh</th>
              </tr>
            </thead>
            <tbody>
              {items.map((r) => (
                <tr key={r.name} data-registration={r.name} aria-current={r.name === selected ? "true" : undefined}>
                  <td>
                    <Link href={`${REGISTRIES_PATH}?registration=${enc(r.name)}`}>{r.properties.displayName || r.name}</Link>
                    {r.name === OFFICIAL_REGISTRATION && <span className="pill">built in</span>}
                    <div className="muted small wrap">
                      <code>{r.name}</code> · {r.properties.indexUrl}
                    </div>
                  </td>
                  <td>{r.properties.enabled === false ? "No" : "Yes"}</td>
                  <td>{r.properties.trustPolicy || "untrusted"}</td>
                  <td>{originLabel(r.status?.origin)}</td>
                  <td>
                    <FreshnessPill r={r} />
                  </td>
                  <td>{r.status?.lastSuccessTime ? when(r.status.lastSuccessTime) : <span className="muted">never</span>}</td>
                  <td>{r.status?.consecutiveFailures ?? 0}</td>
                  <td>
                    {r.status?.lastRefresh ? (
                      <>
                        <span className={`pill tone-${outcomeTone(r.status.lastRefresh.outcome)}`}>{outcomeLabel(r.status.lastRefresh.outcome)}</span>
                        {r.status.lastRefresh.errorCode && (
                          <div className="small error-code">
                            <code title={errorSentence(r.status.lastRefresh.errorCode)}>{r.status.lastRefresh.errorCode}</code>
                          </div>
                        )}
                      </>
                    ) : (
                      <span className="muted">none</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!creating && !selected && (
        <p>
          <button type="button" className="primary" onClick={() => navigate(`${REGISTRIES_PATH}?new=1`)}>
            Add a registry
          </button>
        </p>
      )}
      {creating && (
        <RegistrationEditor
          key="new"
          onSaved={(r) => {
            load();
            navigate(`${REGISTRIES_PATH}?registration=${enc(r.name)}`);
          }}
          onCancel={() => navigate(REGISTRIES_PATH)}
        />
      )}
      {selected && !creating && <RegistrationDetail key={selected} name={selected} onChanged={load} />}
    </>
  );
}

/** RegistrationDetail: one registration read with its ETag, its refresh and history, its edit form and delete. */
function RegistrationDetail({ name, onChanged }: { name: string; onChanged: () => void }) {
  const [data, setData] = useState<{ r: Registration; etag: string }>();
  const [error, setError] = useState<string>();
  const [gone, setGone] = useState(false);
  const [note, setNote] = useState<{ kind: "info" | "error" | "warn"; text: string }>();
  const [working, setWorking] = useState<string>();
  const [historyTick, setHistoryTick] = useState(0);
  const [confirmDelete, setConfirmDelete] = useState(false);

  // The origin is classified at every read of the trust route (the status holds the last refresh's).
  const [trust, setTrust] = useState<{ origin: string; originReasons?: string[]; evaluatedAt?: string }>();
  const load = useCallback(async () => {
    get<{ origin: string; originReasons?: string[] }>(`${itemPath(name)}/trust`).then(setTrust, () => setTrust(undefined));
    try {
      const r = await readRegistration(name);
      setData({ r: r.body, etag: r.etag || r.body.etag || "" });
      setError(undefined);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) setGone(true);
      else setError(problemSentence(e));
    }
  }, [name]);
  useEffect(() => void load(), [load]);

  if (gone)
    return (
      <p className="state-note warn" data-state="not-found">
        There is no registration named <code>{name}</code>. <Link href={REGISTRIES_PATH}>Back to the list</Link>
      </p>
    );
  if (!data) return <Problem error={error} />;
  const r = data.r;
  const official = r.status?.official === true || r.name === OFFICIAL_REGISTRATION;

  const refresh = async () => {
    setWorking("refresh");
    setNote(undefined);
    try {
      const res = await post<{ outcome?: string; errorCode?: string; digest?: string; lastRefresh?: RefreshRecord } & Partial<RefreshRecord>>(`${itemPath(name)}/refresh`);
      const rec = (res?.lastRefresh ?? res ?? {}) as Partial<RefreshRecord>;
      const outcome = rec.outcome;
      const text =
        outcome === "failed"
          ? `The refresh failed${rec.errorCode ? ` (${errorSentence(rec.errorCode)})` : ""}; ${r.status?.currentObservationId ? "the last good observation is kept." : "there is no observation of this registry yet."}`
          : outcome === "notModified"
            ? "The index is unchanged (HTTP 304): validated without transferring it again."
            : outcome === "recovered"
              ? `The refresh succeeded after failures${rec.digest ? `: index ${shortDigest(rec.digest)}` : ""}.`
              : `Refreshed${rec.digest ? `: index ${shortDigest(rec.digest)}` : ""}.`;
      setNote({ kind: outcome === "failed" ? "error" : "info", text });
    } catch (e) {
      setNote({ kind: "error", text: `The refresh did not run: ${problemSentence(e)}` });
    } finally {
      setWorking(undefined);
      setHistoryTick((t) => t + 1);
      void load();
      onChanged();
    }
  };

  const remove = async () => {
    setWorking("delete");
    try {
      await writeUnlessChanged({ body: data.r, etag: data.etag }, () => readRegistration(name), definitionOf, (etag) =>
        request<void>(itemPath(name), { method: "DELETE", headers: { "If-Match": etag } }),
      );
      onChanged();
      navigate(REGISTRIES_PATH);
    } catch (e) {
      setConfirmDelete(false);
      if (isEtagConflict(e)) {
        setNote({ kind: "error", text: "Not deleted: someone changed this registration since you opened it. Look at it again, then delete." });
        void load();
      } else setNote({ kind: "error", text: `Not deleted: ${problemSentence(e)}` });
    } finally {
      setWorking(undefined);
    }
  };

  return (
    <section className="card registry-detail" aria-labelledby="reg-h" data-registration-detail={r.name}>
      <div className="toolbar">
        <h2 id="reg-h">{r.properties.displayName || r.name}</h2>
        <FreshnessPill r={r} />
        <span className="spacer" />
        <Link href={REGISTRIES_PATH}>Close</Link>
      </div>
      <dl className="facts">
        <dt>Name</dt>
        <dd>
          <code>{r.name}</code>
          {official && " (the built-in registration: it can be disabled or reconfigured, never deleted)"}
        </dd>
        <dt>Index URL</dt>
        <dd className="wrap">{r.properties.indexUrl}</dd>
        <dt>Origin</dt>
        <dd data-origin={trust?.origin ?? r.status?.origin ?? ""}>
          {originLabel(trust?.origin ?? r.status?.origin)}
          {(trust?.originReasons?.length ?? 0) > 0 && <span className="muted"> ({trust!.originReasons!.join(", ")})</span>}
        </dd>
        <dt>Last success</dt>
        <dd>{r.status?.lastSuccessTime ? when(r.status.lastSuccessTime) : "never"}</dd>
        <dt>Failures in a row</dt>
        <dd>{r.status?.consecutiveFailures ?? 0}</dd>
        {r.status?.lastRefresh && (
          <>
            <dt>Last refresh</dt>
            <dd>
              {outcomeLabel(r.status.lastRefresh.outcome)} {r.status.lastRefresh.time && when(r.status.lastRefresh.time)}
              {r.status.lastRefresh.errorCode && <> · {errorSentence(r.status.lastRefresh.errorCode)}</>}
              {r.status.lastRefresh.digest && (
                <>
                  {" "}
                  · <code title={r.status.lastRefresh.digest}>{shortDigest(r.status.lastRefresh.digest)}</code>
                </>
              )}
            </dd>
          </>
        )}
      </dl>
      <p className="toolbar">
        <button type="button" className="primary" onClick={() => void refresh()} disabled={!!working || r.properties.enabled === false}>
          Refresh now
        </button>
        {r.properties.enabled === false && <span className="muted small">Enable the registration to refresh it.</span>}
        {working === "refresh" && <span role="status">Refreshing…</span>}
        {!official && !confirmDelete && (
          <button type="button" className="danger" onClick={() => setConfirmDelete(true)} disabled={!!working}>
            Delete…
          </button>
        )}
      </p>
      {confirmDelete && (
        <div className="state-note warn" role="region" aria-label="Delete the registration">
          <p>
            Deleting <strong>{r.properties.displayName || r.name}</strong> stops its refreshes and imports. Its cached observations and refresh history are kept for provenance, and Sources already imported from
            it stay.
          </p>
          <p className="toolbar">
            <button type="button" className="danger" onClick={() => void remove()} disabled={!!working}>
              Delete {r.name}
            </button>
            <button type="button" onClick={() => setConfirmDelete(false)}>
              Cancel
            </button>
          </p>
        </div>
      )}
      {note && (
        <p className={`state-note ${note.kind}`} role={note.kind === "error" ? "alert" : "status"} data-note="refresh">
          {note.text}
        </p>
      )}
      <Problem error={error} />
      <RefreshHistory name={r.name} tick={historyTick} />
      <RegistrationEditor
        key={data.etag}
        existing={data}
        onSaved={(saved) => {
          setNote({ kind: "info", text: "Saved." });
          // The write's answer carries the new ETag: a delete or another save right after must
          // not send the one from before the save while the read below is still on its way.
          if (saved.etag) setData({ r: saved, etag: saved.etag });
          void load();
          onChanged();
        }}
        onConflict={(text) => {
          // The editor is drawn again from the current values; the sentence stays above it.
          setNote({ kind: "error", text });
          void load();
        }}
      />
    </section>
  );
}

/** RefreshHistory lists a registration's durable refresh records, newest first as the server gives them. */
function RefreshHistory({ name, tick }: { name: string; tick: number }) {
  const [items, setItems] = useState<RefreshRecord[]>();
  const [error, setError] = useState<string>();
  const [missing, setMissing] = useState(false);
  useEffect(() => {
    get<Items<RefreshRecord>>(`${itemPath(name)}/refreshes?take=50`).then(
      (l) => {
        setItems(l.items ?? []);
        setError(undefined);
      },
      (e) => {
        if (notOfferedYet(e)) setMissing(true);
        else setError(problemSentence(e));
      },
    );
  }, [name, tick]);
  return (
    <section aria-labelledby="hist-h">
      <h3 id="hist-h">Refresh history</h3>
      {missing && <p className="state-note warn">This server does not return the refresh history yet.</p>}
      <Problem error={error} />
      {items && items.length === 0 && <p className="muted" data-state="no-history">No refresh has run yet.</p>}
      {items && items.length > 0 && (
        <div className="scroll-x">
          <table aria-label="Refresh history" tabIndex={0}>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Trigger</th>
                <th scope="col">Outcome</th>
                <th scope="col">Duration</th>
                <th scope="col">Retries</th>
                <th scope="col">Index digest</th>
                <th scope="col">Error code</th>
              </tr>
            </thead>
            <tbody>
              {items.map((h, i) => (
                <tr key={h.id ?? h.correlationId ?? i} data-outcome={h.outcome} title={h.correlationId ? `Correlation id ${h.correlationId}` : undefined}>
                  <td>{when(h.finishedAt ?? h.startedAt)}</td>
                  <td>{h.trigger === "scheduled" ? "Scheduled" : h.trigger === "manual" ? "Manual" : h.trigger}</td>
                  <td>
                    <span className={`pill tone-${outcomeTone(h.outcome)}`}>{outcomeLabel(h.outcome)}</span>
                  </td>
                  <td>{elapsed(h)}</td>
                  <td>{h.retryCount ?? 0}</td>
                  <td>{h.digest ? <code title={h.digest}>{shortDigest(h.digest)}</code> : ""}</td>
                  <td>{h.errorCode ? <code title={errorSentence(h.errorCode)}>{h.errorCode}</code> : ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

interface NamedSecret {
  metadata: { name: string };
  definition?: { displayName?: string };
  status?: { state?: string };
}

/** RegistrationEditor creates a registration, or edits one with its ETag (a conflict reloads it and says so). */
function RegistrationEditor({ existing, onSaved, onCancel, onConflict }: { existing?: { r: Registration; etag: string }; onSaved: (r: Registration) => void; onCancel?: () => void; onConflict?: (sentence: string) => void }) {
  const creating = !existing;
  const [form, setForm] = useState<RegistrationForm>(() => (existing ? formFromRegistration(existing.r) : emptyRegistrationForm()));
  const [nameEdited, setNameEdited] = useState(false);
  const [shown, setShown] = useState(false);
  const [error, setError] = useState<string>();
  const [saving, setSaving] = useState(false);
  const [secrets, setSecrets] = useState<NamedSecret[]>();
  const [secretsError, setSecretsError] = useState<string>();
  const uid = useId();
  const id = (k: string) => `${uid}-${k}`;
  const errors = shown ? formErrors(form, creating) : {};

  useEffect(() => {
    if (form.authenticationMode !== "staticBearer" || secrets) return;
    get<Items<NamedSecret>>("/api/instance/secrets").then(
      (l) => setSecrets(l.items ?? []),
      (e) => setSecretsError(problemSentence(e)),
    );
  }, [form.authenticationMode, secrets]);

  const set = (patch: Partial<RegistrationForm>) => setForm((f) => ({ ...f, ...patch }));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setShown(true);
    if (Object.keys(formErrors(form, creating)).length) return;
    setSaving(true);
    setError(undefined);
    try {
      const body = requestFromForm(form);
      const saved = creating
        ? await post<Registration>(api, body)
        : await writeUnlessChanged({ body: existing!.r, etag: existing!.etag }, () => readRegistration(form.name), definitionOf, (etag) =>
            request<Registration>(itemPath(form.name), { method: "PUT", body, headers: { "If-Match": etag } }),
          );
      onSaved(saved ?? { name: form.name, properties: body.properties });
    } catch (err) {
      if (isEtagConflict(err) && onConflict) onConflict(problemSentence(err));
      else setError(problemSentence(err));
    } finally {
      setSaving(false);
    }
  };
  const fieldError = (k: string) =>
    errors[k] ? (
      <span className="field-error" id={id(`${k}-err`)}>
        {errors[k]}
      </span>
    ) : null;
  const described = (k: string) => (errors[k] ? id(`${k}-err`) : undefined);

  return (
    <form className={creating ? "card registry-form" : "registry-form"} onSubmit={submit} aria-labelledby={id("h")} noValidate>
      <h3 id={id("h")}>{creating ? "Add a registry" : "Settings"}</h3>
      <label htmlFor={id("display")}>Display name</label>
      <input
        id={id("display")}
        value={form.displayName}
        maxLength={256}
        onChange={(e) => set({ displayName: e.target.value, ...(creating && !nameEdited ? { name: nameFromDisplayName(e.target.value) } : {}) })}
      />
      {creating && (
        <>
          <label htmlFor={id("name")}>Name (lowercase letters, digits and -; cannot change later)</label>
          <input
            id={id("name")}
            value={form.name}
            maxLength={63}
            aria-invalid={!!errors.name}
            aria-describedby={described("name")}
            onChange={(e) => {
              setNameEdited(true);
              set({ name: e.target.value });
            }}
          />
          {fieldError("name")}
        </>
      )}
      <label htmlFor={id("url")}>Index URL</label>
      <input id={id("url")} type="url" value={form.indexUrl} maxLength={2048} placeholder="https://registry.example/index.json" aria-invalid={!!errors.indexUrl} aria-describedby={described("indexUrl")} onChange={(e) => set({ indexUrl: e.target.value })} />
      {fieldError("indexUrl")}
      <label className="check">
        <input type="checkbox" checked={form.enabled} onChange={(e) => set({ enabled: e.target.checked })} /> Enabled (a disabled registration is neither refreshed nor imported from)
      </label>

      <fieldset>
        <legend>Trust policy</legend>
        {trustPolicies.map((t) => (
          <label key={t} className="check">
            <input type="radio" name={id("trust")} value={t} checked={form.trustPolicy === t} onChange={() => set({ trustPolicy: t })} /> {trustWords[t]}
            {t === "untrusted" && <span className="muted"> (default)</span>}
          </label>
        ))}
        {!creating && existing!.r.properties.trustPolicy !== form.trustPolicy && <p className="muted small">A change of trust policy is audited, and every trust answer is recomputed from it at once.</p>}
      </fieldset>

      <fieldset>
        <legend>Endpoint policy</legend>
        <label className="check">
          <input type="checkbox" checked={form.allowHttp} onChange={(e) => set({ allowHttp: e.target.checked })} /> Allow plain HTTP <span className="muted">(default off: HTTPS required)</span>
        </label>
        <label className="check">
          <input type="checkbox" checked={form.allowPrivateNetwork} onChange={(e) => set({ allowPrivateNetwork: e.target.checked })} /> Allow private network addresses{" "}
          <span className="muted">(default off: public addresses only)</span>
        </label>
        {(form.allowHttp || form.allowPrivateNetwork) && (
          <p className="state-note warn" data-warning="endpoint-policy">
            {form.allowHttp && "Plain HTTP lets anyone on the path read and change the index and its manifests. "}
            {form.allowPrivateNetwork && "Private addresses let this registration reach machines inside your network; allow it only for a registry you run. "}
            Link-local and multicast addresses stay denied, and redirects never leave the index's origin.
          </p>
        )}
      </fieldset>

      <fieldset>
        <legend>Authentication</legend>
        <label className="check">
          <input type="radio" name={id("auth")} checked={form.authenticationMode !== "staticBearer"} onChange={() => set({ authenticationMode: "none", credentialName: "" })} /> None (a public registry; default)
        </label>
        <label className="check">
          <input type="radio" name={id("auth")} checked={form.authenticationMode === "staticBearer"} onChange={() => set({ authenticationMode: "staticBearer" })} /> Bearer token from an instance Secret
        </label>
        {form.authenticationMode === "staticBearer" && (
          <>
            <label htmlFor={id("secret")}>Instance Secret</label>
            <select id={id("secret")} value={form.credentialName} aria-invalid={!!errors.credential} aria-describedby={described("credential")} onChange={(e) => set({ credentialName: e.target.value })}>
              <option value="">{secrets ? "Choose…" : "Loading…"}</option>
              {form.credentialName && !secrets?.some((s) => s.metadata.name === form.credentialName) && <option value={form.credentialName}>{form.credentialName}</option>}
              {secrets?.map((s) => (
                <option key={s.metadata.name} value={s.metadata.name}>
                  {s.definition?.displayName ? `${s.definition.displayName} (${s.metadata.name})` : s.metadata.name}
                  {s.status?.state === "Missing" ? " — no value yet" : ""}
                </option>
              ))}
            </select>
            {fieldError("credential")}
            {secrets && secrets.length === 0 && <p className="muted small">The instance has no Secret yet. The Console has no page for Secrets: create one with <code>PUT /api/instance/secrets/&lt;name&gt;</code> and its value with <code>PUT /api/instance/secrets/&lt;name&gt;/value</code> (or <code>kubectl apply</code> in the namespace <code>platform-instance</code>), then come back to this form.</p>}
            <Problem error={secretsError} />
            <p className="muted small">The token is sent only to this registration's origin, for its own requests, and never shown again.</p>
          </>
        )}
      </fieldset>

      <fieldset>
        <legend>Refresh</legend>
        <label className="check">
          <input type="checkbox" checked={form.periodicEnabled} onChange={(e) => set({ periodicEnabled: e.target.checked })} /> Refresh periodically <span className="muted">(default off: refresh by hand)</span>
        </label>
        <p className="muted small">Durations are [days.]hh:mm:ss. An empty field keeps the default shown in it.</p>
        <div className="duration-grid">
          {durationFields.map((k) => (
            <div key={k}>
              <label htmlFor={id(k)}>{durationLabels[k]}</label>
              <input
                id={id(k)}
                value={form.durations[k]}
                placeholder={refreshDefaults[k]}
                inputMode="numeric"
                aria-invalid={!!errors[k]}
                aria-describedby={errors[k] ? id(`${k}-err`) : id(`${k}-words`)}
                onChange={(e) => set({ durations: { ...form.durations, [k]: e.target.value } })}
              />
              {errors[k] ? (
                fieldError(k)
              ) : (
                <span className="muted small" id={id(`${k}-words`)}>
                  {durationWords(form.durations[k] || refreshDefaults[k])}
                  {!form.durations[k] && " (default)"}
                </span>
              )}
            </div>
          ))}
          <div>
            <label htmlFor={id("attempts")}>Retries after a failure</label>
            <input id={id("attempts")} value={form.maximumAttempts} inputMode="numeric" placeholder={String(refreshDefaults.maximumAttempts)} aria-invalid={!!errors.maximumAttempts} aria-describedby={described("maximumAttempts")} onChange={(e) => set({ maximumAttempts: e.target.value })} />
            {fieldError("maximumAttempts")}
          </div>
          <div>
            <label htmlFor={id("retained")}>Observations kept</label>
            <input id={id("retained")} value={form.retainedObservations} inputMode="numeric" placeholder={String(refreshDefaults.retainedObservations)} aria-invalid={!!errors.retainedObservations} aria-describedby={described("retainedObservations")} onChange={(e) => set({ retainedObservations: e.target.value })} />
            {fieldError("retainedObservations")}
          </div>
        </div>
      </fieldset>
      <p className="toolbar">
        <button type="submit" className="primary" disabled={saving}>
          {creating ? "Add registry" : "Save changes"}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
        {saving && <span role="status">Saving…</span>}
      </p>
      {shown && Object.keys(errors).length > 0 && (
        <p className="state-note error" role="alert">
          Check the fields marked above.
        </p>
      )}
      <Problem error={error} />
    </form>
  );
}
