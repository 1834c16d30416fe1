import { describe, expect, it } from "vitest";
import { ApiError } from "../shared/api";
import {
  applyMove,
  changeSummary,
  coordinateErrors,
  groupByKind,
  headerFileName,
  importedSourceRequest,
  itemStatus,
  parseSelection,
  problemSentence,
  reasonSentence,
  removeLabel,
  selectionValue,
  showValue,
  sourceLabel,
  stateLabel,
  type Change,
  type ComposerItem,
  type ComposerPreview,
} from "./packs";

const allReasons = [
  "NotZip",
  "CompressedTooLarge",
  "TooManyFiles",
  "FileTooLarge",
  "ExpandedTooLarge",
  "AbsolutePath",
  "ParentTraversal",
  "Backslash",
  "DriveLetter",
  "DuplicatePath",
  "CaseCollidingPath",
  "Link",
  "UnlistedEntry",
  "MissingEntry",
  "MissingManifest",
  "InvalidManifest",
  "UnsupportedRequirements",
  "UnsupportedKind",
  "InvalidResource",
  "DuplicateResource",
  "UnknownBinding",
];

describe("a refused archive says why in words", () => {
  it("every typed reason has its own sentence, never the code", () => {
    const sentences = new Set<string>();
    for (const r of allReasons) {
      const s = reasonSentence(r);
      expect(s).not.toContain(r);
      expect(s).toMatch(/\.$/);
      sentences.add(s);
    }
    expect(sentences.size).toBe(allReasons.length);
  });

  it("names the archive path and field the refusal concerns", () => {
    expect(reasonSentence("ParentTraversal", "../evil.yaml")).toBe("A file in the archive reaches outside it with “..” (file ../evil.yaml).");
    expect(reasonSentence("InvalidResource", "agents/a.yaml", "definition.instructions", "must not be empty")).toBe(
      "A resource in the Pack is not valid (file agents/a.yaml, field definition.instructions). Must not be empty.",
    );
  });

  it("an unknown reason still reads as a sentence", () => {
    expect(reasonSentence("SomethingNew")).toBe("The archive is not a valid Pack.");
  });

  const problems: Record<string, { err: ApiError; want: string | RegExp }> = {
    "a 422 with a reason is its sentence": {
      err: new ApiError(422, "Unprocessable Entity", "the Pack archive is refused: Link agents/x.yaml", [], { reason: "Link", path: "agents/x.yaml" }),
      want: "The archive holds a link; Packs may hold only plain files (file agents/x.yaml).",
    },
    "the server's explanation after the code is kept, the code is not": {
      err: new ApiError(422, "Unprocessable Entity", "the Pack archive is refused: InvalidManifest pack.yaml metadata.version: not a semantic version", [], { reason: "InvalidManifest", path: "pack.yaml", field: "metadata.version" }),
      want: "pack.yaml is not a valid Pack manifest (file pack.yaml, field metadata.version). Not a semantic version.",
    },
    "a 413 says how large a Pack may be": { err: new ApiError(413, "Request Entity Too Large", ""), want: /8 MiB/ },
    "a 409 with conflicts counts them and says nothing changed": {
      err: new ApiError(409, "Conflict", "blocked", [], { changes: [{ kind: "Agent", name: "a", action: "conflict" }, { kind: "Flow", name: "f", action: "create" }] }),
      want: "Nothing was changed: one resource conflicts with what is in the workspace.",
    },
    "removing Entries that Dashboards show asks for the operator's word, in words": {
      err: new ApiError(409, "Conflict", "Entry say-hello is on Dashboard home: removing it needs removeDashboardReferences=true; nothing was changed", [], { reason: "DashboardReferences", changes: [] }),
      want: "Nothing was changed: Entry say-hello is on Dashboard home. Removing the Entry takes it off those Dashboards; confirm that to go on.",
    },
    "a 403 says the person may not": { err: new ApiError(403, "Forbidden", "forbidden"), want: /not permitted/ },
    "an unreachable API says so": { err: new ApiError(0, "API unavailable", ""), want: /cannot be reached/ },
  };
  for (const [name, tc] of Object.entries(problems)) {
    it(name, () => {
      const s = problemSentence(tc.err);
      if (typeof tc.want === "string") expect(s).toBe(tc.want);
      else expect(s).toMatch(tc.want);
      expect(s).not.toContain("{");
    });
  }
});

