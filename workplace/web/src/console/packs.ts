// The Packs and Composer pages' pure logic: the shapes of /api/packs and /api/pack-projects, the
// sentences a person reads for states, actions and refusals (never a raw reason code or JSON),
// and the Composer's selection moves.
import { ApiError } from "../shared/api";

export interface PackInfo {
  publisher: string;
  name: string;
  version: string;
  displayName?: string;
  description?: string;
  audience?: string;
  purpose?: string;
  categories?: string[];
  tags?: string[];
  readme?: string;
  digest?: string;
  fileName?: string;
}

export type Action = "create" | "update" | "unchanged" | "conflict" | "remove";

export interface FieldChange {
  path: string;
  from?: unknown;
  to?: unknown;
}

export interface Change {
  kind: string;
  name: string;
  path?: string;
  action: Action;
  reason?: string;
  diff?: FieldChange[];
}

export interface BindingSelection {
  namespace: string;
  name: string;
}

export interface BindingState {
  name: string;
  targetKind: "modelProfile" | "secret" | string;
  displayName?: string;
  required: boolean;
  selection?: BindingSelection;
  satisfied: boolean;
}

export interface ChangeSet {
  publisher: string;
  name: string;
  version: string;
  fromVersion?: string;
  namespace: string;
  changes: Change[];
  bindings: BindingState[];
  readiness: string;
  blocked: boolean;
}

export interface Preview {
  pack: PackInfo;
  changeSet: ChangeSet;
}

export interface ManagedResource {
  kind: string;
  name: string;
  path?: string;
  fingerprint?: string;
  suppliedByVersion?: string;
  matchesInstalled?: boolean;
  condition: "managed" | "modified" | "missing" | string;
}

export interface InstalledPack {
  publisher: string;
  name: string;
  version: string;
  displayName?: string;
  description?: string;
  audience?: string;
  purpose?: string;
  namespace: string;
  source?: PackSourceView;
  installedAt?: string;
  state: string;
  readiness?: string;
  retainedVersion?: string;
  bindings?: BindingState[];
  /** What an uninstall left in place (a degraded Pack), and why. */
  preserved?: { kind: string; name: string; reason?: string }[];
  resources?: ManagedResource[];
  operation?: { kind?: string; phase?: string; done?: number; total?: number; failedResource?: string; error?: string };
}

export interface UninstallPreview {
  remove: { kind: string; name: string }[];
  preserve: { kind: string; name: string; reason?: string }[];
  /** Resources the Pack did not install that keep its namespace ("Kind name"). */
  keptInNamespace?: string[];
}

export interface UninstallResult {
  state: "removed" | "degraded" | string;
  preserved?: { kind: string; name: string; reason?: string }[];
  /** Resources the Pack did not install that keep its namespace ("Kind name"). */
  keptInNamespace?: string[];
}

export interface ComposerItem {
  key: string;
  kind: string;
  name: string;
  displayName?: string;
  selectable: boolean;
  role: "resource" | "binding" | "unsupported" | string;
  note?: string;
}

export interface ClosureResource {
  key: string;
  kind: string;
  name: string;
  origin: "direct" | "automatic";
  requiredBy?: string[];
  path?: string;
  leaveAsDependency?: boolean;
}

export interface ComposerBinding {
  name: string;
  targetKind: string;
  displayName?: string;
  required: boolean;
  for?: string[];
}

export interface ComposerPreview {
  resources: ClosureResource[];
  bindings: ComposerBinding[];
  issues: { key?: string; message: string }[];
}

export interface PackProject {
  id: string;
  digest: string;
  fileName: string;
  direct: string[];
  automatic: string[];
  createdAt: string;
  archiveUrl: string;
  publisher?: string;
  name?: string;
  version?: string;
  displayName?: string;
}

/** packPath is the API path of an installed Pack. */
export const packPath = (publisher: string, name: string) => `/api/packs/${encodeURIComponent(publisher)}/${encodeURIComponent(name)}`;

/** consolePackPath is the Console page of an installed Pack. */
export const consolePackPath = (publisher: string, name: string) => `/packs/${encodeURIComponent(publisher)}/${encodeURIComponent(name)}`;

