import { describe, expect, it } from "vitest";
import { ApiError } from "../shared/api";
import {
  durationWords,
  elapsed,
  emptyFilters,
  emptyRegistrationForm,
  errorSentence,
  filtersFromQuery,
  filtersToQuery,
  formErrors,
  formatDuration,
  formFromRegistration,
  freshness,
  groupObservations,
  importBlocked,
  importBody,
  nameFromDisplayName,
  parseDuration,
  problemSentence,
  requestFromForm,
  shortDigest,
  shortId,
  type Observation,
  type Registration,
} from "./sourceregistries";

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const obs = (publisher: string, sourceName: string, version: string, d: string, extra: Partial<Observation> = {}): Observation => ({
  registrationUid: "11111111-1111-1111-1111-111111111111",
  observationId: `${publisher}-${sourceName}-${version}-${d}`,
  catalogName: "main",
  publisher,
  sourceName,
  version,
  manifestDigest: digest(d),
  ...extra,
});

describe("durations are the spec's [days.]hh:mm:ss", () => {
  const cases: Record<string, { text: string; seconds?: number; error?: RegExp }> = {
    "hours minutes seconds": { text: "01:30:05", seconds: 5405 },
    "days before the dot": { text: "2.00:00:01", seconds: 172801 },
    "a fraction of a second": { text: "00:00:01.5", seconds: 1.5 },
    "surrounding spaces are ignored": { text: " 00:05:00 ", seconds: 300 },
    "hours past 23 are refused with the way to write them": { text: "26:00:00", error: /whole days before the dot/ },
    "minutes past 59 are refused": { text: "00:60:00", error: /up to 59/ },
    "a bare number is not a duration": { text: "30", error: /\[days\.\]hh:mm:ss/ },
    "an ISO duration is not one either": { text: "PT30M", error: /\[days\.\]hh:mm:ss/ },
  };
  for (const [name, c] of Object.entries(cases))
    it(name, () => {
      const r = parseDuration(c.text);
      if (c.error) expect("error" in r && r.error).toMatch(c.error);
      else expect(r).toEqual({ seconds: c.seconds });
    });

  it("formats whole seconds canonically, carrying into days", () => {
    expect(formatDuration(5405)).toBe("01:30:05");
    expect(formatDuration(90000)).toBe("1.01:00:00");
    expect(formatDuration(0)).toBe("00:00:00");
    expect(formatDuration(-5)).toBe("00:00:00");
    for (const t of ["00:00:30", "23:59:59", "3.04:05:06"]) {
      const p = parseDuration(t);
      expect("seconds" in p && formatDuration(p.seconds)).toBe(t);
    }
  });

  it("reads in words, and a text that is no duration stays as written", () => {
    expect(durationWords("1.02:00:00")).toBe("1 day 2 hours");
    expect(durationWords("00:00:01")).toBe("1 second");
    expect(durationWords("00:00:00")).toBe("0 seconds");
    expect(durationWords("soon")).toBe("soon");
  });

  it("a refresh's duration reads in ms, s or min", () => {
    expect(elapsed({ durationMs: 850 })).toBe("850 ms");
    expect(elapsed({ durationMs: 2400 })).toBe("2.4 s");
    expect(elapsed({ duration: "00:01:05" })).toBe("1 min 5 s");
    expect(elapsed({ startedAt: "2026-01-01T00:00:00Z", finishedAt: "2026-01-01T00:00:01.200Z" })).toBe("1.2 s");
    expect(elapsed({})).toBe("");
  });
});

