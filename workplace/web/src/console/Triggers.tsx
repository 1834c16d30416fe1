import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent, type ReactNode } from "react";
import { ApiError, del, enc, get, post, put, request, requestWithETag, writeUnlessChanged } from "../shared/api";
import { at, when } from "../shared/format";
import { Link, navigate } from "../shared/router";
import type { Items } from "../shared/types";
import type { ConsoleEnv } from "./App";
import {
  emptyForm,
  fieldErrorsFrom,
  filterZones,
  formFromTrigger,
  latestOccurrence,
  nameFrom,
  parseInput,
  policyDefaults,
  previewLine,
  requestFromForm,
  scheduleOf,
  scheduleSummary,
  timeZones,
  triggerState,
  type FieldErrors,
  type Occurrence,
  type PreviewInstant,
  type Trigger,
  type TriggerForm,
  targetableFlows,
} from "./triggers";

interface Flow {
  metadata: { name: string; tags?: Record<string, string> };
  definition?: { displayName?: string };
  systemManaged?: boolean;
  status?: { activeVersion?: string };
}

const base = "/api/triggers";
const itemPath = (name: string) => `${base}/${enc(name)}`;
const readTrigger = (name: string) => requestWithETag<Trigger>(itemPath(name));
// What a person edits and confirms: its status (the next and last firing) moves on its own.
const definitionOf = (t: Trigger) => ({ name: t.metadata.name, tags: t.metadata.tags ?? {}, annotations: t.metadata.annotations ?? {}, definition: t.definition });

// The list and the detail follow the scheduler without a push channel for Triggers: a light poll.
const LIST_POLL_MS = 10_000;
const DETAIL_POLL_MS = 4_000;
const PREVIEW_DEBOUNCE_MS = 350;

function usePoll(fn: () => void, ms: number) {
  useEffect(() => {
    const t = setInterval(fn, ms);
    return () => clearInterval(t);
  }, [fn, ms]);
}

function problem(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.unavailable) return "The platform API is unavailable; nothing is shown until it answers again.";
    if (e.status === 403) return "You are not permitted to see this.";
    return e.message;
  }
  return String(e);
}

function StatePill({ t }: { t: Trigger }) {
  const s = triggerState(t);
  return <span className={`pill trigger-${s.toLowerCase()}`}>{s}</span>;
}

function OutcomePill({ o }: { o: Occurrence }) {
  return <span className={`pill outcome-${o.outcome.toLowerCase()}`}>{o.outcome}</span>;
}

// A page of the list; the API answers at most 100.
const PAGE = 50;
const SEARCH_DEBOUNCE_MS = 300;

/**
 * Spec "Trigger behavior" 6: the searchable list of the workspace's Triggers, with NEXT and LAST,
 * a page at a time: the API searches and pages (take, skip, search), so a workspace with many
 * Triggers is never read at once.
 */
