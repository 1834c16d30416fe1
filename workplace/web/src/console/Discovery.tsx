import { useEffect, useId, useState, type FormEvent } from "react";
import { enc, get, post } from "../shared/api";
import { when } from "../shared/format";
import { Link, navigate, useLocation } from "../shared/router";
import type { Items } from "../shared/types";
import type { ConsoleEnv } from "./App";
import { NotPermitted, notOfferedYet, REGISTRIES_PATH } from "./SourceRegistries";
import {
  DISCOVERY_MAX_TAKE,
  filtersFromQuery,
  filtersToQuery,
  groupObservations,
  importBlocked,
  importBody,
  observationCompatible,
  observationStale,
  originLabel,
  problemSentence,
  publisherStatuses,
  shortDigest,
  trustPolicies,
  verificationStatuses,
  type DiscoveryFilters,
  type VersionTrust,
  type Observation,
  type Registration,
  type VersionGroup,
} from "./sourceregistries";

export const DISCOVERY_PATH = `${REGISTRIES_PATH}/discovery`;

/** What an import answers: the imported Source version (shape kept loose: only what the page shows). */
export interface ImportedSourceVersion {
  name?: string;
  publisher?: string;
  sourceName?: string;
  version?: string;
  manifestDigest?: string;
  created?: boolean;
  sourceVersion?: { name?: string; namespace?: string };
  [key: string]: unknown;
}

function Problem({ error }: { error?: string }) {
  return error ? (
    <p className="state-note error" role="alert">
      {error}
    </p>
  ) : null;
}

/** The discovery page: a search over what the registries' refreshes cached (no network request), grouped, with import. */
export function Discovery({ env }: { env: ConsoleEnv }) {
  const loc = useLocation();
  const query = loc.query.toString();
  const filters = filtersFromQuery(new URLSearchParams(query));
  const admin = env.context.platformAdministrator;
  const [result, setResult] = useState<{ items: Observation[]; total?: number }>();
  const [error, setError] = useState<string>();
  const [missing, setMissing] = useState(false);
  const [registries, setRegistries] = useState<Registration[]>([]);
  const [publishers, setPublishers] = useState<string[]>([]);

  useEffect(() => {
    if (!admin) return;
    get<Items<Registration>>("/api/sourceregistries").then(
      (l) => setRegistries(l.items ?? []),
      () => setRegistries([]),
    );
    // The publisher summaries only suggest names to the filter; without them it is a plain field.
    get<Items<{ publisher?: string; name?: string }>>("/api/sourceregistries/discovery/publishers?take=100").then(
      (l) => setPublishers([...new Set((l.items ?? []).map((p) => p.publisher ?? p.name ?? "").filter(Boolean))]),
      () => setPublishers([]),
    );
  }, [admin]);

  useEffect(() => {
    if (!admin) return;
    let live = true;
    setError(undefined);
    get<Items<Observation> & { total?: number }>(`/api/sourceregistries/discovery?${filtersToQuery(filtersFromQuery(new URLSearchParams(query)))}`).then(
      (l) => {
        if (!live) return;
        setResult({ items: l.items ?? [], total: l.total });
        setMissing(false);
      },
      (e) => {
        if (!live) return;
        if (notOfferedYet(e)) setMissing(true);
        else setError(problemSentence(e));
      },
    );
    return () => {
      live = false;
    };
  }, [admin, query]);

  const apply = (f: DiscoveryFilters) => navigate(`${DISCOVERY_PATH}?${filtersToQuery(f)}`);
  const head = (
    <>
      <p>
        <Link href={REGISTRIES_PATH}>← Source registries</Link>
      </p>
      <h1>Discover Sources</h1>
    </>
  );
  if (!admin)
    return (
      <>
        {head}
        <NotPermitted what="Source registries and their discovery" />
      </>
    );
  if (missing)
    return (
      <>
        {head}
        <p className="state-note warn" data-state="not-offered">
          This server does not offer discovery (<code>/api/sourceregistries/discovery</code> does not answer). Nothing is shown rather than made-up Sources.
        </p>
      </>
    );
  const groups = result ? groupObservations(result.items) : [];
  const registryName = (uid: string) => registries.find((r) => r.uid === uid);
  return (
    <>
      {head}
      <p className="muted">
        Searches what the last refreshes cached; nothing is fetched from a registry until you import one exact version. Versions are shown in the registry's order and never compared; a registry may mark a
        version as its catalog's latest, no other “latest” exists.
      </p>
      <FiltersForm key={query} initial={filters} registries={registries} publishers={publishers} onApply={apply} />
      <Problem error={error} />
      {result && result.items.length === 0 && (
        <p className="state-note info" data-state="empty">
          {registries.some((r) => r.status?.currentObservationId || r.status?.lastSuccessTime)
            ? "No cached Source matches these filters."
            : "Nothing is cached yet: refresh a registry on the Source registries page first."}
        </p>
      )}
      {groups.map((g) => (
        <section key={`${g.publisher}/${g.sourceName}`} className="card source-group" aria-label={`${g.publisher}/${g.sourceName}`} data-source={`${g.publisher}/${g.sourceName}`}>
          <h2>
            <span className="muted">{g.publisher} /</span> {g.sourceName}
          </h2>
          {g.versions.map((v) => (
            <VersionBlock key={v.version} group={v} registryName={registryName} canInstall={env.can("resources/write")} />
          ))}
        </section>
      ))}
      {result && (filters.skip > 0 || result.items.length >= filters.take) && (
        <nav className="toolbar pager" aria-label="Pages">
          <button type="button" disabled={filters.skip === 0} onClick={() => apply({ ...filters, skip: Math.max(0, filters.skip - filters.take) })}>
            Previous
          </button>
          <span className="muted">
            Observations {filters.skip + 1}–{filters.skip + result.items.length}
            {result.total !== undefined ? ` of ${result.total}` : ""}
          </span>
          <button
            type="button"
            disabled={result.total !== undefined ? filters.skip + result.items.length >= result.total : result.items.length < filters.take}
            onClick={() => apply({ ...filters, skip: filters.skip + filters.take })}
          >
            Next
          </button>
        </nav>
      )}
    </>
  );
}