describe("the registration form", () => {
  it("sends only what was set, leaving empty fields to the server's defaults", () => {
    const f = { ...emptyRegistrationForm(), name: "acme", indexUrl: "https://registry.example/index.json" };
    expect(requestFromForm(f)).toEqual({
      name: "acme",
      properties: {
        displayName: undefined,
        indexUrl: "https://registry.example/index.json",
        enabled: true,
        trustPolicy: "untrusted",
        endpointPolicy: { allowHttp: false, allowPrivateNetwork: false },
        authenticationMode: "none",
        refreshPolicy: { periodicEnabled: false },
      },
    });
  });

  it("a staticBearer registration names an instance Secret, and a form read back is the same request", () => {
    const f = { ...emptyRegistrationForm(), name: "private", indexUrl: "https://10.0.0.5/index.json", allowPrivateNetwork: true, authenticationMode: "staticBearer", credentialName: "registry-token" };
    f.durations.staleAfter = "2.00:00:00";
    f.maximumAttempts = "4";
    f.retainedObservations = "2";
    const req = requestFromForm(f);
    expect(req.properties.credential).toEqual({ name: "registry-token", scopeRef: "/instance" });
    expect(req.properties.refreshPolicy).toEqual({ periodicEnabled: false, staleAfter: "2.00:00:00", maximumAttempts: 4 });
    expect(req.properties.cachePolicy).toEqual({ retainedObservations: 2 });
    expect(requestFromForm(formFromRegistration(req as Registration))).toEqual(req);
  });

  const errorCases: Record<string, { change: Partial<ReturnType<typeof emptyRegistrationForm>>; field: string; message: RegExp }> = {
    "an index URL is required": { change: { indexUrl: "" }, field: "indexUrl", message: /required/ },
    "an index URL with a query is refused": { change: { indexUrl: "https://r.example/index.json?x=1" }, field: "indexUrl", message: /no credentials, query/ },
    "an index URL with credentials is refused": { change: { indexUrl: "https://u:p@r.example/index.json" }, field: "indexUrl", message: /no credentials/ },
    "a percent-encoded path is refused": { change: { indexUrl: "https://r.example/a%2Fb" }, field: "indexUrl", message: /percent-encoded/ },
    "plain http needs allowHttp": { change: { indexUrl: "http://r.example/index.json" }, field: "indexUrl", message: /Allow plain HTTP/ },
    "staticBearer needs a Secret": { change: { authenticationMode: "staticBearer" }, field: "credential", message: /instance Secret/ },
    "a name is a DNS label": { change: { name: "Acme_Registry" }, field: "name", message: /lowercase/ },
    "maximum attempts are 1 to 100": { change: { maximumAttempts: "0" }, field: "maximumAttempts", message: /1 to 100/ },
    "retained observations are whole": { change: { retainedObservations: "2.5" }, field: "retainedObservations", message: /1 to 100/ },
  };
  for (const [name, c] of Object.entries(errorCases))
    it(name, () => {
      const f = { ...emptyRegistrationForm(), name: "acme", indexUrl: "https://r.example/index.json", ...c.change };
      expect(formErrors(f, true)[c.field]).toMatch(c.message);
    });

  it("a malformed duration is named on its field; plain http with allowHttp is fine", () => {
    const f = { ...emptyRegistrationForm(), name: "acme", indexUrl: "http://r.example/index.json", allowHttp: true };
    f.durations.timeout = "5 minutes";
    expect(Object.keys(formErrors(f, true))).toEqual(["timeout"]);
  });

  it("derives a name from the display name as the Console does elsewhere", () => {
    expect(nameFromDisplayName("Ünïted Registry: Main!")).toBe("united-registry-main");
    expect(nameFromDisplayName("  ")).toBe("");
  });
});