export function Triggers({ env }: { env: ConsoleEnv }) {
  const [items, setItems] = useState<Trigger[]>();
  const [hasMore, setHasMore] = useState(false);
  const [error, setError] = useState<string>();
  const [query, setQuery] = useState("");
  const [search, setSearch] = useState("");
  const [skip, setSkip] = useState(0);

  // A changed search starts again from the first page; an unchanged one (the first render, spaces
  // typed) keeps the page the person went to.
  useEffect(() => {
    const q = query.trim();
    if (q === search) return;
    const t = setTimeout(() => {
      setSearch(q);
      setSkip(0);
    }, SEARCH_DEBOUNCE_MS);
    return () => clearTimeout(t);
  }, [query, search]);

  const load = useCallback(async () => {
    try {
      const q = new URLSearchParams({ take: String(PAGE + 1), skip: String(skip) });
      if (search) q.set("search", search);
      const l = await get<Items<Trigger>>(`${base}?${q}`);
      setHasMore(l.items.length > PAGE);
      setItems(l.items.slice(0, PAGE));
      setError(undefined);
    } catch (e) {
      setItems(undefined);
      setError(`The Triggers cannot be read: ${problem(e)}`);
    }
  }, [skip, search]);
  useEffect(() => {
    void load();
  }, [load, env.context.workspace.id]);
  usePoll(load, LIST_POLL_MS);

  const first = skip + 1;

  return (
    <>
      <div className="toolbar">
        <h1>Triggers</h1>
        {env.can("resources/write") && (
          <Link href="/triggers/-/new" className="button primary">New Trigger</Link>
        )}
        <button type="button" onClick={() => void load()}>Refresh</button>
      </div>
      <p className="muted">Schedules that submit autonomous Work to a Flow of this workspace, each instant once.</p>
      <div className="search">
        <label htmlFor="trigger-search">Search Triggers</label>
        <input id="trigger-search" type="search" value={query} onChange={(e) => setQuery(e.target.value)} placeholder="Name, Flow, schedule, time zone or state" />
      </div>
      {error && <p className="state-note error" role="alert" data-state="error">{error}</p>}
      {!items && !error && <p role="status">Loading Triggers…</p>}
      {items && items.length === 0 && !search && skip === 0 && <p className="state-note info" data-state="empty">No Trigger in this workspace yet.</p>}
      {items && items.length === 0 && search && skip === 0 && (
        <p className="state-note info" data-state="no-match">No Trigger matches “{search}”.</p>
      )}
      {items && items.length === 0 && skip > 0 && <p className="state-note info" data-state="empty">No Trigger on this page.</p>}
      {items && items.length > 0 && (
        <table aria-label="Triggers">
          <thead>
            <tr>
              <th scope="col">Trigger</th>
              <th scope="col">Schedule</th>
              <th scope="col">Flow</th>
              <th scope="col">State</th>
              <th scope="col">Next</th>
              <th scope="col">Last</th>
            </tr>
          </thead>
          <tbody>
            {items.map((t) => {
              const last = t.status?.lastOccurrence;
              const zone = t.definition.source.schedule?.timeZone;
              return (
                <tr key={t.metadata.name} data-trigger={t.metadata.name}>
                  <td>
                    <Link href={`/triggers/${enc(t.metadata.name)}`}>{t.definition.displayName || t.metadata.name}</Link>
                    {t.definition.displayName && <div className="muted">{t.metadata.name}</div>}
                  </td>
                  <td>{scheduleSummary(t.definition.source.schedule)}</td>
                  <td>{t.definition.target.flow?.name ?? "—"}</td>
                  <td><StatePill t={t} /></td>
                  <td data-column="next">{t.status?.nextFireTime ? <time dateTime={t.status.nextFireTime}>{at(t.status.nextFireTime, zone)}</time> : <span className="muted">none</span>}</td>
                  <td data-column="last">
                    {last ? (
                      <>
                        <time dateTime={last.firedAt ?? last.scheduledTime}>{when(last.firedAt ?? last.scheduledTime)}</time> <OutcomePill o={last} />
                      </>
                    ) : (
                      <span className="muted">never</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {(skip > 0 || hasMore) && (
        <div className="toolbar" aria-label="Pages">
          <button type="button" disabled={skip === 0} onClick={() => setSkip((n) => Math.max(0, n - PAGE))}>Previous</button>
          <span className="muted" data-page-range>
            Triggers {first}–{skip + (items?.length ?? 0)}
          </span>
          <button type="button" disabled={!hasMore} onClick={() => setSkip((n) => n + PAGE)}>Next</button>
        </div>
      )}
    </>
  );
}

/** Hint and error lines under a control; ids for its aria-describedby. */
function Note({ id, hint, error }: { id: string; hint?: ReactNode; error?: string }) {
  return (
    <>
      {hint && <p id={`${id}-hint`} className="hint">{hint}</p>}
      {error && <p id={`${id}-error`} className="field-error" data-field-error={id}>{error}</p>}
    </>
  );
}

function described(id: string, hint: boolean, error?: string) {
  const ids = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ");
  return { id, "aria-invalid": error ? true : undefined, "aria-describedby": ids || undefined };
}

const defaultZone = () => {
  const z = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return z && z !== "Etc/Unknown" ? z : "UTC";
};

/**
 * The guided editor (create when name is undefined): a schedule with the control of its type, an
 * IANA zone, a Flow of the workspace, the input checked as JSON, the policies with their defaults,
 * and the server's own preview of the next instants as the schedule changes.
 */
export function TriggerEditor({ env, name }: { env: ConsoleEnv; name?: string }) {
  const editing = name !== undefined;
  const [form, setForm] = useState<TriggerForm>(() => emptyForm(defaultZone()));
  const [loaded, setLoaded] = useState<{ trigger: Trigger; etag: string }>();
  const [loadError, setLoadError] = useState<string>();
  const [nameTouched, setNameTouched] = useState(editing);
  const [flows, setFlows] = useState<Flow[]>();
  const [flowsError, setFlowsError] = useState<string>();
  const [saveErrors, setSaveErrors] = useState<FieldErrors>({});
  const [formError, setFormError] = useState<ReactNode>();
  const [saving, setSaving] = useState(false);
  const [zoneQuery, setZoneQuery] = useState("");
  const [count, setCount] = useState(5);
  const [preview, setPreview] = useState<{ instants?: PreviewInstant[]; errors: FieldErrors; error?: string; loading: boolean }>({ errors: {}, loading: false });
  const zones = useMemo(() => timeZones(), []);

  const loadTrigger = useCallback(async () => {
    if (!editing) return;
    try {
      const r = await readTrigger(name);
      setLoaded({ trigger: r.body, etag: r.etag });
      setForm(formFromTrigger(r.body));
      setLoadError(undefined);
      setFormError(undefined);
      setSaveErrors({});
    } catch (e) {
      setLoadError(e instanceof ApiError && e.status === 404 ? `The Trigger ${name} does not exist in this workspace.` : problem(e));
    }
  }, [editing, name]);
  useEffect(() => {
    void loadTrigger();
  }, [loadTrigger]);
  useEffect(() => {
    get<Items<Flow>>("/api/flows").then(
      (l) => setFlows(l.items),
      (e) => setFlowsError(`The Flows cannot be read: ${problem(e)}`),
    );
  }, [env.context.workspace.id]);

  const set = <K extends keyof TriggerForm>(key: K, value: TriggerForm[K]) => {
    setForm((f) => {
      const next = { ...f, [key]: value };
      if (key === "displayName" && !nameTouched && !editing) next.name = nameFrom(value as string);
      return next;
    });
    // A "not saved" sentence about the fields goes once they change; the one about a concurrent
    // change (a node with its Reload button) stays until the reload.
    setFormError((m) => (typeof m === "string" ? undefined : m));
    setSaveErrors((errs) => {
      if (!(key in errs)) return errs;
      const next = { ...errs };
      delete next[key];
      return next;
    });
  };

  // The preview: the server parses the proposed schedule as it would the Trigger's, so its 422s
  // are the ones a save would meet.
  const schedule = scheduleOf(form);
  const scheduleKey = JSON.stringify(schedule);
  const complete = schedule.expression !== "" && schedule.expression !== "00:00:00" && schedule.timeZone !== "";
  useEffect(() => {
    if (!complete) {
      setPreview({ errors: {}, loading: false });
      return;
    }
    const ctl = new AbortController();
    setPreview((p) => ({ ...p, loading: true }));
    const timer = setTimeout(() => {
      request<{ instants: PreviewInstant[] }>(`${base}/preview`, { method: "POST", body: { schedule: JSON.parse(scheduleKey), count }, signal: ctl.signal }).then(
        (r) => setPreview({ instants: r.instants, errors: {}, loading: false }),
        (e) => {
          if (ctl.signal.aborted) return;
          if (e instanceof ApiError && e.status === 422) setPreview({ errors: fieldErrorsFrom(e.fields, (JSON.parse(scheduleKey) as { type: TriggerForm["type"] }).type), loading: false });
          else setPreview({ errors: {}, error: `The preview is unavailable: ${problem(e)}`, loading: false });
        },
      );
    }, PREVIEW_DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
      ctl.abort();
    };
    // scheduleKey stands for the schedule's fields (the object is new at every render).
  }, [scheduleKey, count, complete]);

  // An error from a save attempt wins; the preview's errors show on the schedule's fields meanwhile.
  const inputCheck = parseInput(form.input);
  const errorOf = (key: keyof TriggerForm): string | undefined =>
    saveErrors[key] ?? (key === "input" && "error" in inputCheck ? inputCheck.error : undefined) ?? preview.errors[key];

  const firstInvalid = useRef(false);
  useEffect(() => {
    if (!firstInvalid.current) return;
    firstInvalid.current = false;
    document.querySelector<HTMLElement>('form.trigger-editor [aria-invalid="true"]')?.focus();
  }, [saveErrors]);

  const save = async (e: FormEvent) => {
    e.preventDefault();
    // An edit is saved against what was read: not before the Trigger is.
    if (editing && !loaded) return;
    const r = requestFromForm(form, loaded?.trigger);
    if ("errors" in r) {
      firstInvalid.current = true;
      setSaveErrors(r.errors);
      setFormError("The Trigger was not saved: correct the fields marked below.");
      return;
    }
    setSaving(true);
    try {
      if (name !== undefined && loaded) await writeUnlessChanged({ body: loaded.trigger, etag: loaded.etag }, () => readTrigger(name), definitionOf, (etag) => put(itemPath(name), r.body, { "If-Match": etag }));
      else await post(base, r.body);
      navigate(`/triggers/${enc(r.body.metadata.name)}`);
    } catch (err) {
      setSaving(false);
      if (!(err instanceof ApiError)) {
        setFormError(String(err));
        return;
      }
      if (err.status === 422) {
        firstInvalid.current = true;
        const errs = fieldErrorsFrom(err.fields, form.type);
        setSaveErrors(errs);
        setFormError(errs.form ? `The Trigger was not saved: ${errs.form}` : "The Trigger was not saved: correct the fields marked below.");
      } else if (editing && (err.status === 412 || err.status === 409)) {
        setFormError(
          <>
            Not saved: this Trigger was changed by someone else since you opened it. Reload it to see the current version, then make your change again.{" "}
            <button type="button" onClick={() => void loadTrigger()}>Reload the Trigger</button>
          </>,
        );
      } else if (err.status === 409) {
        setFormError(`Not saved: a Trigger named ${r.body.metadata.name} already exists in this workspace. Choose another name.`);
        setSaveErrors({ name: "This name is taken." });
      } else setFormError(`Not saved: ${problem(err)}`);
    }
  };

  if (loadError)
    return (
      <>
        <p><Link href="/triggers">← Triggers</Link></p>
        <h1>Edit Trigger {name}</h1>
        <p className="state-note error" role="alert">{loadError}</p>
      </>
    );
  if (editing && !loaded) return <p role="status">Loading the Trigger…</p>;
  if (!env.can("resources/write")) return <p className="state-note warn">You are not permitted to change Triggers in this workspace.</p>;

  const zoneOptions = filterZones(zones, zoneQuery, form.timeZone);
  const flowNames = new Set(flows?.map((f) => f.metadata.name));
  const zoneHint = "An IANA name; the schedule's local times are read in it, daylight saving included.";

  return (
    <>
      <p><Link href={editing ? `/triggers/${enc(name)}` : "/triggers"}>← {editing ? `Trigger ${name}` : "Triggers"}</Link></p>
      <h1>{editing ? `Edit Trigger ${name}` : "New Trigger"}</h1>
      <form className="card trigger-editor" onSubmit={(e) => void save(e)} noValidate aria-label={editing ? `Edit Trigger ${name}` : "New Trigger"}>
        {formError && <div className="state-note error" role="alert" data-state="not-saved">{formError}</div>}
        {saveErrors.form && !formError && <p className="state-note error" role="alert">{saveErrors.form}</p>}

        <fieldset>
          <legend>Trigger</legend>
          <label htmlFor="t-display">Display name</label>
          <input {...described("t-display", false, errorOf("displayName"))} value={form.displayName} maxLength={256} onChange={(e) => set("displayName", e.target.value)} />
          <Note id="t-display" error={errorOf("displayName")} />
          <label htmlFor="t-name">Name</label>
          <input
            {...described("t-name", true, errorOf("name"))}
            value={form.name}
            readOnly={editing}
            required
            maxLength={253}
            autoComplete="off"
            onChange={(e) => {
              setNameTouched(true);
              set("name", e.target.value);
            }}
          />
          <Note id="t-name" hint={editing ? "A Trigger keeps its name." : "Lowercase letters, digits, - and .; derived from the display name until you edit it."} error={errorOf("name")} />
          <div className="field inline">
            <input type="checkbox" id="t-enabled" checked={form.enabled} onChange={(e) => set("enabled", e.target.checked)} />
            <label htmlFor="t-enabled">Enabled: fires on its schedule</label>
          </div>
        </fieldset>

        <fieldset>
          <legend>Schedule</legend>
          <label htmlFor="t-type">Schedule type</label>
          <select {...described("t-type", false, errorOf("type"))} value={form.type} onChange={(e) => set("type", e.target.value as TriggerForm["type"])}>
            <option value="once">Once, at a local date and time</option>
            <option value="interval">Interval, every so much elapsed time</option>
            <option value="cron">Cron, on a five-field expression</option>
          </select>
          <Note id="t-type" error={errorOf("type")} />

          {form.type === "once" && (
            <>
              <label htmlFor="t-once">Date and time</label>
              <input {...described("t-once", true, errorOf("once"))} type="datetime-local" step={1} value={form.once} onChange={(e) => set("once", e.target.value)} />
              <Note id="t-once" hint="In the time zone below; it must lie in the future." error={errorOf("once")} />
            </>
          )}
          {form.type === "interval" && (
            <div role="group" aria-labelledby="t-interval-label" aria-describedby={["t-interval-hint", errorOf("interval") && "t-interval-error"].filter(Boolean).join(" ")}>
              <p id="t-interval-label" className="label">Every</p>
              <div className="interval">
                {(["days", "hours", "minutes", "seconds"] as const).map((unit) => (
                  <span key={unit}>
                    <label htmlFor={`t-interval-${unit}`}>{unit[0].toUpperCase() + unit.slice(1)}</label>
                    <input
                      id={`t-interval-${unit}`}
                      type="number"
                      min={0}
                      max={unit === "days" ? 99999 : undefined}
                      inputMode="numeric"
                      aria-invalid={errorOf("interval") ? true : undefined}
                      value={form.interval[unit]}
                      onChange={(e) => set("interval", { ...form.interval, [unit]: e.target.value === "" ? 0 : Number(e.target.value) })}
                    />
                  </span>
                ))}
              </div>
              <Note id="t-interval" hint="Elapsed time, counted from when the Trigger is created, so a restart never shifts it; the preview counts from now." error={errorOf("interval")} />
            </div>
          )}
          {form.type === "cron" && (
            <>
              <label htmlFor="t-cron">Cron expression</label>
              <input {...described("t-cron", true, errorOf("cron"))} value={form.cron} spellCheck={false} autoComplete="off" onChange={(e) => set("cron", e.target.value)} />
              <Note
                id="t-cron"
                hint={<>minute hour day-of-month month day-of-week, such as <code>0 9 * * 1-5</code> (weekdays at 09:00), or <code>@hourly</code>, <code>@daily</code>, <code>@weekly</code>; with both day fields restricted a day matching either fires.</>}
                error={errorOf("cron")}
              />
            </>
          )}

          <label htmlFor="t-zone-search">Search time zones</label>
          <input id="t-zone-search" type="search" value={zoneQuery} onChange={(e) => setZoneQuery(e.target.value)} placeholder="Paris, New York, UTC…" autoComplete="off" />
          <label htmlFor="t-zone">Time zone</label>
          <select {...described("t-zone", true, errorOf("timeZone"))} value={form.timeZone} onChange={(e) => set("timeZone", e.target.value)}>
            {zoneOptions.map((z) => (
              <option key={z} value={z}>{z}</option>
            ))}
          </select>
          <Note id="t-zone" hint={`${zoneHint} ${zoneOptions.length} of ${zones.length} zones shown.`} error={errorOf("timeZone")} />
        </fieldset>

        <section className="preview" aria-labelledby="t-preview-h">
          <h2 id="t-preview-h">Next instants</h2>
          <label htmlFor="t-count">Instants to preview</label>
          <select id="t-count" value={count} onChange={(e) => setCount(Number(e.target.value))} className="narrow">
            {[3, 5, 10, 20].map((n) => (
              <option key={n} value={n}>{n}</option>
            ))}
          </select>
          <div aria-live="polite" data-preview-state={preview.loading ? "loading" : preview.instants ? "ready" : "none"}>
            {!complete && <p className="muted">Complete the schedule to see its next instants.</p>}
            {complete && preview.error && <p className="state-note warn">{preview.error}</p>}
            {complete && Object.keys(preview.errors).length > 0 && <p className="muted" data-state="schedule-refused">The server refuses this schedule: see the field above.</p>}
            {complete && preview.instants && Object.keys(preview.errors).length === 0 && !preview.error && (
              preview.instants.length === 0 ? (
                <p className="muted">This schedule has no instant to come.</p>
              ) : (
                <ol aria-label="Next instants" className="instants">
                  {preview.instants.map((i) => (
                    <li key={i.at}><time dateTime={i.at}>{previewLine(i)}</time></li>
                  ))}
                </ol>
              )
            )}
          </div>
        </section>

        <fieldset>
          <legend>Target</legend>
          <label htmlFor="t-flow">Flow</label>
          <select {...described("t-flow", true, errorOf("flow"))} value={form.flow} onChange={(e) => set("flow", e.target.value)} disabled={!flows}>
            <option value="">{flows ? "Choose a Flow…" : "Loading the Flows…"}</option>
            {form.flow && flows && !flowNames.has(form.flow) && <option value={form.flow}>{form.flow} (not found)</option>}
            {flows && targetableFlows(flows, form.flow).map((f) => (
              <option key={f.metadata.name} value={f.metadata.name}>
                {f.definition?.displayName ? `${f.definition.displayName} (${f.metadata.name})` : f.metadata.name}
                {f.systemManaged ? " — system-managed" : ""}
                {f.status?.activeVersion ? ` — active ${f.status.activeVersion}` : " — no active version"}
              </option>
            ))}
          </select>
          <Note id="t-flow" hint="A Flow of this workspace; each firing submits Work to its active version." error={errorOf("flow") ?? flowsError} />
          <label htmlFor="t-input">Work input (JSON object)</label>
          <textarea {...described("t-input", true, errorOf("input"))} rows={5} spellCheck={false} value={form.input} onChange={(e) => set("input", e.target.value)} />
          <Note id="t-input" hint={<>Sent as the Work input at every firing, such as <code>{'{"request": "Summarize the open requests"}'}</code>; empty stands for {"{}"}.</>} error={errorOf("input")} />
        </fieldset>

        <fieldset>
          <legend>Policies</legend>
          <label htmlFor="t-misfire">Missed instants (misfire policy)</label>
          <select {...described("t-misfire", false, errorOf("misfirePolicy"))} value={form.misfirePolicy} onChange={(e) => set("misfirePolicy", e.target.value as TriggerForm["misfirePolicy"])}>
            <option value="fireOnce">fireOnce: submit the latest missed instant once{policyDefaults.misfirePolicy === "fireOnce" ? " (default)" : ""}</option>
            <option value="fireAll">fireAll: submit every missed instant, up to the catch-up limit</option>
            <option value="skip">skip: submit none, wait for the next instant</option>
          </select>
          <Note id="t-misfire" error={errorOf("misfirePolicy")} />
          <label htmlFor="t-concurrency">While earlier Work is active (concurrency policy)</label>
          <select {...described("t-concurrency", false, errorOf("concurrencyPolicy"))} value={form.concurrencyPolicy} onChange={(e) => set("concurrencyPolicy", e.target.value as TriggerForm["concurrencyPolicy"])}>
            <option value="skip">skip: submit nothing for this instant (default)</option>
            <option value="allow">allow: run side by side</option>
            <option value="replace">replace: cancel the earlier Work, then submit</option>
          </select>
          <Note id="t-concurrency" error={errorOf("concurrencyPolicy")} />
          <label htmlFor="t-catchup">Catch-up window</label>
          <input {...described("t-catchup", true, errorOf("catchUpWindow"))} value={form.catchUpWindow} placeholder={policyDefaults.catchUpWindow} onChange={(e) => set("catchUpWindow", e.target.value)} />
          <Note id="t-catchup" hint={`How late a missed instant may still be submitted, [days.]hh:mm:ss; default ${policyDefaults.catchUpWindow}, at most 7 days.`} error={errorOf("catchUpWindow")} />
          <label htmlFor="t-limit">Catch-up limit</label>
          <input {...described("t-limit", true, errorOf("catchUpLimit"))} type="number" min={1} max={1000} value={form.catchUpLimit} onChange={(e) => set("catchUpLimit", Number(e.target.value))} />
          <Note id="t-limit" hint={`How many missed instants fireAll submits at most; default ${policyDefaults.catchUpLimit}.`} error={errorOf("catchUpLimit")} />
          <label htmlFor="t-jitter">Jitter</label>
          <input {...described("t-jitter", true, errorOf("jitter"))} value={form.jitter} placeholder="none" onChange={(e) => set("jitter", e.target.value)} />
          <Note id="t-jitter" hint="A deterministic delay up to this, hh:mm:ss, at most 01:00:00; empty for none." error={errorOf("jitter")} />
          <label htmlFor="t-pause">Pause after consecutive failures</label>
          <input {...described("t-pause", true, errorOf("pauseAfterFailures"))} type="number" min={0} max={1000} value={form.pauseAfterFailures} onChange={(e) => set("pauseAfterFailures", Number(e.target.value))} />
          <Note id="t-pause" hint={`Default ${policyDefaults.pauseAfterFailures}; 0 never pauses. Enabling the Trigger again resumes it.`} error={errorOf("pauseAfterFailures")} />
        </fieldset>

        <div className="form-actions">
          <button type="submit" className="primary" disabled={saving}>{saving ? "Saving…" : editing ? "Save changes" : "Create Trigger"}</button>
          <Link href={editing ? `/triggers/${enc(name)}` : "/triggers"}>Cancel</Link>
        </div>
      </form>
    </>
  );
}

/** A Trigger's status, its actions and its occurrence history. */
export function TriggerDetail({ env, name }: { env: ConsoleEnv; name: string }) {
  const [data, setData] = useState<{ trigger: Trigger; etag: string }>();
  const [history, setHistory] = useState<Occurrence[]>();
  const [error, setError] = useState<string>();
  const [historyError, setHistoryError] = useState<string>();
  const [note, setNote] = useState<{ kind: "ok" | "error"; text: ReactNode }>();
  const [busy, setBusy] = useState<string>();
  const [confirming, setConfirming] = useState(false);
  const ws = env.context.workspace.name;

  const load = useCallback(async () => {
    try {
      const r = await readTrigger(name);
      setData({ trigger: r.body, etag: r.etag });
      setError(undefined);
    } catch (e) {
      setData(undefined);
      setError(e instanceof ApiError && e.status === 404 ? `The Trigger ${name} does not exist in this workspace.` : problem(e));
      return;
    }
    get<Items<Occurrence>>(`${itemPath(name)}/occurrences?limit=50`).then(
      (l) => {
        setHistory(l.items);
        setHistoryError(undefined);
      },
      (e) => setHistoryError(`The occurrence history cannot be read: ${problem(e)}`),
    );
  }, [name]);
  useEffect(() => {
    void load();
  }, [load]);
  usePoll(load, DETAIL_POLL_MS);

  const act = async (label: string, fn: () => Promise<ReactNode>) => {
    setBusy(label);
    try {
      setNote({ kind: "ok", text: await fn() });
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) setNote({ kind: "error", text: "The Trigger changed meanwhile; it was reloaded, nothing was done. Try again." });
      else setNote({ kind: "error", text: `${label} failed: ${problem(e)}` });
    } finally {
      setBusy(undefined);
      void load();
    }
  };

  const workplace = (path: string) => new URL(path, env.workplaceUrl).toString();

  if (error)
    return (
      <>
        <p><Link href="/triggers">← Triggers</Link></p>
        <h1>Trigger {name}</h1>
        <p className="state-note error" role="alert">{error}</p>
      </>
    );
  if (!data) return <p role="status">Loading the Trigger…</p>;

  const t = data.trigger;
  const d = t.definition;
  const zone = d.source.schedule?.timeZone;
  const state = triggerState(t);
  const ready = t.status?.conditions.find((c) => c.type === "Ready");
  const last = latestOccurrence(t.status?.lastOccurrence, history);
  // A write names what the person saw; a firing's status write meanwhile is not a change.
  const unlessChanged = <T,>(write: (ifMatch: Record<string, string>) => Promise<T>) =>
    writeUnlessChanged({ body: data.trigger, etag: data.etag }, () => readTrigger(name), definitionOf, (etag) => write({ "If-Match": etag }));

  return (
    <>
      <p><Link href="/triggers">← Triggers</Link></p>
      <div className="toolbar">
        <h1>{d.displayName || t.metadata.name}</h1>
        <StatePill t={t} />
      </div>
      <div className="toolbar" aria-label="Actions" role="group">
        {env.can("resources/write") && <Link href={`/triggers/${enc(name)}/edit`} className="button">Edit</Link>}
        {env.can("resources/write") && state !== "Enabled" && (
          <button type="button" disabled={!!busy} onClick={() => void act("Enable", async () => (await unlessChanged((ifMatch) => post(`${itemPath(name)}/enable`, undefined, ifMatch)), state === "Paused" ? "Resumed: the Trigger fires again, as you." : "Enabled: the Trigger fires on its schedule, as you."))}>
            {state === "Paused" ? "Resume" : "Enable"}
          </button>
        )}
        {env.can("resources/write") && state !== "Disabled" && (
          <button type="button" disabled={!!busy} onClick={() => void act("Disable", async () => (await unlessChanged((ifMatch) => post(`${itemPath(name)}/disable`, undefined, ifMatch)), "Disabled: the Trigger fires no more until enabled."))}>
            Disable
          </button>
        )}
        {env.can("runs/execute") && (
          <button
            type="button"
            className="primary"
            disabled={!!busy}
            onClick={() =>
              void act("Run now", async () => {
                const o = await post<Occurrence>(`${itemPath(name)}/run`);
                return <>Run now submitted {o.taskId ? <a href={workplace(`w/${enc(ws)}/tasks/${enc(o.taskId)}`)}>Task {o.taskId}</a> : "its Work"}.</>;
              })
            }
          >
            {busy === "Run now" ? "Running…" : "Run now"}
          </button>
        )}
        {env.can("resources/delete") && !confirming && (
          <button type="button" className="danger" disabled={!!busy} onClick={() => setConfirming(true)}>Delete</button>
        )}
        <button type="button" onClick={() => void load()}>Refresh</button>
      </div>
      {confirming && (
        <div className="state-note warn" role="alertdialog" aria-labelledby="t-del-q" aria-describedby="t-del-d">
          <p id="t-del-q"><strong>Delete the Trigger {name}?</strong></p>
          <p id="t-del-d">Its schedule and occurrence history go with it; the Tasks it submitted stay.</p>
          <div className="toolbar">
            <button
              type="button"
              className="danger"
              autoFocus
              disabled={!!busy}
              onClick={() =>
                void (async () => {
                  setBusy("Delete");
                  try {
                    await unlessChanged((ifMatch) => del(itemPath(name), ifMatch));
                    navigate("/triggers");
                  } catch (e) {
                    setBusy(undefined);
                    setConfirming(false);
                    setNote({ kind: "error", text: e instanceof ApiError && e.status === 412 ? "Not deleted: the Trigger changed meanwhile. Look at it again, then delete." : `Delete failed: ${problem(e)}` });
                    void load();
                  }
                })()
              }
            >
              Delete {name}
            </button>
            <button type="button" onClick={() => setConfirming(false)}>Keep it</button>
          </div>
        </div>
      )}
      {note && (
        <p className={`state-note ${note.kind === "ok" ? "info" : "error"}`} role={note.kind === "ok" ? "status" : "alert"} data-note={note.kind}>
          {note.text}
        </p>
      )}

      <dl className="card" aria-label="Status">
        <dt>Name</dt>
        <dd>{t.metadata.name}</dd>
        <dt>Schedule</dt>
        <dd>{scheduleSummary(d.source.schedule)}</dd>
        <dt>Flow</dt>
        <dd>{d.target.flow ? `${d.target.flow.namespace && d.target.flow.namespace !== "default" ? `${d.target.flow.namespace}/` : ""}${d.target.flow.name}${d.target.flow.version ? ` ${d.target.flow.version}` : " (active version)"}` : "—"}</dd>
        <dt>State</dt>
        <dd>
          {state}
          {ready && ready.status !== "True" && <div className="muted">{ready.reason}{ready.message ? `: ${ready.message}` : ""}</div>}
          {state === "Paused" && ready?.status === "True" && ready.message && <div className="muted">{ready.message}</div>}
        </dd>
        <dt>Next</dt>
        <dd data-field="next">{t.status?.nextFireTime ? <time dateTime={t.status.nextFireTime}>{at(t.status.nextFireTime, zone)}</time> : "none"}</dd>
        <dt>Last</dt>
        <dd data-field="last">{last ? <>{at(last.firedAt ?? last.scheduledTime, zone)} <OutcomePill o={last} />{last.reason ? ` ${last.reason}` : ""}</> : "never"}</dd>
        <dt>Consecutive failures</dt>
        <dd>{t.status?.consecutiveFailures ?? 0}{d.pauseAfterFailures ? ` (pauses after ${d.pauseAfterFailures})` : " (never pauses)"}</dd>
        <dt>Policies</dt>
        <dd>
          misfire {d.misfirePolicy ?? policyDefaults.misfirePolicy}, concurrency {d.concurrencyPolicy ?? policyDefaults.concurrencyPolicy}, catch-up window {d.catchUpWindow ?? policyDefaults.catchUpWindow}
          {d.jitter ? `, jitter ${d.jitter}` : ""}
        </dd>
        <dt>Input</dt>
        <dd><code>{JSON.stringify(d.target.input ?? {})}</code></dd>
      </dl>

      <section aria-labelledby="t-history-h">
        <h2 id="t-history-h">Occurrence history</h2>
        {historyError && <p className="state-note error" role="alert">{historyError}</p>}
        {!history && !historyError && <p role="status">Loading the history…</p>}
        {history && history.length === 0 && <p className="state-note info" data-state="empty">No occurrence yet.</p>}
        {history && history.length > 0 && (
          <table aria-label="Occurrences">
            <thead>
              <tr>
                <th scope="col">Scheduled instant</th>
                <th scope="col">Fired at</th>
                <th scope="col">Kind</th>
                <th scope="col">Outcome</th>
                <th scope="col">Task</th>
                <th scope="col">Run</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {history.map((o) => (
                <tr key={o.id} data-occurrence={o.id} data-outcome={o.outcome}>
                  <td><time dateTime={o.scheduledTime}>{at(o.scheduledTime, zone)}</time></td>
                  <td>{o.firedAt ? <time dateTime={o.firedAt}>{at(o.firedAt, zone)}</time> : ""}</td>
                  <td>{o.kind === "Manual" ? "Run now" : "Scheduled"}</td>
                  <td><OutcomePill o={o} /></td>
                  <td>{o.taskId ? <a href={workplace(`w/${enc(ws)}/tasks/${enc(o.taskId)}`)} data-task-id={o.taskId}>Task {o.taskId.slice(0, 8)}</a> : ""}</td>
                  <td>{o.flowRunId ? <Link href={`/runs/${enc(o.flowRunId)}`}>Run {o.flowRunId.slice(0, 8)}</Link> : ""}</td>
                  <td>{[o.reason, o.message].filter(Boolean).join(": ")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
