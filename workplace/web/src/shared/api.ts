// The HTTP client of both apps: JSON in and out, Problem Details turned into ApiError, and the
// difference between "the API refused" and "the API is not there" kept, since the UI shows them
// as different states.

export class ApiError extends Error {
  readonly status: number;
  readonly detail: string;
  readonly fields: { location?: string; message: string }[];
  /** The whole Problem body, for the extension members a page knows (a Pack refusal's `reason`, ...). */
  readonly problem: Record<string, unknown>;
  constructor(status: number, title: string, detail: string, fields: { location?: string; message: string }[] = [], problem: Record<string, unknown> = {}) {
    super(detail || title);
    this.status = status;
    this.detail = detail || title;
    this.fields = fields;
    this.problem = problem;
  }
  /** The API (or the relay in front of it) could not be reached. */
  get unavailable(): boolean {
    return this.status === 0 || unreachedStatus(this.status);
  }
  get unauthenticated(): boolean {
    return this.status === 401;
  }
  /** A human sentence with the field problems, if any. */
  get message(): string {
    const extra = this.fields.map((f) => f.message).filter(Boolean);
    return extra.length ? `${this.detail}: ${extra.join("; ")}` : this.detail;
  }
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

type AuthHeader = () => string | undefined;
let authorization: AuthHeader = () => undefined;

/** setAuthorization makes every call carry a bearer token (independently deployed Workplace). */
export function setAuthorization(get: AuthHeader) {
  authorization = get;
}

const unauthenticatedListeners = new Set<() => void>();

/**
 * onUnauthenticated calls f whenever the API refuses a request for want of a session or token
 * (401): signed out in another tab, expired or revoked. An app asks to sign in again then,
 * instead of showing "authentication required" in place of each page. Returns the unsubscribe.
 */
export function onUnauthenticated(f: () => void): () => void {
  unauthenticatedListeners.add(f);
  return () => unauthenticatedListeners.delete(f);
}

/** unreachedStatus: the relay in front of the API answered for it (it was down or too slow). */
const unreachedStatus = (status: number) => status === 502 || status === 503 || status === 504;

const reachableListeners = new Set<() => void>();

/**
 * onReachable calls f whenever a request reaches the API (any answer but 502, 503 or 504): a
 * notice that the API was unavailable is stale then. Returns the unsubscribe.
 */
export function onReachable(f: () => void): () => void {
  reachableListeners.add(f);
  return () => reachableListeners.delete(f);
}

export async function request<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", ...opts.headers };
  const auth = authorization();
  if (auth) headers.Authorization = auth;
  let body: BodyInit | undefined;
  if (opts.body instanceof Blob) {
    // A file goes as it is, with its own type (a Pack archive); JSON is the default.
    headers["Content-Type"] ??= opts.body.type || "application/octet-stream";
    body = opts.body;
  } else if (opts.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  let resp: Response;
  try {
    resp = await fetch(path, { method: opts.method ?? "GET", headers, body, credentials: "same-origin", redirect: "error", signal: opts.signal });
  } catch (e) {
    if ((e as Error).name === "AbortError") throw e;
    throw new ApiError(0, "API unavailable", "The platform API cannot be reached.");
  }
  if (resp.status === 204) return undefined as T;
  const text = await resp.text();
  let data: unknown = undefined;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
  }
  if (!unreachedStatus(resp.status)) for (const f of [...reachableListeners]) f();
  if (resp.status === 401) for (const f of [...unauthenticatedListeners]) f();
  if (!resp.ok) {
    const p = (data ?? {}) as { title?: string; detail?: string; errors?: { location?: string; message: string }[] };
    throw new ApiError(resp.status, p.title ?? resp.statusText, p.detail ?? "", p.errors ?? [], (data ?? {}) as Record<string, unknown>);
  }
  return data as T;
}

/** requestWithETag returns the body and the ETag header (for a later If-Match). */
export async function requestWithETag<T>(path: string, headers: Record<string, string> = {}): Promise<{ body: T; etag: string }> {
  const h: Record<string, string> = { Accept: "application/json", ...headers };
  const auth = authorization();
  if (auth) h.Authorization = auth;
  let resp: Response;
  try {
    resp = await fetch(path, { headers: h, credentials: "same-origin", redirect: "error" });
  } catch {
    throw new ApiError(0, "API unavailable", "The platform API cannot be reached.");
  }
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new ApiError(resp.status, data.title ?? resp.statusText, data.detail ?? "", data.errors ?? []);
  return { body: data as T, etag: resp.headers.get("ETag") ?? "" };
}

export const get = <T>(path: string, headers?: Record<string, string>) => request<T>(path, { headers });
export const post = <T>(path: string, body?: unknown, headers?: Record<string, string>) => request<T>(path, { method: "POST", body: body ?? {}, headers });
export const put = <T>(path: string, body?: unknown, headers?: Record<string, string>) => request<T>(path, { method: "PUT", body, headers });
export const del = (path: string, headers?: Record<string, string>) => request<void>(path, { method: "DELETE", headers });

export const enc = encodeURIComponent;

/** sameJSON is whether a and b encode to the same JSON regardless of key order. */
export function sameJSON(a: unknown, b: unknown): boolean {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(canonical) : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])])) : v;
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/**
 * writeUnlessChanged sends a conditional write with the ETag of what the person read. The ETag
 * covers the whole resource, status included, which controllers and refreshes write on their
 * own: a write refused as stale (412) is sent again with the current ETag while a fresh read
 * still shows the definition the person saw, and is refused as before when someone changed it.
 */
export async function writeUnlessChanged<R, T>(
  seen: { body: R; etag: string },
  read: () => Promise<{ body: R; etag: string }>,
  definitionOf: (body: R) => unknown,
  write: (etag: string) => Promise<T>,
): Promise<T> {
  let etag = seen.etag;
  for (let attempt = 1; ; attempt++) {
    try {
      return await write(etag);
    } catch (e) {
      // A few status writes in a row are the most a person's click should wait out.
      if (!(e instanceof ApiError && e.status === 412) || attempt === 3) throw e;
      const current = await read().catch(() => undefined);
      if (!current?.etag || current.etag === etag || !sameJSON(definitionOf(current.body), definitionOf(seen.body))) throw e;
      etag = current.etag;
    }
  }
}
