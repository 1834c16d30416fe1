// A layered drawing of a Flow graph: each step in the column of its longest path from an entry
// step, steps of a column stacked, so that the edges run left to right.

export interface GraphStep {
  name: string;
  label: string;
  type?: string;
}

export interface GraphEdge {
  from: string;
  to: string;
}

export interface PlacedNode extends GraphStep {
  x: number;
  y: number;
  layer: number;
}

export interface Layout {
  nodes: PlacedNode[];
  edges: { from: PlacedNode; to: PlacedNode }[];
  width: number;
  height: number;
}

export const NODE_W = 150;
export const NODE_H = 44;
const GAP_X = 50;
const GAP_Y = 20;

/** flowGraph reads the steps and edges of a Flow version's snapshot; a Direct Flow is input -> agent -> output. */
export function flowGraph(snapshot: unknown, eventSteps: string[] = []): { steps: GraphStep[]; edges: GraphEdge[] } {
  const def = (snapshot as { definition?: { steps?: { name: string; type?: string; displayName?: string }[]; edges?: GraphEdge[]; flowKind?: string; target?: { id?: string } } })?.definition;
  if (def?.steps?.length) {
    const steps = def.steps.map((s) => ({ name: s.name, label: s.displayName || s.name, type: s.type }));
    let edges = def.edges ?? [];
    if (edges.length === 0) edges = steps.slice(1).map((s, i) => ({ from: steps[i].name, to: s.name }));
    return { steps, edges };
  }
  // A Direct Flow runs its fixed steps; a step the run reported beyond them is drawn after them.
  const names = [...new Set(["input", "agent", "output", ...eventSteps])];
  const steps = names.map((n) => ({ name: n, label: n === "agent" && def?.target?.id ? `agent: ${def.target.id}` : n }));
  return { steps, edges: steps.slice(1).map((s, i) => ({ from: steps[i].name, to: s.name })) };
}

export function layoutGraph(steps: GraphStep[], edges: GraphEdge[]): Layout {
  const known = new Set(steps.map((s) => s.name));
  const valid = edges.filter((e) => known.has(e.from) && known.has(e.to) && e.from !== e.to);
  const layer = new Map<string, number>(steps.map((s) => [s.name, 0]));
  // Longest path, bounded by the number of steps so that a cycle cannot loop forever.
  for (let round = 0; round < steps.length; round++) {
    let changed = false;
    for (const e of valid) {
      const next = layer.get(e.from)! + 1;
      if (next > layer.get(e.to)! && next < steps.length) {
        layer.set(e.to, next);
        changed = true;
      }
    }
    if (!changed) break;
  }
  const rows = new Map<number, number>();
  const nodes: PlacedNode[] = steps.map((s) => {
    const l = layer.get(s.name)!;
    const row = rows.get(l) ?? 0;
    rows.set(l, row + 1);
    return { ...s, layer: l, x: 10 + l * (NODE_W + GAP_X), y: 10 + row * (NODE_H + GAP_Y) };
  });
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const layers = Math.max(...nodes.map((n) => n.layer), 0) + 1;
  const maxRows = Math.max(...rows.values(), 1);
  return {
    nodes,
    edges: valid.map((e) => ({ from: byName.get(e.from)!, to: byName.get(e.to)! })),
    width: 20 + layers * NODE_W + (layers - 1) * GAP_X,
    height: 20 + maxRows * NODE_H + (maxRows - 1) * GAP_Y,
  };
}
