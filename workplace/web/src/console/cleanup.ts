// Rule 20: the cleanup composes unitary deletes in a fixed order (Runs, with the Tasks that own
// runs first, then Entries, Flows, Agents), goes on after a failure, keeps what failed selected
// and reports what was done; nothing is rolled back.

export type CleanupKind = "task" | "run" | "entry" | "flow" | "agent";

export const cleanupOrder: CleanupKind[] = ["task", "run", "entry", "flow", "agent"];

export interface CleanupItem {
  kind: CleanupKind;
  id: string;
  label: string;
  /** The ETag the list showed (Tasks and Runs); Management objects are read again for theirs. */
  version?: string;
  namespace?: string;
  /** A system-managed Direct Agent Flow, removed through the cleanup's system-Flow option. */
  systemManaged?: boolean;
}

export interface CleanupOutcome {
  item: CleanupItem;
  ok: boolean;
  error?: string;
}

export const keyOf = (i: Pick<CleanupItem, "kind" | "id">) => `${i.kind}:${i.id}`;

/** ordered sorts a selection into the order of the deletes. */
export function ordered(items: CleanupItem[]): CleanupItem[] {
  return [...items].sort((a, b) => cleanupOrder.indexOf(a.kind) - cleanupOrder.indexOf(b.kind) || a.label.localeCompare(b.label));
}

/** runCleanup deletes each item in order, one at a time, whatever happened to the previous ones. */
export async function runCleanup(items: CleanupItem[], remove: (i: CleanupItem) => Promise<void>, progress?: (o: CleanupOutcome) => void): Promise<CleanupOutcome[]> {
  const out: CleanupOutcome[] = [];
  for (const item of ordered(items)) {
    let outcome: CleanupOutcome;
    try {
      await remove(item);
      outcome = { item, ok: true };
    } catch (e) {
      outcome = { item, ok: false, error: (e as Error).message };
    }
    out.push(outcome);
    progress?.(outcome);
  }
  return out;
}

/** retained is what stays selected after a run: the failed items. */
export function retained(outcomes: CleanupOutcome[]): Set<string> {
  return new Set(outcomes.filter((o) => !o.ok).map((o) => keyOf(o.item)));
}

export function summary(outcomes: CleanupOutcome[]): string {
  const done = outcomes.filter((o) => o.ok).length;
  const failed = outcomes.length - done;
  if (failed === 0) return `Deleted all ${done} selected item${done === 1 ? "" : "s"}.`;
  if (done === 0) return `Nothing was deleted: ${failed} delete${failed === 1 ? "" : "s"} failed. The failed items stay selected.`;
  return `Partly done: deleted ${done} of ${outcomes.length}; ${failed} failed and stay selected. What was deleted stays deleted (nothing is rolled back).`;
}
