// The Source registries pages' pure logic: the shapes of /api/sourceregistries, durations in the
// spec's [days.]hh:mm:ss, the registration form and its request, the discovery filters as a
// query, and the grouping of observations by publisher/Source then opaque version (never sorted
// as versions: a registry's order is kept, and no "latest" is invented).
import { ApiError } from "../shared/api";

export const OFFICIAL_REGISTRATION = "agentstration-official";
export const DISCOVERY_MAX_TAKE = 100;
export const DISCOVERY_DEFAULT_TAKE = 25;

export type TrustPolicy = "untrusted" | "trusted" | "authoritative";
export const trustPolicies: TrustPolicy[] = ["untrusted", "trusted", "authoritative"];

export interface SecretReference {
  name: string;
  scopeRef?: string;
  namespace?: string;
}

export interface RefreshPolicy {
  periodicEnabled?: boolean;
  interval?: string;
  timeout?: string;
  initialBackoff?: string;
  maximumBackoff?: string;
  jitter?: string;
  staleAfter?: string;
  maximumAttempts?: number;
}

export interface RegistrationProperties {
  displayName?: string;
  indexUrl: string;
  enabled?: boolean;
  trustPolicy?: TrustPolicy | string;
  endpointPolicy?: { allowHttp?: boolean; allowPrivateNetwork?: boolean };
  authenticationMode?: "none" | "staticBearer" | string;
  credential?: SecretReference;
  refreshPolicy?: RefreshPolicy;
  cachePolicy?: { retainedObservations?: number };
}

export interface RefreshSummary {
  time?: string;
  trigger?: string;
  outcome?: string;
  errorCode?: string;
  digest?: string;
}

/** The observed state the server adds to a registration (names after the SourceRegistry kind). */
export interface RegistrationStatus {
  origin?: string;
  official?: boolean;
  lastRefresh?: RefreshSummary;
  lastSuccessTime?: string;
  consecutiveFailures?: number;
  currentObservationId?: string;
  stale?: boolean;
  freshness?: string;
  nextRefreshTime?: string;
}

export interface Registration {
  name: string;
  uid?: string;
  properties: RegistrationProperties;
  status?: RegistrationStatus;
  etag?: string;
}

export interface RefreshRecord {
  id?: string;
  registrationUid?: string;
  trigger: string;
  outcome: string;
  startedAt?: string;
  finishedAt?: string;
  durationMs?: number;
  duration?: string;
  retryCount?: number;
  correlationId?: string;
  digest?: string;
  errorCode?: string;
}

/** One registration's evidence for a version, and what its policy accepts of it. */
export interface Evidence {
  registrationName: string;
  registrationUid: string;
  observationId: string;
  indexDigest?: string;
  catalogName: string;
  catalogDigest?: string;
  trustPolicy: string;
  origin: string;
  manifestDigest: string;
  assertedPublisherStatus: string;
  acceptedPublisherStatus: string;
  reasonCodes?: string[];
}

/** The trust answer for one exact version and digest, recomputed at every read. */
export interface VersionTrust {
  publisher: string;
  sourceName: string;
  version: string;
  manifestDigest: string;
  publisherStatus: string;
  verificationStatus: string;
  firstSeen?: { manifestDigest: string; registrationUid: string; observationId: string; firstSeenAt: string };
  snapshotVerification?: string;
  evidence?: Evidence[];
  evaluatedAt?: string;
}

export interface Observation {
  registrationName?: string;
  registration?: string;
  registrationUid: string;
  observationId: string;
  catalogName: string;
  publisher: string;
  sourceName: string;
  version: string;
  manifestDigest: string;
  isCatalogLatest?: boolean;
  compatible?: boolean;
  compatibility?: string;
  fresh?: boolean;
  stale?: boolean;
  freshness?: string;
  trustPolicy?: string;
  origin?: string;
  publisherStatus?: string;
  assertedPublisherStatus?: string;
  verificationStatus?: string;
  conflict?: boolean;
  displayName?: string;
  description?: string;
  indexDigest?: string;
  shard?: string;
}

// ---------------------------------------------------------------------------------------------
// Durations [days.]hh:mm:ss[.fffffff]

