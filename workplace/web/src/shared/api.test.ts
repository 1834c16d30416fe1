import { describe, expect, it } from "vitest";
import { ApiError, sameJSON, writeUnlessChanged } from "./api";

type Resource = { properties: Record<string, unknown>; status: { lastRefresh: string } };
const stale = () => new ApiError(412, "Precondition Failed", "the resource changed since the ETag");

/** A store of one resource whose writes are conditional on its ETag, as the API's are. */
function store(initial: Resource) {
  let current = { body: initial, etag: '"1"' };
  const writes: string[] = [];
  return {
    read: async () => current,
    writeStatus: (lastRefresh: string) => (current = { body: { ...current.body, status: { lastRefresh } }, etag: `"${Number(current.etag.slice(1, -1)) + 1}"` }),
    writeProperties: (properties: Record<string, unknown>) => (current = { body: { ...current.body, properties }, etag: `"${Number(current.etag.slice(1, -1)) + 1}"` }),
    write: async (etag: string) => {
      writes.push(etag);
      if (etag !== current.etag) throw stale();
      return "written";
    },
    writes,
  };
}

describe("a conditional write of what the person saw", () => {
  const seenResource: Resource = { properties: { trustPolicy: "trusted", refreshPolicy: { timeout: "00:00:05", interval: "01:00:00" } }, status: { lastRefresh: "t0" } };
  const definitionOf = (r: Resource) => r.properties;

  it("goes through when only the status changed since the read", async () => {
    const s = store(seenResource);
    const seen = await s.read();
    s.writeStatus("t1");
    await expect(writeUnlessChanged(seen, s.read, definitionOf, s.write)).resolves.toBe("written");
    expect(s.writes).toEqual(['"1"', '"2"']);
  });

  it("is refused when someone changed the definition since the read", async () => {
    const s = store(seenResource);
    const seen = await s.read();
    s.writeProperties({ ...seenResource.properties, trustPolicy: "authoritative" });
    await expect(writeUnlessChanged(seen, s.read, definitionOf, s.write)).rejects.toMatchObject({ status: 412 });
    expect(s.writes).toEqual(['"1"']);
  });

  it("passes any other refusal on without a second write", async () => {
    const s = store(seenResource);
    const seen = await s.read();
    const refused = async () => {
      throw new ApiError(403, "Forbidden", "not permitted");
    };
    await expect(writeUnlessChanged(seen, s.read, definitionOf, refused)).rejects.toMatchObject({ status: 403 });
  });
});

describe("sameJSON", () => {
  it("ignores the order of keys and keeps the order of lists", () => {
    expect(sameJSON({ a: 1, b: { c: [1, 2], d: null } }, { b: { d: null, c: [1, 2] }, a: 1 })).toBe(true);
    expect(sameJSON({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(sameJSON({ a: 1 }, { a: 1, b: 2 })).toBe(false);
  });
});