const reasons: Record<string, string> = {
  NotZip: "The file is not a ZIP archive.",
  CompressedTooLarge: "The archive is larger than the 8 MiB a Pack may be.",
  TooManyFiles: "The archive holds more than the 128 files a Pack may hold.",
  FileTooLarge: "A file in the archive expands to more than the 4 MiB a file may have.",
  ExpandedTooLarge: "The archive expands to more than the 16 MiB a Pack may hold in all.",
  AbsolutePath: "A file in the archive has an absolute path; Pack paths must be relative.",
  ParentTraversal: "A file in the archive reaches outside it with “..”.",
  Backslash: "A file path in the archive uses a backslash; Pack paths use “/”.",
  DriveLetter: "A file path in the archive names a drive letter.",
  DuplicatePath: "The archive holds the same path twice.",
  CaseCollidingPath: "Two paths in the archive differ only in upper and lower case.",
  Link: "The archive holds a link; Packs may hold only plain files.",
  UnlistedEntry: "The archive holds a file that pack.yaml does not list.",
  MissingEntry: "pack.yaml lists a resource file that the archive does not hold.",
  MissingManifest: "The archive has no pack.yaml at its root, so it is not a Pack.",
  InvalidManifest: "pack.yaml is not a valid Pack manifest.",
  UnsupportedRequirements: "The Pack declares requirements; this version installs only Packs without requirements.",
  UnsupportedKind: "The Pack contains a kind of resource that Packs cannot install (only ModelProviders, RuntimeProfiles, ModelProfiles, Agents, Flows and Entries).",
  InvalidResource: "A resource in the Pack is not valid.",
  DuplicateResource: "The Pack contains two resources of the same kind and name.",
  UnknownBinding: "A resource refers to a binding that pack.yaml does not declare.",
};

/**
 * reasonSentence says why an archive was refused, in words: the reason's sentence, the archive
 * path and field it concerns, and the server's detail when it adds something.
 */
export function reasonSentence(reason: string, path?: string, field?: string, detail?: string): string {
  let s = reasons[reason] ?? "The archive is not a valid Pack.";
  const where = [path && `file ${path}`, field && `field ${field}`].filter(Boolean).join(", ");
  if (where) s = `${s.replace(/\.$/, "")} (${where}).`;
  if (detail && !s.includes(detail)) s = `${s} ${detail.charAt(0).toUpperCase()}${detail.slice(1)}${/[.!?]$/.test(detail) ? "" : "."}`;
  return s;
}

/**
 * extraDetail keeps what the server's detail adds to the reason: a detail spelled like a Go
 * error ("the Pack archive is refused: Link agents/x.yaml: why") repeats the code and path, so
 * only its explanation stays.
 */
function extraDetail(reason: string, detail?: string, title?: string): string | undefined {
  if (!detail || detail === title) return undefined;
  const at = detail.indexOf(reason);
  if (at < 0) return detail;
  const rest = detail.slice(at + reason.length);
  const i = rest.indexOf(": ");
  return i >= 0 ? rest.slice(i + 2) : undefined;
}

/** problemSentence turns a failed Packs or Composer call into what a person reads. */
export function problemSentence(e: unknown): string {
  if (!(e instanceof ApiError)) return e instanceof Error ? e.message : String(e);
  if (e.unavailable) return "The platform API cannot be reached; try again when it answers.";
  if (e.status === 403) return "You are not permitted to do this in this workspace.";
  if (e.status === 413) return reasons.CompressedTooLarge;
  if (e.status === 415) return "The file must be sent as a ZIP archive.";
  const reason = e.problem.reason;
  if (reason === "DashboardReferences") {
    const what = e.detail.split(": removing it needs")[0];
    return `Nothing was changed: ${what}. Removing the Entry takes it off those Dashboards; confirm that to go on.`;
  }
  if (typeof reason === "string" && reason && (reason in reasons || e.status === 422)) {
    const str = (v: unknown) => (typeof v === "string" ? v : undefined);
    return reasonSentence(reason, str(e.problem.path), str(e.problem.field), extraDetail(reason, e.detail, str(e.problem.title)));
  }
  if (e.status === 409 && Array.isArray(e.problem.changes)) {
    const n = conflicts(e.problem.changes as Change[]).length;
    return `Nothing was changed: ${n === 1 ? "one resource conflicts" : `${n} resources conflict`} with what is in the workspace.`;
  }
  return e.message;
}

/** needsDashboardAuthorization: the operation would remove Entries that Dashboards show, which needs the operator's word. */
export const needsDashboardAuthorization = (e: unknown) => e instanceof ApiError && e.status === 409 && e.problem.reason === "DashboardReferences";