const durationPattern = /^(?:(\d{1,5})\.)?(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,7}))?$/;

/**
 * parseDuration reads [days.]hh:mm:ss[.fffffff] as seconds; a text that is not one (or hours
 * past 23, minutes or seconds past 59, which the server refuses) is an error a person reads.
 */
export function parseDuration(text: string): { seconds: number } | { error: string } {
  const t = text.trim();
  const m = durationPattern.exec(t);
  if (!m) return { error: "Write a duration as [days.]hh:mm:ss, for example 00:30:00 or 1.00:00:00." };
  const [days, hours, minutes, seconds] = [Number(m[1] ?? 0), Number(m[2]), Number(m[3]), Number(m[4])];
  if (hours > 23) return { error: "Hours go up to 23; write whole days before the dot (1.02:00:00 is 26 hours)." };
  if (minutes > 59 || seconds > 59) return { error: "Minutes and seconds go up to 59." };
  const fraction = m[5] ? Number(`0.${m[5]}`) : 0;
  return { seconds: days * 86400 + hours * 3600 + minutes * 60 + seconds + fraction };
}

const two = (n: number) => String(n).padStart(2, "0");

/** formatDuration spells whole seconds canonically as [days.]hh:mm:ss. */
export function formatDuration(totalSeconds: number): string {
  let total = Math.max(0, Math.floor(totalSeconds));
  const days = Math.floor(total / 86400);
  total -= days * 86400;
  const hms = `${two(Math.floor(total / 3600))}:${two(Math.floor((total % 3600) / 60))}:${two(total % 60)}`;
  return days > 0 ? `${days}.${hms}` : hms;
}

/** durationWords: "1 day 2 hours", "30 seconds", "0 seconds"; the text itself when it is not a duration. */
export function durationWords(text: string | undefined): string {
  if (!text) return "";
  const p = parseDuration(text);
  if ("error" in p) return text;
  let s = Math.floor(p.seconds);
  const parts: string[] = [];
  for (const [unit, size] of [
    ["day", 86400],
    ["hour", 3600],
    ["minute", 60],
    ["second", 1],
  ] as const) {
    const n = Math.floor(s / size);
    s -= n * size;
    if (n) parts.push(`${n} ${unit}${n === 1 ? "" : "s"}`);
  }
  return parts.length ? parts.join(" ") : "0 seconds";
}