describe("freshness of a registration", () => {
  const reg = (status: Registration["status"], enabled = true): Registration => ({ name: "r", properties: { indexUrl: "https://r.example/i", enabled }, status });
  it("is never refreshed without a success, stale when the server says so, disabled before all", () => {
    expect(freshness(reg(undefined))).toBe("never");
    expect(freshness(reg({ lastSuccessTime: "2026-01-01T00:00:00Z" }))).toBe("fresh");
    expect(freshness(reg({ lastSuccessTime: "2026-01-01T00:00:00Z", stale: true }))).toBe("stale");
    expect(freshness(reg({ lastSuccessTime: "2026-01-01T00:00:00Z", freshness: "stale" }))).toBe("stale");
    expect(freshness(reg({ lastSuccessTime: "2026-01-01T00:00:00Z" }, false))).toBe("disabled");
    expect(freshness(reg({ lastSuccessTime: "2026-01-01T00:00:00Z", freshness: "fresh", stale: false }))).toBe("fresh");
    expect(freshness(reg({ freshness: "never" }))).toBe("never");
  });
  it("a refresh's error code reads with its meaning, and an unknown code as it is", () => {
    expect(errorSentence("RegistryRollback")).toBe("RegistryRollback: the registry served an older index than one already seen");
    expect(errorSentence("SomethingNew")).toBe("SomethingNew");
  });
  it("a digest reads in its short form", () => {
    expect(shortDigest(digest("a"))).toBe("sha256:aaaaaaaaaaaa");
    expect(shortDigest(undefined)).toBe("");
  });
});

describe("discovery filters are the query", () => {
  it("sends only what is set, booleans only when true", () => {
    expect(filtersToQuery(emptyFilters())).toBe("take=25");
    const f = { ...emptyFilters(), search: " tools ", publisher: "acme", compatibleOnly: true, conflictsOnly: true, publisherStatus: "Verified", skip: 50, take: 50 };
    expect(filtersToQuery(f)).toBe("search=tools&publisher=acme&publisherStatus=Verified&compatibleOnly=true&conflictsOnly=true&skip=50&take=50");
  });
  it("take never exceeds the server's 100 nor falls below 1", () => {
    expect(filtersToQuery({ ...emptyFilters(), take: 500 })).toBe("take=100");
    expect(filtersToQuery({ ...emptyFilters(), take: 0 })).toBe("take=1");
    expect(filtersFromQuery(new URLSearchParams("take=1000")).take).toBe(100);
  });
  it("the page's address reads back into the same filters", () => {
    const f = { ...emptyFilters(), registry: "acme", freshOnly: true, trustPolicy: "trusted", verificationStatus: "Verified", skip: 25 };
    expect(filtersFromQuery(new URLSearchParams(filtersToQuery(f)))).toEqual(f);
  });
});

describe("observations group by publisher/Source, then opaque version", () => {
  it("keeps the server's order of versions and never sorts them as semver", () => {
    const groups = groupObservations([obs("acme", "tools", "1.9", "a"), obs("acme", "tools", "1.10", "b"), obs("acme", "tools", "1.2", "c"), obs("zeta", "kit", "b", "d"), obs("acme", "tools", "1.9", "a", { observationId: "second" })]);
    expect(groups.map((g) => `${g.publisher}/${g.sourceName}`)).toEqual(["acme/tools", "zeta/kit"]);
    expect(groups[0].versions.map((v) => v.version)).toEqual(["1.9", "1.10", "1.2"]);
  });
  it("keeps equal observations individually visible and not a conflict", () => {
    const [g] = groupObservations([obs("acme", "tools", "1.0", "a", { registrationUid: "r1" }), obs("acme", "tools", "1.0", "a", { registrationUid: "r2", observationId: "o2" })]);
    expect(g.versions).toHaveLength(1);
    expect(g.versions[0].observations).toHaveLength(2);
    expect(g.versions[0].conflict).toBe(false);
  });
  it("flags differing digests of one version as a conflict, and a conflict the server reports", () => {
    const [g] = groupObservations([obs("acme", "tools", "1.0", "a"), obs("acme", "tools", "1.0", "b"), obs("acme", "tools", "2.0", "c", { conflict: true })]);
    expect(g.versions.map((v) => v.conflict)).toEqual([true, true]);
    expect(g.versions[0].digests).toHaveLength(2);
  });
  it("a Source of the same name by another publisher is another group", () => {
    expect(groupObservations([obs("acme", "tools", "1", "a"), obs("other", "tools", "1", "a")])).toHaveLength(2);
  });
  it("an import selects exactly the observation", () => {
    expect(importBody(obs("acme", "tools", "1.0", "a"))).toEqual({
      selection: { registrationUid: "11111111-1111-1111-1111-111111111111", observationId: "acme-tools-1.0-a", catalogName: "main", publisher: "acme", sourceName: "tools", version: "1.0" },
    });
  });
});

