// The pure logic of the Console's Triggers page: the shapes of the Triggers API, a schedule in a
// sentence, the guided editor's form and the request it becomes, and where a server's field error
// belongs in that form.

export type ScheduleType = "once" | "interval" | "cron";
export type MisfirePolicy = "fireOnce" | "fireAll" | "skip";
export type ConcurrencyPolicy = "skip" | "allow" | "replace";

export interface Schedule {
  type: ScheduleType;
  expression: string;
  timeZone: string;
}

export interface TriggerDefinition {
  displayName?: string;
  enabled?: boolean;
  source: { kind?: "schedule"; schedule?: Schedule };
  target: { kind?: "flow"; flow?: { name: string; namespace?: string; version?: string }; input?: Record<string, unknown> };
  misfirePolicy?: MisfirePolicy;
  concurrencyPolicy?: ConcurrencyPolicy;
  catchUpWindow?: string;
  catchUpLimit?: number;
  jitter?: string;
  pauseAfterFailures?: number;
}

export interface Occurrence {
  id: string;
  kind: "Scheduled" | "Manual";
  scheduledTime: string;
  firedAt?: string;
  outcome: "Submitted" | "Skipped" | "Failed" | "Missed";
  reason?: string;
  message?: string;
  principalId?: string;
  workItemId?: string;
  taskId?: string;
  flowRunId?: string;
  flow?: { namespace: string; name: string; version?: string };
}

export interface Trigger {
  apiVersion: string;
  kind: "Trigger";
  metadata: { name: string; tags?: Record<string, string>; annotations?: Record<string, string>; uid?: string; createdAt?: string };
  definition: TriggerDefinition;
  status?: {
    conditions: { type: string; status: string; reason: string; message?: string }[];
    namespace: string;
    owner?: string;
    paused: boolean;
    nextFireTime?: string;
    lastOccurrence?: Occurrence;
    consecutiveFailures: number;
  };
}

export interface PreviewInstant {
  at: string;
  local: string;
  zone: string;
}

/** The defaults the resource applies to an omitted policy (the CRD's), shown in the editor. */
export const policyDefaults = {
  misfirePolicy: "fireOnce" as MisfirePolicy,
  concurrencyPolicy: "skip" as ConcurrencyPolicy,
  catchUpWindow: "01:00:00",
  catchUpLimit: 10,
  jitter: "",
  pauseAfterFailures: 5,
};

export type TriggerState = "Enabled" | "Disabled" | "Paused";

export function triggerState(t: Trigger): TriggerState {
  if (t.definition.enabled === false) return "Disabled";
  return t.status?.paused ? "Paused" : "Enabled";
}

/** The interval of an expression [days.]hh:mm:ss as its parts, or undefined when it is not one. */
export function intervalParts(expression: string): { days: number; hours: number; minutes: number; seconds: number } | undefined {
  const m = /^(?:(\d{1,5})\.)?(\d{2}):(\d{2}):(\d{2})$/.exec(expression.trim());
  if (!m) return undefined;
  return { days: Number(m[1] ?? 0), hours: Number(m[2]), minutes: Number(m[3]), seconds: Number(m[4]) };
}

const two = (n: number) => String(n).padStart(2, "0");

/**
 * intervalExpression spells an interval of the guided fields as [days.]hh:mm:ss, carrying
 * overflowing units (90 minutes is 01:30:00) since the server accepts only canonical parts.
 */
export function intervalExpression(parts: { days?: number; hours?: number; minutes?: number; seconds?: number }): string {
  const whole = (n: number | undefined) => (Number.isFinite(n) && n! > 0 ? Math.floor(n!) : 0);
  let total = whole(parts.days) * 86400 + whole(parts.hours) * 3600 + whole(parts.minutes) * 60 + whole(parts.seconds);
  const days = Math.floor(total / 86400);
  total -= days * 86400;
  const hms = `${two(Math.floor(total / 3600))}:${two(Math.floor((total % 3600) / 60))}:${two(total % 60)}`;
  return days > 0 ? `${days}.${hms}` : hms;
}

function plural(n: number, unit: string) {
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}

/** The interval in words: "every 2 hours 30 minutes"; the expression itself when it is not one. */
export function intervalWords(expression: string): string {
  const p = intervalParts(expression);
  if (!p) return expression;
  const words = [
    p.days && plural(p.days, "day"),
    p.hours && plural(p.hours, "hour"),
    p.minutes && plural(p.minutes, "minute"),
    p.seconds && plural(p.seconds, "second"),
  ].filter(Boolean);
  return words.length ? `every ${words.join(" ")}` : "every 0 seconds";
}

/** A schedule in one line, with its zone: what the list and the detail show. */
export function scheduleSummary(s: Schedule | undefined): string {
  if (!s) return "no schedule";
  const zone = s.timeZone ? ` (${s.timeZone})` : "";
  switch (s.type) {
    case "once":
      return `Once at ${s.expression.replace("T", " ")}${zone}`;
    case "interval":
      return `Interval ${intervalWords(s.expression)}${zone}`;
    case "cron":
      return `Cron ${s.expression}${zone}`;
    default:
      return `${s.type} ${s.expression}${zone}`;
  }
}