/** elapsed is a refresh's duration for a person: "850 ms", "2.4 s", "1 min 5 s". */
export function elapsed(r: Pick<RefreshRecord, "durationMs" | "duration" | "startedAt" | "finishedAt">): string {
  let ms = r.durationMs;
  if (ms === undefined && r.duration) {
    const p = parseDuration(r.duration);
    if (!("error" in p)) ms = p.seconds * 1000;
  }
  if (ms === undefined && r.startedAt && r.finishedAt) ms = new Date(r.finishedAt).getTime() - new Date(r.startedAt).getTime();
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

// ---------------------------------------------------------------------------------------------
// The registration form

/** The service's defaults (apiserver/sourceregistries schedule.go and store.go), shown as placeholders so an empty field says what it means. */
export const refreshDefaults = {
  interval: "01:00:00",
  timeout: "00:00:30",
  initialBackoff: "00:00:30",
  maximumBackoff: "01:00:00",
  jitter: "00:00:30",
  staleAfter: "1.00:00:00",
  maximumAttempts: 5,
  retainedObservations: 3,
};

export const durationFields = ["interval", "timeout", "initialBackoff", "maximumBackoff", "jitter", "staleAfter"] as const;
export type DurationField = (typeof durationFields)[number];

export const durationLabels: Record<DurationField, string> = {
  interval: "Interval between refreshes",
  timeout: "Timeout of one attempt",
  initialBackoff: "First wait after a failure",
  maximumBackoff: "Longest wait between retries",
  jitter: "Largest jitter",
  staleAfter: "Stale after",
};

export interface RegistrationForm {
  name: string;
  displayName: string;
  indexUrl: string;
  enabled: boolean;
  trustPolicy: string;
  allowHttp: boolean;
  allowPrivateNetwork: boolean;
  authenticationMode: string;
  credentialName: string;
  periodicEnabled: boolean;
  durations: Record<DurationField, string>;
  maximumAttempts: string;
  retainedObservations: string;
}

export function emptyRegistrationForm(): RegistrationForm {
  return {
    name: "",
    displayName: "",
    indexUrl: "",
    enabled: true,
    trustPolicy: "untrusted",
    allowHttp: false,
    allowPrivateNetwork: false,
    authenticationMode: "none",
    credentialName: "",
    periodicEnabled: false,
    durations: { interval: "", timeout: "", initialBackoff: "", maximumBackoff: "", jitter: "", staleAfter: "" },
    maximumAttempts: "",
    retainedObservations: "",
  };
}

export function formFromRegistration(r: Registration): RegistrationForm {
  const p = r.properties;
  const rp = p.refreshPolicy ?? {};
  return {
    name: r.name,
    displayName: p.displayName ?? "",
    indexUrl: p.indexUrl ?? "",
    enabled: p.enabled !== false,
    trustPolicy: p.trustPolicy || "untrusted",
    allowHttp: !!p.endpointPolicy?.allowHttp,
    allowPrivateNetwork: !!p.endpointPolicy?.allowPrivateNetwork,
    authenticationMode: p.authenticationMode || "none",
    credentialName: p.credential?.name ?? "",
    periodicEnabled: !!rp.periodicEnabled,
    durations: {
      interval: rp.interval ?? "",
      timeout: rp.timeout ?? "",
      initialBackoff: rp.initialBackoff ?? "",
      maximumBackoff: rp.maximumBackoff ?? "",
      jitter: rp.jitter ?? "",
      staleAfter: rp.staleAfter ?? "",
    },
    maximumAttempts: rp.maximumAttempts !== undefined ? String(rp.maximumAttempts) : "",
    retainedObservations: p.cachePolicy?.retainedObservations !== undefined ? String(p.cachePolicy.retainedObservations) : "",
  };
}

/** nameFromDisplayName derives a registration name: lowercase ASCII, accents and punctuation folded to hyphens. */
export function nameFromDisplayName(display: string): string {
  return display
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 63)
    .replace(/-+$/, "");
}

const wholeIn = (text: string, min: number, max: number) => {
  const t = text.trim();
  if (!/^\d+$/.test(t)) return undefined;
  const n = Number(t);
  return n >= min && n <= max ? n : undefined;
};

/** formErrors checks what a person can fix before sending: field -> sentence. */
export function formErrors(f: RegistrationForm, creating: boolean): Record<string, string> {
  const errors: Record<string, string> = {};
  if (creating && !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(f.name)) errors.name = "A name is lowercase letters, digits and hyphens, starting and ending with a letter or digit (at most 63).";
  const url = f.indexUrl.trim();
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!url) errors.indexUrl = "The index URL is required.";
  else if (!parsed || (parsed.protocol !== "https:" && parsed.protocol !== "http:") || !parsed.host) errors.indexUrl = "The index URL is an absolute https:// address.";
  else if (url.includes("@") || url.includes("?") || url.includes("#") || url.includes("%"))
    errors.indexUrl = "An index URL carries no credentials, query, fragment or percent-encoded characters.";
  else if (parsed.protocol === "http:" && !f.allowHttp) errors.indexUrl = "An http:// index needs “Allow plain HTTP” below; HTTPS is required otherwise.";
  if (f.authenticationMode === "staticBearer" && !f.credentialName) errors.credential = "Choose the instance Secret that holds the bearer token.";
  for (const k of durationFields) {
    const v = f.durations[k].trim();
    if (!v) continue;
    const p = parseDuration(v);
    if ("error" in p) errors[k] = p.error;
    else if (p.seconds <= 0 && k !== "jitter") errors[k] = "The duration is longer than zero.";
  }
  if (f.maximumAttempts.trim() && wholeIn(f.maximumAttempts, 1, 100) === undefined) errors.maximumAttempts = "A whole number from 1 to 100.";
  if (f.retainedObservations.trim() && wholeIn(f.retainedObservations, 1, 100) === undefined) errors.retainedObservations = "A whole number from 1 to 100.";
  return errors;
}

