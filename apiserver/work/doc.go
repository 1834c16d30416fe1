// Package work is the Work plane's SQL store: WorkItems, the FlowRuns that execute them with
// their append-only event history, leases for executor workers, and the PendingActions a
// suspended run waits on. Every change of a run and its events is written in one transaction, so
// a process killed at any moment leaves the last persisted transition and nothing half-done.
//
// The commits of a WorkItem, each for a promise:
//
//   - acknowledged work survives a crash: the submission commits before the client is told
//     (202). Submitted with a free worker of the process (Reservation.Submit), it commits with
//     the run's first transition (SubmitApplied): nothing of it exists before, so a crash before
//     that commit loses only work nobody was told about; what the submission belongs to (the
//     conversation an Entry opens, Submission.Prelude) is written first in that transaction, so
//     neither exists without the other. An answer, likewise, is acknowledged
//     only after its commit; given to a free worker of the process (Reservation.Respond), it
//     commits with the resumed run's first transition (RespondApplied), conditional on the run
//     and the action being as read, so a crash before that commit leaves the question open and
//     an expiry or another answer that came between resolves it once;
//   - no step repeats: an Agent step's start commits right before its call leaves the process,
//     so that after a crash the step runs again under the same idempotency key
//     (StepRestarted), never as a second, unrelated call. An agent answered in the process (the
//     offline model) makes no call a crash could repeat: its start commits with its outcome, as a
//     pure step's does; a crash before that commit leaves the run where it was, and the next
//     worker computes the same answer. A claim's lease needs no commit of its own: a worker
//     reads a runnable run (Claimable) and takes it with its first transition (ClaimApplied),
//     conditional on the run being as read and nobody's lease live, so a crash before that
//     commit leaves it claimable and of two workers that read it one takes it;
//   - what the agent answered is never lost once the client is told the run completed: the
//     outcome commits with the run's end, its Task result and notification;
//   - every change is in the outbox in its transaction: the Observer's rows (Task, activities,
//     notifications, outbox events) are written in the transaction of the change they tell.
//
// So a WorkItem of a one-Agent-step Flow on the offline model is submitted, run and completed in
// one commit; with a model endpoint it takes two (the submission with the step's start, then
// the outcome); an answer to a question and the resumed run's end take one on the offline model
// and two with a model endpoint (the answer with the step's start, then the outcome).
//
// Steps that act only on the persisted data (Input, Condition, Router, Output) add no commit:
// their transitions are written with the next one. On SQLite concurrent transactions share a
// commit (store.GroupInTx); every change and its outbox rows are still in one transaction.
package work