/** nameFrom derives a resource name from a display name: lowercase ASCII, accents folded, other characters as hyphens. */
export function nameFrom(displayName: string): string {
  return displayName
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 63)
    .replace(/-+$/, "");
}

/** The guided editor's fields, all as the controls hold them. */
export interface TriggerForm {
  name: string;
  displayName: string;
  enabled: boolean;
  type: ScheduleType;
  once: string; // a datetime-local value
  interval: { days: number; hours: number; minutes: number; seconds: number };
  cron: string;
  timeZone: string;
  flow: string; // the Flow's name in the default resource namespace
  input: string; // JSON text
  misfirePolicy: MisfirePolicy;
  concurrencyPolicy: ConcurrencyPolicy;
  catchUpWindow: string;
  catchUpLimit: number;
  jitter: string;
  pauseAfterFailures: number;
}

export function emptyForm(timeZone: string): TriggerForm {
  return {
    name: "",
    displayName: "",
    enabled: true,
    type: "interval",
    once: "",
    interval: { days: 0, hours: 1, minutes: 0, seconds: 0 },
    cron: "0 9 * * 1-5",
    timeZone,
    flow: "",
    input: "{}",
    ...policyDefaults,
  };
}

/** formFromTrigger fills the editor with a Trigger read from the API. */
export function formFromTrigger(t: Trigger): TriggerForm {
  const d = t.definition;
  const s = d.source.schedule ?? { type: "interval" as const, expression: "01:00:00", timeZone: "UTC" };
  const base = emptyForm(s.timeZone);
  return {
    ...base,
    name: t.metadata.name,
    displayName: d.displayName ?? "",
    enabled: d.enabled !== false,
    type: s.type,
    once: s.type === "once" ? s.expression : "",
    interval: (s.type === "interval" && intervalParts(s.expression)) || base.interval,
    cron: s.type === "cron" ? s.expression : base.cron,
    flow: d.target.flow?.name ?? "",
    input: JSON.stringify(d.target.input ?? {}, null, 2),
    misfirePolicy: d.misfirePolicy ?? policyDefaults.misfirePolicy,
    concurrencyPolicy: d.concurrencyPolicy ?? policyDefaults.concurrencyPolicy,
    catchUpWindow: d.catchUpWindow ?? policyDefaults.catchUpWindow,
    catchUpLimit: d.catchUpLimit ?? policyDefaults.catchUpLimit,
    jitter: d.jitter ?? "",
    pauseAfterFailures: d.pauseAfterFailures ?? policyDefaults.pauseAfterFailures,
  };
}

/** The schedule the form proposes: what the preview and the save send. */
export function scheduleOf(f: TriggerForm): Schedule {
  const expression = f.type === "once" ? f.once : f.type === "interval" ? intervalExpression(f.interval) : f.cron.trim();
  return { type: f.type, expression, timeZone: f.timeZone };
}

export type FieldErrors = Partial<Record<keyof TriggerForm | "form", string>>;

/**
 * parseInput checks the input JSON before it is sent: the Work input is a JSON object (the
 * resource refuses anything else), and an empty text stands for {}.
 */
export function parseInput(text: string): { value: Record<string, unknown> } | { error: string } {
  if (!text.trim()) return { value: {} };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { error: `The input is not valid JSON: ${(e as Error).message}` };
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) return { error: "The input must be a JSON object, such as {\"request\": \"...\"}." };
  return { value: v as Record<string, unknown> };
}

/**
 * requestFromForm maps the form to the Trigger the API takes, or to the field errors found
 * before sending. An edit starts from the Trigger as read, so what the editor does not show
 * (tags, annotations, a pinned Flow version or namespace) is kept.
 */
export function requestFromForm(f: TriggerForm, base?: Trigger): { body: Trigger } | { errors: FieldErrors } {
  const errors: FieldErrors = {};
  const input = parseInput(f.input);
  if ("error" in input) errors.input = input.error;
  if (!f.name.trim()) errors.name = "A Trigger needs a name.";
  if (!f.flow) errors.flow = "Choose the Flow the Trigger submits Work to.";
  if (f.type === "once" && !f.once) errors.once = "Choose the date and time it fires.";
  if (f.type === "cron" && !f.cron.trim()) errors.cron = "Enter a cron expression.";
  if (f.type === "interval" && intervalExpression(f.interval) === "00:00:00") errors.interval = "An interval is longer than zero.";
  if (Object.keys(errors).length || "error" in input) return { errors };

  const previous = base?.definition;
  const sameFlow = previous?.target.flow?.name === f.flow;
  const definition: TriggerDefinition = {
    ...previous,
    displayName: f.displayName.trim() || undefined,
    enabled: f.enabled,
    source: { kind: "schedule", schedule: scheduleOf(f) },
    target: { kind: "flow", flow: sameFlow ? { ...previous!.target.flow!, name: f.flow } : { name: f.flow }, input: input.value },
    misfirePolicy: f.misfirePolicy,
    concurrencyPolicy: f.concurrencyPolicy,
    catchUpWindow: f.catchUpWindow.trim() || undefined,
    catchUpLimit: f.catchUpLimit,
    jitter: f.jitter.trim() || undefined,
    pauseAfterFailures: f.pauseAfterFailures,
  };
  const metadata = base ? { name: base.metadata.name, tags: base.metadata.tags, annotations: base.metadata.annotations } : { name: f.name.trim() };
  return { body: { apiVersion: "platform/v1", kind: "Trigger", metadata, definition } };
}

