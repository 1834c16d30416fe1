import { describe, expect, it } from "vitest";
import {
  emptyForm,
  fieldErrorsFrom,
  filterZones,
  formFromTrigger,
  intervalExpression,
  intervalParts,
  latestOccurrence,
  nameFrom,
  parseInput,
  previewLine,
  requestFromForm,
  scheduleSummary,
  targetableFlows,
  timeZones,
  triggerState,
  type Occurrence,
  type Trigger,
} from "./triggers";

const trigger = (name: string, extra: Partial<Trigger["definition"]> = {}, status: Partial<NonNullable<Trigger["status"]>> = {}): Trigger => ({
  apiVersion: "platform/v1",
  kind: "Trigger",
  metadata: { name, tags: { team: "reports" }, annotations: { "platform/owner": "p1", note: "kept" } },
  definition: {
    enabled: true,
    source: { kind: "schedule", schedule: { type: "cron", expression: "0 7 * * 1-5", timeZone: "Europe/Paris" } },
    target: { kind: "flow", flow: { name: "support-triage", namespace: "acme.kit", version: "1.2.0" }, input: { request: "Weekly" } },
    misfirePolicy: "fireAll",
    concurrencyPolicy: "allow",
    catchUpWindow: "02:00:00",
    catchUpLimit: 3,
    pauseAfterFailures: 0,
    ...extra,
  },
  status: { conditions: [], namespace: "default", paused: false, consecutiveFailures: 0, ...status },
});

describe("a schedule reads as one line with its zone", () => {
  it("names the type, the expression in words and the IANA zone", () => {
    expect(scheduleSummary({ type: "interval", expression: "1.02:00:30", timeZone: "UTC" })).toBe("Interval every 1 day 2 hours 30 seconds (UTC)");
    expect(scheduleSummary({ type: "interval", expression: "00:00:02", timeZone: "Europe/Paris" })).toBe("Interval every 2 seconds (Europe/Paris)");
    expect(scheduleSummary({ type: "cron", expression: "0 7 * * 1-5", timeZone: "Europe/Paris" })).toBe("Cron 0 7 * * 1-5 (Europe/Paris)");
    expect(scheduleSummary({ type: "once", expression: "2027-01-31T09:00:00", timeZone: "America/New_York" })).toBe("Once at 2027-01-31 09:00:00 (America/New_York)");
    expect(scheduleSummary(undefined)).toBe("no schedule");
  });

  it("shows a paused Trigger as Paused and a disabled one as Disabled, whatever else", () => {
    expect(triggerState(trigger("a"))).toBe("Enabled");
    expect(triggerState(trigger("a", {}, { paused: true }))).toBe("Paused");
    expect(triggerState(trigger("a", { enabled: false }, { paused: true }))).toBe("Disabled");
  });
});

describe("an interval's guided fields are its [days.]hh:mm:ss expression", () => {
  it("spells the parts canonically, carrying what overflows", () => {
    expect(intervalExpression({ hours: 1 })).toBe("01:00:00");
    expect(intervalExpression({ minutes: 90 })).toBe("01:30:00");
    expect(intervalExpression({ days: 2, seconds: 5 })).toBe("2.00:00:05");
    expect(intervalExpression({ hours: 25 })).toBe("1.01:00:00");
    expect(intervalExpression({ minutes: -3, seconds: Number.NaN })).toBe("00:00:00");
  });
  it("reads an expression back into its parts, and nothing else", () => {
    expect(intervalParts("1.02:03:04")).toEqual({ days: 1, hours: 2, minutes: 3, seconds: 4 });
    expect(intervalParts("5m")).toBeUndefined();
  });
});

describe("the editor's form becomes the Trigger the API takes", () => {
  const form = { ...emptyForm("America/New_York"), name: "every-hour", displayName: "Every hour", flow: "prepare-report-builtin", input: '{"request":"Quarterly"}' };

  it("creates with the schedule of the chosen type in the chosen zone, the Flow, the input and the policies with their defaults", () => {
    const r = requestFromForm({ ...form, interval: { days: 0, hours: 0, minutes: 0, seconds: 30 } });
    expect(r).toEqual({
      body: {
        apiVersion: "platform/v1",
        kind: "Trigger",
        metadata: { name: "every-hour" },
        definition: {
          displayName: "Every hour",
          enabled: true,
          source: { kind: "schedule", schedule: { type: "interval", expression: "00:00:30", timeZone: "America/New_York" } },
          target: { kind: "flow", flow: { name: "prepare-report-builtin" }, input: { request: "Quarterly" } },
          misfirePolicy: "fireOnce",
          concurrencyPolicy: "skip",
          catchUpWindow: "01:00:00",
          catchUpLimit: 10,
          jitter: undefined,
          pauseAfterFailures: 5,
        },
      },
    });
    const cron = requestFromForm({ ...form, type: "cron", cron: " 30 2 * * * " });
    expect("body" in cron && cron.body.definition.source.schedule).toEqual({ type: "cron", expression: "30 2 * * *", timeZone: "America/New_York" });
    const once = requestFromForm({ ...form, type: "once", once: "2027-01-31T09:00" });
    expect("body" in once && once.body.definition.source.schedule?.expression).toBe("2027-01-31T09:00");
  });

  it("refuses an input that is not a JSON object before sending anything", () => {
    expect(requestFromForm({ ...form, input: "{request: 1}" })).toEqual({ errors: { input: expect.stringMatching(/^The input is not valid JSON/) } });
    expect(requestFromForm({ ...form, input: "[1, 2]" })).toEqual({ errors: { input: expect.stringMatching(/must be a JSON object/) } });
    expect(parseInput("  ")).toEqual({ value: {} });
  });

  it("asks for a Flow, a name and a schedule of the chosen type", () => {
    const r = requestFromForm({ ...form, name: " ", flow: "", type: "cron", cron: "" });
    expect("errors" in r && Object.keys(r.errors).sort()).toEqual(["cron", "flow", "name"]);
    expect(requestFromForm({ ...form, interval: { days: 0, hours: 0, minutes: 0, seconds: 0 } })).toEqual({ errors: { interval: expect.any(String) } });
  });

  it("round-trips an edit, keeping what the editor does not show (tags, annotations, the Flow's namespace and version)", () => {
    const t = trigger("digest", { jitter: "00:05:00" });
    const f = formFromTrigger(t);
    expect(f).toMatchObject({ name: "digest", type: "cron", cron: "0 7 * * 1-5", timeZone: "Europe/Paris", flow: "support-triage", misfirePolicy: "fireAll", catchUpLimit: 3, pauseAfterFailures: 0, jitter: "00:05:00" });
    const r = requestFromForm({ ...f, cron: "0 8 * * 1-5" }, t);
    if (!("body" in r)) throw new Error("expected a body");
    expect(r.body.metadata).toEqual({ name: "digest", tags: { team: "reports" }, annotations: { "platform/owner": "p1", note: "kept" } });
    expect(r.body.definition.target.flow).toEqual({ name: "support-triage", namespace: "acme.kit", version: "1.2.0" });
    expect(r.body.definition.source.schedule?.expression).toBe("0 8 * * 1-5");
    const other = requestFromForm({ ...f, flow: "another" }, t);
    expect("body" in other && other.body.definition.target.flow).toEqual({ name: "another" });
  });

  it("derives the name from the display name, accents folded", () => {
    expect(nameFrom("Rapport hebdo — Équipe Nord!")).toBe("rapport-hebdo-equipe-nord");
  });
});