/** conflicts are the changes that block an install or update. */
export const conflicts = (changes: Change[] | undefined) => (changes ?? []).filter((c) => c.action === "conflict");

const stateWords: Record<string, string> = {
  installing: "Installing",
  installed: "Installed",
  "rolled back": "Rolled back",
  degraded: "Degraded",
  uninstalling: "Uninstalling",
};

/**
 * stateLabel is an installed Pack's state in a person's words: an installed Pack that still
 * needs a binding or misses a requirement says so, since that is what the person must act on.
 */
export function stateLabel(state: string, readiness?: string): string {
  if (state === "installed" && readiness && readiness !== "ready") return readinessLabel(readiness);
  return stateWords[state] ?? (state ? state.charAt(0).toUpperCase() + state.slice(1) : "Unknown");
}

/** stateTone picks the pill colour: fine, attention or failure. */
export function stateTone(state: string, readiness?: string): "ok" | "warn" | "error" | "busy" {
  if (state === "installing" || state === "uninstalling") return "busy";
  if (state === "degraded" || state === "rolled back") return "error";
  if (readiness && readiness !== "ready") return "warn";
  return "ok";
}

export function readinessLabel(readiness: string): string {
  switch (readiness) {
    case "ready":
      return "Ready";
    case "needs configuration":
      return "Needs configuration";
    case "missing requirement":
      return "Missing requirement";
    default:
      return readiness ? readiness.charAt(0).toUpperCase() + readiness.slice(1) : "Unknown";
  }
}

export function readinessSentence(readiness: string): string {
  switch (readiness) {
    case "ready":
      return "Ready: every required binding is satisfied.";
    case "needs configuration":
      return "Needs configuration: a required binding has no selection yet. The Pack installs; choose a ModelProfile or Secret for it to work.";
    case "missing requirement":
      return "Missing requirement: a resource refers to something neither the Pack nor the workspace has.";
    default:
      return readinessLabel(readiness);
  }
}

const actionWords: Record<string, string> = {
  create: "Create",
  update: "Update",
  unchanged: "Unchanged",
  conflict: "Conflict",
  remove: "Remove",
};

export const actionLabel = (a: string) => actionWords[a] ?? a;

const conditionWords: Record<string, string> = {
  managed: "Managed",
  modified: "Modified since installed",
  missing: "Missing",
};

export const conditionLabel = (c: string) => conditionWords[c] ?? c;

/** changeSummary counts the plan by action: "2 to create, 1 to update, 3 unchanged". */
export function changeSummary(changes: Change[]): string {
  const n = (a: Action) => changes.filter((c) => c.action === a).length;
  const parts: string[] = [];
  if (n("create")) parts.push(`${n("create")} to create`);
  if (n("update")) parts.push(`${n("update")} to update`);
  if (n("remove")) parts.push(`${n("remove")} to remove`);
  if (n("unchanged")) parts.push(`${n("unchanged")} unchanged`);
  if (n("conflict")) parts.push(`${n("conflict")} in conflict`);
  return parts.length ? parts.join(", ") : "no resources";
}

/** showValue renders one side of a field change compactly (absent says so). */
export function showValue(v: unknown, max = 120): string {
  if (v === undefined || v === null) return "(absent)";
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** headerFileName keeps a file name that an HTTP header can carry (printable ASCII). */
export function headerFileName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  return base.replace(/[^\x20-\x7e]/g, "_").slice(0, 255) || "pack.zip";
}

/** bindingTarget is what satisfies a binding, in words. */
export const bindingTarget = (kind: string) => (kind === "secret" ? "Secret" : kind === "modelProfile" ? "ModelProfile" : kind);

/** selectionValue and parseSelection carry a binding selection through a <select>. */
export const selectionValue = (s?: BindingSelection) => (s ? `${s.namespace}/${s.name}` : "");
export function parseSelection(v: string): BindingSelection | undefined {
  const i = v.indexOf("/");
  return i > 0 ? { namespace: v.slice(0, i), name: v.slice(i + 1) } : undefined;
}

// The Composer's kinds in the order a Pack installs them, then what can only be a binding or is
// not supported.
const kindOrder = ["Entry", "Flow", "Agent", "ModelProfile", "ModelProvider", "RuntimeProfile", "Secret", "Vault", "Tool"];

