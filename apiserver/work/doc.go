// Package work is the Work plane's SQL store: WorkItems, the FlowRuns that execute them with
// their append-only event history, leases for executor workers, and the PendingActions a
// suspended run waits on. Every change of a run and its events is written in one transaction, so
// a process killed at any moment leaves the last persisted transition and nothing half-done.
//
// A WorkItem of a one-Agent-step Flow takes at most three commits, each for a promise:
//
//   - the submission (WorkItem, FlowRun leased to a worker of this process, first event, the
//     Task and their outbox rows): acknowledged work survives a crash;
//   - the pin and the Agent step's start, right before the agent's call leaves the process:
//     after a crash the step runs again under the same idempotency key (StepRestarted), never
//     as a second, unrelated call. An agent answered in the process (the offline model) makes
//     no call a crash could repeat: its step's start commits with its outcome (a crash before
//     that commit leaves the run where it was, and the next worker computes the same answer);
//   - the step's outcome with the run's end, its Task result and notification: what the agent
//     answered is never lost once the client is told the run completed.
//
// Steps that act only on the persisted data (Input, Condition, Router, Output) add no commit:
// their transitions are written with the next one. On SQLite concurrent transactions share a
// commit (store.GroupInTx); every change and its outbox rows are still in one transaction.
package work