describe("an installed Pack's state in a person's words", () => {
  const cases: Record<string, { state: string; readiness?: string; want: string }> = {
    "installed and ready": { state: "installed", readiness: "ready", want: "Installed" },
    "installed with a required binding unsatisfied": { state: "installed", readiness: "needs configuration", want: "Needs configuration" },
    "installed with a missing requirement": { state: "installed", readiness: "missing requirement", want: "Missing requirement" },
    "rolled back": { state: "rolled back", readiness: "ready", want: "Rolled back" },
    degraded: { state: "degraded", want: "Degraded" },
    installing: { state: "installing", want: "Installing" },
  };
  for (const [name, tc] of Object.entries(cases)) it(name, () => expect(stateLabel(tc.state, tc.readiness)).toBe(tc.want));

  it("the plan is summed up by action", () => {
    const c = (action: Change["action"]): Change => ({ kind: "Agent", name: action, action });
    expect(changeSummary([c("create"), c("create"), c("update"), c("unchanged"), c("conflict")])).toBe("2 to create, 1 to update, 1 unchanged, 1 in conflict");
    expect(changeSummary([])).toBe("no resources");
  });

  it("a diff value shows absence and stays short", () => {
    expect(showValue(undefined)).toBe("(absent)");
    expect(showValue({ a: 1 })).toBe('{"a":1}');
    expect(showValue("x".repeat(300)).length).toBe(120);
  });
});

describe("binding selections and file names", () => {
  it("a selection survives the round trip through a <select>", () => {
    expect(parseSelection(selectionValue({ namespace: "default", name: "fast-model" }))).toEqual({ namespace: "default", name: "fast-model" });
    expect(parseSelection("")).toBeUndefined();
  });

  it("the file name header carries only printable ASCII and no directories", () => {
    expect(headerFileName("C:\\Users\\me\\Büro pack.zip")).toBe("B_ro pack.zip");
    expect(headerFileName("")).toBe("pack.zip");
  });
});

describe("the Composer's selection", () => {
  const item = (kind: string, name: string, extra: Partial<ComposerItem> = {}): ComposerItem => ({ key: `${kind}/${name}`, kind, name, selectable: true, role: "resource", ...extra });

  it("groups the inventory by kind in install-relevant order, names sorted", () => {
    const groups = groupByKind([item("Secret", "key", { role: "binding", selectable: false }), item("Agent", "b"), item("Entry", "e"), item("Agent", "a")]);
    expect(groups.map((g) => g.kind)).toEqual(["Entry", "Agent", "Secret"]);
    expect(groups[1].items.map((i) => i.name)).toEqual(["a", "b"]);
  });

  it("Keep promotes an automatic dependency; Leave as dependency drops a direct one; selecting twice changes nothing", () => {
    let s = applyMove([], { op: "select", key: "Entry/e" });
    s = applyMove(s, { op: "keep", key: "Agent/a" });
    expect(s).toEqual(["Entry/e", "Agent/a"]);
    expect(applyMove(s, { op: "select", key: "Agent/a" })).toEqual(s);
    expect(applyMove(s, { op: "unselect", key: "Agent/a" })).toEqual(["Entry/e"]);
  });

  it("the inventory shows a resource the closure brought in as automatic", () => {
    const closure: ComposerPreview = {
      resources: [
        { key: "Entry/e", kind: "Entry", name: "e", origin: "direct" },
        { key: "Agent/a", kind: "Agent", name: "a", origin: "automatic", requiredBy: ["Entry/e"] },
      ],
      bindings: [],
      issues: [],
    };
    expect(itemStatus(item("Entry", "e"), ["Entry/e"], closure)).toBe("selected");
    expect(itemStatus(item("Agent", "a"), ["Entry/e"], closure)).toBe("automatic");
    expect(itemStatus(item("Agent", "z"), ["Entry/e"], closure)).toBe("none");
  });

  it("removing a direct selection another one requires is labelled Leave as dependency", () => {
    expect(removeLabel({ key: "Agent/a", kind: "Agent", name: "a", origin: "direct", leaveAsDependency: true })).toBe("Leave as dependency");
    expect(removeLabel({ key: "Agent/a", kind: "Agent", name: "a", origin: "direct" })).toBe("Remove");
  });

  it("the coordinate follows the spec's name and semantic-version rules", () => {
    expect(coordinateErrors({ publisher: "acme", name: "reports", version: "1.0.0" })).toEqual({});
    const bad = coordinateErrors({ publisher: "Acme", name: "-x", version: "1.0" });
    expect(Object.keys(bad).sort()).toEqual(["name", "publisher", "version"]);
  });
});

describe("an imported Source version's Pack is previewed and installed by naming it", () => {
  it("sends the Source version as JSON to the same routes as a file, with the Dashboard authorization when given", () => {
    const ref = { sourceVersion: "acme-tools-1-0", publisher: "acme", source: "tools", version: "1.0" };
    expect(importedSourceRequest(ref, "preview")).toEqual({ path: "/api/packs/preview", options: { method: "POST", body: { source: { sourceVersion: "acme-tools-1-0", publisher: "acme", sourceName: "tools", version: "1.0" } } } });
    expect(importedSourceRequest(ref, "install", true).path).toBe("/api/packs?removeDashboardReferences=true");
  });
  it("an installed Pack names the registry it came from, an uploaded one its file", () => {
    expect(sourceLabel({ kind: "Registry", registry: "local", sourceVersion: "01a2" })).toBe("registry local");
    expect(sourceLabel({ kind: "Registry", registrationUid: "u-1" })).toBe("registry u-1");
    expect(sourceLabel({ kind: "Upload", fileName: "hello.zip" })).toBe("hello.zip");
    expect(sourceLabel(undefined)).toBe("");
  });
});