/** groupByKind groups the inventory for display, kinds in a stable order and names sorted. */
export function groupByKind(items: ComposerItem[]): { kind: string; items: ComposerItem[] }[] {
  const groups = new Map<string, ComposerItem[]>();
  for (const it of items) groups.set(it.kind, [...(groups.get(it.kind) ?? []), it]);
  const rank = (k: string) => (kindOrder.includes(k) ? kindOrder.indexOf(k) : kindOrder.length);
  return [...groups.entries()]
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
    .map(([kind, xs]) => ({ kind, items: [...xs].sort((a, b) => a.name.localeCompare(b.name)) }));
}

/** A selection move of the Composer. */
export type Move = { op: "select" | "unselect" | "keep"; key: string };

/**
 * applyMove returns the next direct selection: select and Keep add the key (Keep promotes an
 * automatic dependency to a direct one), unselect drops it ("Leave as dependency" when another
 * selected resource still requires it: the closure then brings it back as automatic).
 */
export function applyMove(selection: string[], m: Move): string[] {
  if (m.op === "unselect") return selection.filter((k) => k !== m.key);
  return selection.includes(m.key) ? selection : [...selection, m.key];
}

/** itemStatus is how the inventory shows a resource against the current closure. */
export function itemStatus(item: ComposerItem, selection: string[], closure?: ComposerPreview): "selected" | "automatic" | "none" {
  if (selection.includes(item.key)) return "selected";
  if (closure?.resources.some((r) => r.key === item.key && r.origin === "automatic")) return "automatic";
  return "none";
}

/** removeLabel names a direct selection's remove action: a still-required one stays as a dependency. */
export const removeLabel = (r: ClosureResource) => (r.leaveAsDependency ? "Leave as dependency" : "Remove");

/** requiredBySentence says which selected resources pull an automatic one in. */
export function requiredBySentence(r: ClosureResource): string {
  const by = r.requiredBy ?? [];
  if (!by.length) return "";
  return `Required by ${by.join(", ")}`;
}

const NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

export interface CoordinateForm {
  publisher: string;
  name: string;
  version: string;
}

/** coordinateErrors checks the Pack coordinate before the server does, with the spec's rules. */
export function coordinateErrors(f: CoordinateForm): Partial<Record<keyof CoordinateForm, string>> {
  const out: Partial<Record<keyof CoordinateForm, string>> = {};
  if (!NAME.test(f.publisher)) out.publisher = "Use lowercase letters, digits and -, starting and ending with a letter or digit.";
  if (!NAME.test(f.name)) out.name = "Use lowercase letters, digits and -, starting and ending with a letter or digit.";
  if (!SEMVER.test(f.version)) out.version = "Use a semantic version such as 1.0.0.";
  return out;
}

/** PackSourceView is where an installed archive came from; a Registry source carries its provenance. */
export interface PackSourceView {
  kind?: string;
  fileName?: string;
  digest?: string;
  registry?: string;
  registrationUid?: string;
  observationId?: string;
  sourceVersion?: string;
  manifestDigest?: string;
}

/** sourceLabel says in a few words where an installed archive came from. */
export function sourceLabel(s?: PackSourceView): string {
  if (s?.kind === "Registry") return `registry ${s.registry || s.registrationUid || "(deleted)"}`;
  return s?.fileName || "";
}

/** ImportedSourceRef names a Source version imported from a registry (what discovery links /packs with). */
export interface ImportedSourceRef {
  sourceVersion: string;
  publisher: string;
  source: string;
  version: string;
}

/**
 * importedSourceRequest is the preview or install call for the Pack of an imported Source
 * version: the same routes as a file, with a JSON body naming the Source version instead of a
 * ZIP body (the server fetches and checks the archive).
 */
export function importedSourceRequest(ref: ImportedSourceRef, what: "preview" | "install", removeDashboardReferences = false) {
  const body: Record<string, string> = {};
  if (ref.sourceVersion) body.sourceVersion = ref.sourceVersion;
  if (ref.publisher) body.publisher = ref.publisher;
  if (ref.source) body.sourceName = ref.source;
  if (ref.version) body.version = ref.version;
  const path = what === "preview" ? "/api/packs/preview" : `/api/packs${removeDashboardReferences ? "?removeDashboardReferences=true" : ""}`;
  return { path, options: { method: "POST", body: { source: body } } };
}
