// Package work is the Work plane's SQL store: WorkItems, the FlowRuns that execute them with
// their append-only event history, leases for executor workers, and the PendingActions a
// suspended run waits on. Every change of a run and its events is written in one transaction, so
// a process killed at any moment leaves the last persisted transition and nothing half-done.
package work