/** requestFromForm is the envelope the server takes; empty optional fields are left to the server's defaults. */
export function requestFromForm(f: RegistrationForm): { name: string; properties: RegistrationProperties } {
  const refreshPolicy: RefreshPolicy = { periodicEnabled: f.periodicEnabled };
  for (const k of durationFields) if (f.durations[k].trim()) refreshPolicy[k] = f.durations[k].trim();
  if (f.maximumAttempts.trim()) refreshPolicy.maximumAttempts = Number(f.maximumAttempts.trim());
  const properties: RegistrationProperties = {
    displayName: f.displayName.trim() || undefined,
    indexUrl: f.indexUrl.trim(),
    enabled: f.enabled,
    trustPolicy: f.trustPolicy,
    endpointPolicy: { allowHttp: f.allowHttp, allowPrivateNetwork: f.allowPrivateNetwork },
    authenticationMode: f.authenticationMode,
    refreshPolicy,
  };
  if (f.authenticationMode === "staticBearer" && f.credentialName) properties.credential = { name: f.credentialName, scopeRef: "/instance" };
  if (f.retainedObservations.trim()) properties.cachePolicy = { retainedObservations: Number(f.retainedObservations.trim()) };
  return { name: f.name, properties };
}

// ---------------------------------------------------------------------------------------------
// Freshness and refreshes

export type Freshness = "fresh" | "stale" | "never" | "disabled";

/** freshness of a registration's observation: never refreshed, stale, or fresh (disabled says so first). */
export function freshness(r: Registration): Freshness {
  if (r.properties.enabled === false) return "disabled";
  const s = r.status ?? {};
  // The server computes it at the read (staleAfter is its rule); the rest is for an older answer.
  if (s.freshness && s.freshness in freshnessWords) return s.freshness as Freshness;
  if (s.freshness === "stale" || s.stale === true) return "stale";
  if (!s.lastSuccessTime && !s.currentObservationId) return "never";
  if (s.freshness === "fresh" || s.stale === false) return "fresh";
  return "fresh";
}

export const freshnessWords: Record<Freshness, string> = {
  fresh: "Fresh",
  stale: "Stale",
  never: "Never refreshed",
  disabled: "Disabled",
};

const outcomeWords: Record<string, string> = {
  succeeded: "Succeeded",
  notModified: "Not modified (304)",
  recovered: "Recovered",
  failed: "Failed",
};

export const outcomeLabel = (o: string | undefined) => (o ? (outcomeWords[o] ?? o) : "");
export const outcomeTone = (o: string | undefined) => (o === "failed" ? "error" : o === "recovered" ? "warn" : o ? "ok" : "");

/** shortDigest: "sha256:0123456789ab" (12 hex digits), the form people compare at a glance. */
export function shortDigest(d: string | undefined): string {
  if (!d) return "";
  const m = /^sha256:([a-f0-9]+)$/.exec(d);
  return m ? `sha256:${m[1].slice(0, 12)}` : d;
}

/**
 * shortId: the last 8 characters of an id, the form people compare at a glance. The ids are
 * time-ordered UUIDs (v7): ids made in the same second share their start, never their random end.
 */
export function shortId(id: string | undefined): string {
  if (!id) return "";
  return id.length > 12 ? `…${id.slice(-8)}` : id;
}

const originWords: Record<string, string> = {
  official: "Official",
  external: "External",
  private: "Private network",
  internal: "Internal",
};
export const originLabel = (o: string | undefined) => (o ? (originWords[o] ?? o) : "Not classified yet");

export const trustWords: Record<string, string> = {
  untrusted: "Untrusted: publishers count as declared only",
  trusted: "Trusted: may verify publishers",
  authoritative: "Authoritative: may also make publishers official",
};