/** Where a server's field path (Problem Details errors[].location) shows in the form. */
const locations: [RegExp, keyof TriggerForm][] = [
  [/^metadata\.name$/, "name"],
  [/^definition\.displayName$/, "displayName"],
  [/^(definition\.source\.)?schedule\.timeZone$/, "timeZone"],
  [/^(definition\.source\.)?schedule\.type$/, "type"],
  [/^definition\.target\.flow(\..*)?$/, "flow"],
  [/^definition\.target(\.input.*)?$/, "input"],
  [/^definition\.misfirePolicy$/, "misfirePolicy"],
  [/^definition\.concurrencyPolicy$/, "concurrencyPolicy"],
  [/^definition\.catchUpWindow$/, "catchUpWindow"],
  [/^definition\.catchUpLimit$/, "catchUpLimit"],
  [/^definition\.jitter$/, "jitter"],
  [/^definition\.pauseAfterFailures$/, "pauseAfterFailures"],
];

/**
 * fieldErrorsFrom places the server's field errors next to their controls; the expression goes
 * to the control of the schedule type in use, anything else to the form as a whole.
 */
export function fieldErrorsFrom(errors: { location?: string; message: string }[], type: ScheduleType): FieldErrors {
  const out: FieldErrors = {};
  const add = (key: keyof FieldErrors, message: string) => {
    out[key] = out[key] ? `${out[key]}; ${message}` : message;
  };
  for (const e of errors) {
    const path = (e.location ?? "").replace(/^body\./, "");
    if (/^(definition\.source\.)?schedule\.expression$/.test(path)) {
      add(type, e.message);
      continue;
    }
    const hit = locations.find(([re]) => re.test(path));
    add(hit ? hit[1] : "form", e.message);
  }
  return out;
}

/** The IANA zones the picker offers: the browser's list, with UTC, sorted. */
export function timeZones(supported: () => string[] = () => (Intl as unknown as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf?.("timeZone") ?? []): string[] {
  const set = new Set(supported());
  set.add("UTC");
  return [...set].sort((a, b) => a.localeCompare(b));
}

/** filterZones keeps the zones that contain the query, ignoring case, "_" and spaces alike; the selected one stays. */
export function filterZones(zones: string[], query: string, selected: string): string[] {
  const norm = (s: string) => s.toLowerCase().replace(/[_\s]+/g, " ");
  const q = norm(query.trim());
  const out = q ? zones.filter((z) => norm(z).includes(q)) : zones;
  return !selected || out.includes(selected) ? out : [selected, ...out];
}

/**
 * previewLine spells a previewed instant as the schedule's local date and time with its zone
 * abbreviation and offset ("2026-03-29 03:00:00 CEST (UTC+02:00)"), the server's own reading, so
 * the daylight saving rules show as the server applies them.
 */
export function previewLine(i: PreviewInstant): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(Z|[+-]\d{2}:\d{2})$/.exec(i.local);
  if (!m) return `${i.local} ${i.zone}`.trim();
  const offset = m[3] === "Z" ? "+00:00" : m[3];
  return `${m[1]} ${m[2]} ${i.zone} (UTC${offset})`;
}

const firedAt = (o: Occurrence) => Date.parse(o.firedAt ?? o.scheduledTime) || 0;

/**
 * latestOccurrence is the newer of the status's latest occurrence and the history's first: the
 * status is written when the scheduler reconciles, so a Run now shows in the history first.
 */
export function latestOccurrence(status: Occurrence | undefined, history: Occurrence[] | undefined): Occurrence | undefined {
  const head = history?.[0];
  if (!status) return head;
  if (!head) return status;
  return firedAt(head) > firedAt(status) ? head : status;
}

/** A Flow as the Flows list reads it: enough to offer it as a Trigger's target. */
export interface FlowChoice {
  metadata: { name: string };
  systemManaged?: boolean;
}

/**
 * targetableFlows are the Flows the editor offers: the workspace's own, never the hidden
 * system-managed Direct Agent Flows that publication keeps for Agent-bound Entries. A Trigger that
 * already targets one (written with kubectl) keeps it as its current choice.
 */
export function targetableFlows<F extends FlowChoice>(flows: F[], current: string): F[] {
  return flows.filter((f) => !f.systemManaged || f.metadata.name === current);
}