function FiltersForm({ initial, registries, publishers, onApply }: { initial: DiscoveryFilters; registries: Registration[]; publishers: string[]; onApply: (f: DiscoveryFilters) => void }) {
  const [f, setF] = useState(initial);
  const uid = useId();
  const id = (k: string) => `${uid}-${k}`;
  const set = (patch: Partial<DiscoveryFilters>) => setF((x) => ({ ...x, ...patch }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply({ ...f, skip: 0 });
  };
  return (
    <form className="card discovery-filters" role="search" aria-label="Discovery filters" onSubmit={submit}>
      <div className="filter-grid">
        <div className="wide">
          <label htmlFor={id("search")}>Search</label>
          <input id={id("search")} type="search" value={f.search} maxLength={200} placeholder="Publisher, Source or description" onChange={(e) => set({ search: e.target.value })} />
        </div>
        <div>
          <label htmlFor={id("publisher")}>Publisher</label>
          <input id={id("publisher")} value={f.publisher} maxLength={128} list={id("publishers")} onChange={(e) => set({ publisher: e.target.value })} />
          <datalist id={id("publishers")}>
            {publishers.map((p) => (
              <option key={p} value={p} />
            ))}
          </datalist>
        </div>
        <div>
          <label htmlFor={id("registry")}>Registry</label>
          <select id={id("registry")} value={f.registry} onChange={(e) => set({ registry: e.target.value })}>
            <option value="">Any</option>
            {f.registry && !registries.some((r) => r.name === f.registry) && <option value={f.registry}>{f.registry}</option>}
            {registries.map((r) => (
              <option key={r.name} value={r.name}>
                {r.properties.displayName || r.name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor={id("trust")}>Trust policy</label>
          <select id={id("trust")} value={f.trustPolicy} onChange={(e) => set({ trustPolicy: e.target.value })}>
            <option value="">Any</option>
            {trustPolicies.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor={id("pstatus")}>Publisher status</label>
          <select id={id("pstatus")} value={f.publisherStatus} onChange={(e) => set({ publisherStatus: e.target.value })}>
            <option value="">Any</option>
            {publisherStatuses.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor={id("vstatus")}>Version verification</label>
          <select id={id("vstatus")} value={f.verificationStatus} onChange={(e) => set({ verificationStatus: e.target.value })}>
            <option value="">Any</option>
            {verificationStatuses.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor={id("take")}>Per page (at most {DISCOVERY_MAX_TAKE})</label>
          <input id={id("take")} type="number" min={1} max={DISCOVERY_MAX_TAKE} value={f.take} onChange={(e) => set({ take: Math.min(DISCOVERY_MAX_TAKE, Math.max(1, Number(e.target.value) || 1)) })} />
        </div>
      </div>
      <div className="toolbar checks">
        <label className="check">
          <input type="checkbox" checked={f.compatibleOnly} onChange={(e) => set({ compatibleOnly: e.target.checked })} /> Compatible only
        </label>
        <label className="check">
          <input type="checkbox" checked={f.freshOnly} onChange={(e) => set({ freshOnly: e.target.checked })} /> Fresh only
        </label>
        <label className="check">
          <input type="checkbox" checked={f.conflictsOnly} onChange={(e) => set({ conflictsOnly: e.target.checked })} /> Conflicts only
        </label>
        <span className="spacer" />
        <button type="submit" className="primary">
          Search
        </button>
      </div>
    </form>
  );
}

function VersionBlock({ group, registryName, canInstall }: { group: VersionGroup; registryName: (uid: string) => Registration | undefined; canInstall: boolean }) {
  return (
    <div className="version-group" data-version={group.version} data-conflict={group.conflict ? "true" : "false"}>
      <h3>
        Version <code>{group.version}</code>
        {group.conflict && (
          <span className="pill tone-error" data-flag="conflict">
            Digest conflict
          </span>
        )}
      </h3>
      {group.conflict && (
        <p className="state-note error">
          Registries disagree on this version's manifest ({group.digests.map(shortDigest).join(" vs ")}). The conflict blocks its import until it is resolved; both observations stay visible.
        </p>
      )}
      <ul className="observations">
        {group.observations.map((o) => (
          <ObservationItem key={`${o.registrationUid}/${o.observationId}/${o.catalogName}`} o={o} reg={registryName(o.registrationUid)} blocked={group.conflict} canInstall={canInstall} />
        ))}
      </ul>
    </div>
  );
}

function ObservationItem({ o, reg, blocked, canInstall }: { o: Observation; reg?: Registration; blocked: boolean; canInstall: boolean }) {
  const [working, setWorking] = useState(false);
  const [imported, setImported] = useState<ImportedSourceVersion>();
  const [error, setError] = useState<string>();
  const [evidence, setEvidence] = useState<VersionTrust>();
  const [evidenceError, setEvidenceError] = useState<string>();
  const compatible = observationCompatible(o);
  const stale = observationStale(o);
  const regName = reg?.properties.displayName || o.registrationName || o.registration || reg?.name || o.registrationUid;
  const publisherStatus = o.publisherStatus ?? o.assertedPublisherStatus;
  // What the registry asserts and what this registration's policy accepts may differ (an untrusted one contributes declared evidence only).
  const asserted = o.assertedPublisherStatus && o.assertedPublisherStatus !== publisherStatus ? o.assertedPublisherStatus : undefined;
  const refused = importBlocked(o, reg, blocked);
  const refusedId = useId();

  const doImport = async () => {
    setWorking(true);
    setError(undefined);
    try {
      setImported((await post<ImportedSourceVersion>("/api/sourceregistries/discovery/imports", importBody(o))) ?? {});
    } catch (e) {
      setError(`Not imported: ${problemSentence(e, "observation")}`);
    } finally {
      setWorking(false);
    }
  };
  const readEvidence = async () => {
    try {
      setEvidence(await get<VersionTrust>(`/api/sourceregistries/trust/sources/${enc(o.publisher)}/${enc(o.sourceName)}/versions/${enc(o.version)}?manifestDigest=${enc(o.manifestDigest)}`));
      setEvidenceError(undefined);
    } catch (e) {
      setEvidenceError(problemSentence(e));
    }
  };

  return (
    <li className="observation" data-observation={o.observationId} data-registry={regName}>
      <div className="toolbar wrap-row">
        <strong>{regName}</strong>
        <span className="muted small">catalog {o.catalogName}</span>
        {o.isCatalogLatest && (
          <span className="pill" data-flag="catalog-latest" title="This registry's catalog marks this version as its latest; nothing else is implied">
            Catalog's latest
          </span>
        )}
        {compatible !== undefined && <span className={`pill tone-${compatible ? "ok" : "warn"}`}>{compatible ? "Compatible" : "Not compatible"}</span>}
        <span className={`pill tone-${stale ? "warn" : "ok"}`}>{stale ? "Stale" : "Fresh"}</span>
      </div>
      <dl className="facts small">
        <dt>Manifest digest</dt>
        <dd>
          <code title={o.manifestDigest}>{shortDigest(o.manifestDigest)}</code>
        </dd>
        <dt>Trust</dt>
        <dd data-trust>
          {o.trustPolicy ?? reg?.properties.trustPolicy ?? "?"} policy · origin {originLabel(o.origin ?? reg?.status?.origin).toLowerCase()}
          {publisherStatus && <> · publisher {publisherStatus}</>}
          {asserted && <> (the registry asserts {asserted})</>}
          {o.verificationStatus && <> · version {o.verificationStatus}</>}
        </dd>
      </dl>
      {(o.displayName || o.description) && <p className="small">{o.displayName ?? ""}{o.displayName && o.description ? ": " : ""}{o.description ?? ""}</p>}
      <p className="toolbar">
        {!imported && (
          <button type="button" className="primary" disabled={working || !!refused} aria-describedby={refused && !blocked ? refusedId : undefined} onClick={() => void doImport()}>
            Import {o.sourceName} {o.version}
          </button>
        )}
        <button type="button" onClick={() => void readEvidence()}>
          Trust evidence
        </button>
        {working && <span role="status">Importing…</span>}
      </p>
      {refused && !blocked && (
        <p className="state-note warn small" id={refusedId} data-state="import-refused">
          {refused.sentence}
          {refused.fixAt && (
            <>
              {" "}
              <Link href={`${REGISTRIES_PATH}?registration=${enc(refused.fixAt)}`}>Open its settings</Link>
            </>
          )}
        </p>
      )}
      <Problem error={error} />
      {evidenceError && <p className="state-note warn">{evidenceError}</p>}
      {evidence && <Evidence e={evidence} />}
      {imported && <Imported o={o} v={imported} canInstall={canInstall} />}
    </li>
  );
}

/** Evidence shows the trust answer: accepted states, the first digest seen, and each registration's evidence with its reason codes (never credentials or documents). */
function Evidence({ e }: { e: VersionTrust }) {
  return (
    <details className="evidence" open>
      <summary>Trust evidence{e.evaluatedAt ? `, evaluated ${when(e.evaluatedAt)}` : ""}</summary>
      <dl className="facts small">
        <dt>Publisher</dt>
        <dd>{e.publisherStatus}</dd>
        <dt>This version and digest</dt>
        <dd>{e.verificationStatus}</dd>
        {e.firstSeen && (
          <>
            <dt>First digest seen</dt>
            <dd>
              <code title={e.firstSeen.manifestDigest}>{shortDigest(e.firstSeen.manifestDigest)}</code> {when(e.firstSeen.firstSeenAt)}
            </dd>
          </>
        )}
        <dt>Snapshot</dt>
        <dd>{e.snapshotVerification === "NotEvaluated" ? "Not evaluated (no Channel is materialized)" : (e.snapshotVerification ?? "")}</dd>
      </dl>
      {(e.evidence?.length ?? 0) > 0 && (
        <div className="scroll-x">
          <table aria-label="Evidence by registration" className="small" tabIndex={0}>
            <thead>
              <tr>
                <th scope="col">Registration</th>
                <th scope="col">Policy</th>
                <th scope="col">Publisher asserted → accepted</th>
                <th scope="col">Digest</th>
                <th scope="col">Reasons</th>
              </tr>
            </thead>
            <tbody>
              {e.evidence!.map((x) => (
                <tr key={`${x.registrationUid}/${x.observationId}/${x.catalogName}`}>
                  <td>{x.registrationName}</td>
                  <td>{x.trustPolicy}</td>
                  <td>
                    {x.assertedPublisherStatus} → {x.acceptedPublisherStatus}
                  </td>
                  <td>
                    <code title={x.manifestDigest}>{shortDigest(x.manifestDigest)}</code>
                  </td>
                  <td>{(x.reasonCodes ?? []).join(", ")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </details>
  );
}

/** Imported: the Source version exists; the Pack preview is the next step. */
function Imported({ o, v, canInstall }: { o: Observation; v: ImportedSourceVersion; canInstall: boolean }) {
  const ref = v.sourceVersion?.name ?? v.name;
  const href = `/packs?${new URLSearchParams({ ...(ref ? { sourceVersion: ref } : {}), publisher: o.publisher, source: o.sourceName, version: o.version }).toString()}`;
  return (
    <div className="state-note info" role="status" data-state="imported">
      <p>
        Imported {o.publisher}/{o.sourceName} {o.version}
        {v.created === false ? " (it was already imported: the same Source version is kept)" : ""}. It is immutable and keeps this observation and its trust.
      </p>
      {canInstall ? (
        <p>
          <Link href={href}>Preview the Pack install</Link>
        </p>
      ) : (
        <p className="muted">Installing its Pack needs the right to change resources in the selected workspace.</p>
      )}
    </div>
  );
}