/** The sentences a person reads for the registry error codes (docs/registry-v1.md) a refresh or import records. */
const errorWords: Record<string, string> = {
  RegistryAddressRefused: "the address is not allowed by the endpoint policy (private network, or always denied)",
  RegistryCredentialUnavailable: "the bearer token's Secret could not be resolved",
  RegistryDigestConflict: "a version's digest differs from the one first seen",
  RegistryDigestMismatch: "a document differs from the digest that names it",
  RegistryDocumentInvalid: "a document is not a valid registry v1 document",
  RegistryDocumentTooLarge: "a document was larger than the registry contract allows",
  RegistryHttpStatus: "the registry answered with an error status",
  RegistryLocationRefused: "a location leaves the index's origin",
  RegistryRedirectRefused: "a redirect left the registry's origin",
  RegistryRollback: "the registry served an older index than one already seen",
  RegistryTimeout: "the registry did not answer in time",
  RegistryTooManyRedirects: "the registry redirected too many times",
  RegistryTooSlow: "the registry sent too slowly",
  RegistryUnavailable: "the registry could not be reached",
  RegistryUnsupportedVersion: "the registry speaks another contract version",
  RegistryUrlRefused: "the index URL carries credentials, a query, a fragment or percent-encoding, or plain HTTP is not allowed",
};
export const errorSentence = (code: string | undefined) => (code ? (errorWords[code] ? `${code}: ${errorWords[code]}` : code) : "");

// ---------------------------------------------------------------------------------------------
// Discovery

export interface DiscoveryFilters {
  search: string;
  publisher: string;
  registry: string;
  compatibleOnly: boolean;
  freshOnly: boolean;
  conflictsOnly: boolean;
  trustPolicy: string;
  publisherStatus: string;
  verificationStatus: string;
  skip: number;
  take: number;
}

export const emptyFilters = (): DiscoveryFilters => ({
  search: "",
  publisher: "",
  registry: "",
  compatibleOnly: false,
  freshOnly: false,
  conflictsOnly: false,
  trustPolicy: "",
  publisherStatus: "",
  verificationStatus: "",
  skip: 0,
  take: DISCOVERY_DEFAULT_TAKE,
});

export const publisherStatuses = ["None", "Declared", "Verified", "Official", "Revoked"];
export const verificationStatuses = ["Unverified", "Verified", "Conflict"];

const clampTake = (n: number) => (Number.isFinite(n) ? Math.min(DISCOVERY_MAX_TAKE, Math.max(1, Math.floor(n))) : DISCOVERY_DEFAULT_TAKE);

/** filtersToQuery: only what is set, booleans only when true, take within 1..100 (the server's bound). */
export function filtersToQuery(f: DiscoveryFilters): string {
  const q = new URLSearchParams();
  for (const k of ["search", "publisher", "registry", "trustPolicy", "publisherStatus", "verificationStatus"] as const) {
    const v = f[k].trim();
    if (v) q.set(k, v);
  }
  for (const k of ["compatibleOnly", "freshOnly", "conflictsOnly"] as const) if (f[k]) q.set(k, "true");
  if (f.skip > 0) q.set("skip", String(Math.floor(f.skip)));
  q.set("take", String(clampTake(f.take)));
  return q.toString();
}

/** filtersFromQuery reads the page's own address back, so a search can be linked and reloaded. */
export function filtersFromQuery(q: URLSearchParams): DiscoveryFilters {
  const f = emptyFilters();
  for (const k of ["search", "publisher", "registry", "trustPolicy", "publisherStatus", "verificationStatus"] as const) f[k] = q.get(k) ?? "";
  for (const k of ["compatibleOnly", "freshOnly", "conflictsOnly"] as const) f[k] = q.get(k) === "true";
  const skip = Number(q.get("skip") ?? 0);
  f.skip = Number.isFinite(skip) && skip > 0 ? Math.floor(skip) : 0;
  if (q.has("take")) f.take = clampTake(Number(q.get("take")));
  return f;
}

export interface VersionGroup {
  version: string;
  observations: Observation[];
  /** Different manifest digests for one publisher/Source/version: a blocking conflict. */
  conflict: boolean;
  digests: string[];
}

export interface SourceGroup {
  publisher: string;
  sourceName: string;
  versions: VersionGroup[];
}

