import { describe, expect, it } from "vitest";
import { flowGraph, layoutGraph } from "./graph";

describe("the Flow graph drawing", () => {
  it("places each step after the steps that lead to it, branches in one column", () => {
    const { nodes, edges } = layoutGraph(
      [{ name: "in", label: "in" }, { name: "route", label: "route" }, { name: "a", label: "a" }, { name: "b", label: "b" }, { name: "out", label: "out" }],
      [{ from: "in", to: "route" }, { from: "route", to: "a" }, { from: "route", to: "b" }, { from: "a", to: "out" }, { from: "b", to: "out" }],
    );
    const layer = Object.fromEntries(nodes.map((n) => [n.name, n.layer]));
    expect(layer).toEqual({ in: 0, route: 1, a: 2, b: 2, out: 3 });
    const a = nodes.find((n) => n.name === "a")!;
    const b = nodes.find((n) => n.name === "b")!;
    expect(a.x).toBe(b.x);
    expect(a.y).not.toBe(b.y);
    expect(edges).toHaveLength(5);
  });
  it("survives a cycle and ignores edges to unknown steps", () => {
    const { nodes, edges } = layoutGraph([{ name: "x", label: "x" }, { name: "y", label: "y" }], [{ from: "x", to: "y" }, { from: "y", to: "x" }, { from: "x", to: "nowhere" }]);
    expect(nodes).toHaveLength(2);
    expect(edges).toHaveLength(2);
  });
  it("draws a Direct Flow as input, agent, output, and an Orchestration from its steps with their display names", () => {
    expect(flowGraph({ definition: { flowKind: "Direct", target: { kind: "Agent", id: "writer" } } }).steps.map((s) => s.label)).toEqual(["input", "agent: writer", "output"]);
    const g = flowGraph({ definition: { steps: [{ name: "request", type: "Input" }, { name: "outline", type: "Agent", displayName: "Planning" }], edges: [{ from: "request", to: "outline" }] } });
    expect(g.steps.map((s) => s.label)).toEqual(["request", "Planning"]);
    expect(g.edges).toEqual([{ from: "request", to: "outline" }]);
  });
});