describe("the server's field errors show next to their controls", () => {
  it("places the save's and the preview's paths, the expression on the control of the schedule type in use", () => {
    const errs = fieldErrorsFrom(
      [
        { location: "body.definition.source.schedule.expression", message: "bad cron" },
        { location: "body.definition.source.schedule.timeZone", message: "unknown zone" },
        { location: "body.definition.target.flow.name", message: "no such Flow" },
        { location: "body.definition.catchUpWindow", message: "too long" },
        { location: "body.metadata.name", message: "bad name" },
        { location: "body.somethingElse", message: "other" },
      ],
      "cron",
    );
    expect(errs).toEqual({ cron: "bad cron", timeZone: "unknown zone", flow: "no such Flow", catchUpWindow: "too long", name: "bad name", form: "other" });
    expect(fieldErrorsFrom([{ location: "body.schedule.expression", message: "bad interval" }], "interval")).toEqual({ interval: "bad interval" });
  });
});

describe("the time zone picker", () => {
  it("offers the browser's IANA zones with UTC, sorted, searchable by any part, keeping the selected one", () => {
    const zones = timeZones(() => ["Europe/Paris", "America/New_York", "Asia/Kolkata"]);
    expect(zones).toEqual(["America/New_York", "Asia/Kolkata", "Europe/Paris", "UTC"]);
    expect(filterZones(zones, "new york", "UTC")).toEqual(["UTC", "America/New_York"]);
    expect(filterZones(zones, "paris", "Europe/Paris")).toEqual(["Europe/Paris"]);
    expect(filterZones(zones, "", "Asia/Calcutta")).toEqual(["Asia/Calcutta", ...zones]);
  });
});

describe("a previewed instant reads as the schedule's local time", () => {
  it("shows the local date and time, the zone's abbreviation and its offset", () => {
    expect(previewLine({ at: "2026-03-29T01:00:00Z", local: "2026-03-29T03:00:00+02:00", zone: "CEST" })).toBe("2026-03-29 03:00:00 CEST (UTC+02:00)");
    expect(previewLine({ at: "2026-01-01T00:00:00Z", local: "2026-01-01T00:00:00Z", zone: "UTC" })).toBe("2026-01-01 00:00:00 UTC (UTC+00:00)");
  });
});

describe("LAST is the newest occurrence known", () => {
  const o = (id: string, firedAt: string): Occurrence => ({ id, kind: "Scheduled", scheduledTime: firedAt, firedAt, outcome: "Submitted" });
  it("takes a Run now from the history before the scheduler writes it to the status", () => {
    const scheduled = o("s", "2026-05-01T10:00:00Z");
    const manual = { ...o("m", "2026-05-01T10:05:00.123456Z"), kind: "Manual" as const };
    expect(latestOccurrence(scheduled, [manual, scheduled])?.id).toBe("m");
    expect(latestOccurrence(manual, [scheduled])?.id).toBe("m");
    expect(latestOccurrence(undefined, [scheduled])?.id).toBe("s");
    expect(latestOccurrence(scheduled, [])?.id).toBe("s");
    expect(latestOccurrence(undefined, undefined)).toBeUndefined();
  });
});

describe("the Trigger editor's Flow choices", () => {
  const flows = [
    { metadata: { name: "prepare-report-builtin" } },
    { metadata: { name: "direct-summarizer" }, systemManaged: true },
    { metadata: { name: "weekly" }, systemManaged: false },
  ];
  it("lists only the workspace's own Flows, never the hidden system-managed ones", () => {
    expect(targetableFlows(flows, "").map((f) => f.metadata.name)).toEqual(["prepare-report-builtin", "weekly"]);
  });
  it("keeps a system-managed Flow that the Trigger already targets", () => {
    expect(targetableFlows(flows, "direct-summarizer").map((f) => f.metadata.name)).toEqual(["prepare-report-builtin", "direct-summarizer", "weekly"]);
  });
});