/**
 * groupObservations groups by publisher/Source, then by opaque version, in the order the server
 * gave (versions are never compared: "1.10" is not "after" "1.9"). Equal observations stay
 * individually visible; a version is a conflict when its digests differ, or the server says so.
 */
export function groupObservations(items: Observation[]): SourceGroup[] {
  const sources: SourceGroup[] = [];
  const byKey = new Map<string, SourceGroup>();
  for (const o of items) {
    const key = JSON.stringify([o.publisher, o.sourceName]);
    let s = byKey.get(key);
    if (!s) {
      s = { publisher: o.publisher, sourceName: o.sourceName, versions: [] };
      byKey.set(key, s);
      sources.push(s);
    }
    let v = s.versions.find((x) => x.version === o.version);
    if (!v) {
      v = { version: o.version, observations: [], conflict: false, digests: [] };
      s.versions.push(v);
    }
    v.observations.push(o);
    if (!v.digests.includes(o.manifestDigest)) v.digests.push(o.manifestDigest);
    v.conflict = v.digests.length > 1 || v.observations.some((x) => x.conflict === true);
  }
  return sources;
}

/** observationFresh: an observation counts as stale only when the server says so. */
export const observationStale = (o: Observation) => o.stale === true || o.fresh === false || o.freshness === "stale";

export const observationCompatible = (o: Observation) => (o.compatible !== undefined ? o.compatible : o.compatibility ? o.compatibility === "compatible" : undefined);

/** importBody is the spec's import selection for one observation. */
export function importBody(o: Observation) {
  return {
    selection: {
      registrationUid: o.registrationUid,
      observationId: o.observationId,
      catalogName: o.catalogName,
      publisher: o.publisher,
      sourceName: o.sourceName,
      version: o.version,
    },
  };
}

/**
 * importBlocked says why the server would refuse to import an observation, before anyone tries:
 * a digest conflict, a disabled or untrusted registration, or an accepted revocation of the
 * publisher (the spec's import refusals that the page can know). fixAt names the registration
 * whose settings would change the answer. Undefined when nothing blocks it.
 */
export function importBlocked(o: Observation, reg: Registration | undefined, conflict: boolean): { sentence: string; fixAt?: string } | undefined {
  const name = reg?.properties.displayName || o.registrationName || reg?.name || "this registration";
  const fixAt = reg?.name ?? o.registrationName;
  if (conflict) return { sentence: "Registries disagree on this version's manifest digest: the conflict blocks its import." };
  if (reg?.properties.enabled === false) return { sentence: `${name} is disabled: enable it to import from it.`, fixAt };
  if ((o.trustPolicy ?? reg?.properties.trustPolicy ?? "untrusted") === "untrusted")
    return { sentence: `${name} is untrusted: nothing is imported from an untrusted registration until a Platform administrator makes it trusted.`, fixAt };
  if (o.publisherStatus === "Revoked") return { sentence: `The publisher ${o.publisher} is revoked: none of its versions can be imported.` };
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Refusals in words

/** problemSentence turns a failed registry call into what a person reads. */
export function problemSentence(e: unknown, what = "registration"): string {
  if (!(e instanceof ApiError)) return e instanceof Error ? e.message : String(e);
  // A 503 with a Problem body is the server saying why (no registry client), not an absent API.
  if (e.unavailable && !(e.status === 503 && typeof e.problem.detail === "string")) return "The platform API cannot be reached; try again when it answers.";
  if (e.status === 403) return "Only Platform administrators manage Source registries.";
  if (e.status === 412 || (e.status === 409 && /etag|changed|precondition|modified/i.test(e.detail)))
    return `Not saved: someone changed this ${what} since you opened it. Its current values are shown again; make your change once more.`;
  if (e.status === 428) return `Not saved: the ${what} must be read first (the server asks for its current version).`;
  const code = typeof e.problem.code === "string" ? e.problem.code : typeof e.problem.reason === "string" ? e.problem.reason : "";
  if (code && errorWords[code]) return `${e.message} (${errorWords[code]})`;
  return e.message;
}

export const isEtagConflict = (e: unknown) => e instanceof ApiError && (e.status === 412 || (e.status === 409 && /etag|changed|precondition|modified/i.test(e.detail)));