describe("ids are shortened to their random end", () => {
  it("two time-ordered ids made in the same second stay apart", () => {
    const a = shortId("01a21a49-16e4-75c2-afa5-879e9b497a56");
    const b = shortId("01a21a49-17b7-7397-8036-121189f7aa40");
    expect(a).toBe("…9b497a56");
    expect(b).not.toBe(a);
  });
  it("a short id stays whole", () => expect(shortId("abc")).toBe("abc"));
});

describe("import is offered only where the server would import", () => {
  const registration = (trustPolicy: string, enabled = true): Registration => ({ name: "team", properties: { indexUrl: "https://r.example/i", displayName: "Team registry", trustPolicy, enabled } });
  const cases: Record<string, { o: Partial<Observation>; reg?: Registration; conflict?: boolean; refused?: RegExp }> = {
    "a trusted registration's version imports": { o: { trustPolicy: "trusted", publisherStatus: "Verified" }, reg: registration("trusted") },
    "an authoritative registration's version imports": { o: { trustPolicy: "authoritative" }, reg: registration("authoritative") },
    "an untrusted registration imports nothing": { o: { trustPolicy: "untrusted" }, reg: registration("untrusted"), refused: /Team registry is untrusted: nothing is imported/ },
    "a policy the observation omits is the registration's": { o: {}, reg: registration("untrusted"), refused: /untrusted/ },
    "a disabled registration imports nothing": { o: { trustPolicy: "trusted" }, reg: registration("trusted", false), refused: /Team registry is disabled/ },
    "a revoked publisher's versions are not imported": { o: { trustPolicy: "trusted", publisherStatus: "Revoked" }, reg: registration("trusted"), refused: /publisher acme is revoked/ },
    "a digest conflict blocks the import": { o: { trustPolicy: "trusted" }, reg: registration("trusted"), conflict: true, refused: /disagree.*blocks its import/ },
  };
  it("an untrusted or disabled registration names where to change it", () => {
    expect(importBlocked(obs("acme", "tools", "1.0", "a"), registration("untrusted"), false)?.fixAt).toBe("team");
    expect(importBlocked(obs("acme", "tools", "1.0", "a", { trustPolicy: "trusted", publisherStatus: "Revoked" }), registration("trusted"), false)?.fixAt).toBeUndefined();
  });
  for (const [name, c] of Object.entries(cases))
    it(name, () => {
      const refused = importBlocked(obs("acme", "tools", "1.0", "a", c.o), c.reg, c.conflict ?? false);
      if (c.refused) expect(refused?.sentence).toMatch(c.refused);
      else expect(refused).toBeUndefined();
    });
});

describe("refusals read as sentences", () => {
  it("an ETag conflict says someone changed it and what to do", () => {
    expect(problemSentence(new ApiError(412, "Precondition Failed", "etag mismatch"))).toMatch(/someone changed this registration since you opened it/);
  });
  it("a refusal for others says only Platform administrators", () => {
    expect(problemSentence(new ApiError(403, "Forbidden", "no"))).toMatch(/Only Platform administrators/);
  });
  it("a 503 the server explains is its explanation, not an unreachable API", () => {
    expect(problemSentence(new ApiError(503, "Service Unavailable", "this server runs without a registry client", [], { detail: "this server runs without a registry client" }))).toBe("this server runs without a registry client");
    expect(problemSentence(new ApiError(502, "Bad Gateway", ""))).toMatch(/cannot be reached/);
  });
  it("the server's own refusal is kept (deleting the official registration)", () => {
    expect(problemSentence(new ApiError(409, "Conflict", "the official registration cannot be deleted"))).toBe("the official registration cannot be deleted");
  });
});
