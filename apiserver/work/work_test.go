package work_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newStore(s *store.Store) (*work.Store, *clock) {
	c := &clock{now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	w := work.New(s)
	w.Clock = c.Now
	return w, c
}

var wsA = work.Context{TenantID: "t1", WorkspaceID: "ws-a", Namespace: "a", PrincipalID: "p1"}

func submit(t *testing.T, w *work.Store) (work.WorkItem, work.FlowRun, string) {
	t.Helper()
	item, run, token, err := w.Submit(context.Background(), work.Submission{Context: wsA, Type: "report", Title: "Quarterly",
		Instruction: "Prepare it", FlowName: "report", FlowVersion: "1.0.0", Input: map[string]any{"instruction": "Prepare it"}})
	if err != nil {
		t.Fatal(err)
	}
	return item, run, token
}

func ptr[T any](v T) *T { return &v }

// suspend claims the run and suspends it on a choice, as a worker would.
func suspend(t *testing.T, w *work.Store, runID string) work.PendingAction {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	claimed, err := w.Claim(ctx, "worker-1", time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed).NotTo(BeNil())
	g.Expect(claimed.ID).To(Equal(runID))
	_, err = w.Apply(ctx, runID, "worker-1", work.Transition{State: work.StateRunning, Suspend: &work.Suspension{
		Step: "choose", Kind: work.KindChoice, Prompt: "Which level?", Continuation: "check",
		Options: []work.Option{{Value: "brief"}, {Value: "detailed"}}, TTL: time.Hour}})
	g.Expect(err).NotTo(HaveOccurred())
	action, err := w.OpenPendingAction(ctx, runID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(action).NotTo(BeNil())
	return *action
}

func TestSubmitCreatesAPendingRunWithItsFirstEvent(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w, _ := newStore(s)
		item, run, token := submit(t, w)
		g.Expect(token).To(HavePrefix("prt_"))
		g.Expect(item.FlowRunID).To(Equal(run.ID))
		read, err := w.WorkItem(context.Background(), wsA.WorkspaceID, item.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(read.Status).To(Equal(work.StatePending))
		_, err = w.WorkItem(context.Background(), "ws-b", item.ID)
		g.Expect(err).To(MatchError(work.ErrNotFound))
		_, err = w.Run(context.Background(), "ws-b", run.ID)
		g.Expect(err).To(MatchError(work.ErrNotFound))
		events, err := w.Events(context.Background(), run.ID, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(HaveLen(1))
		g.Expect(events[0].Type).To(Equal(work.EventRunCreated))

		var stored int
		g.Expect(s.DB().QueryRow(s.Rebind(`SELECT COUNT(*) FROM flow_runs WHERE resume_token_hash = ?`), token).Scan(&stored)).To(Succeed())
		g.Expect(stored).To(BeZero(), "the raw resume token is never stored")
	})
}

func TestEventsAppendedTogetherAreNumberedInTheirOrderAfterTheRunsLast(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		item, run, _ := submit(t, w)
		_, err := w.Claim(ctx, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{State: work.StateRunning, Events: []work.Event{
			{Type: work.EventRunStarted},
			{Type: work.EventStepStarted, Step: "draft", Attempt: 2, RuntimeExecutionID: "exec-1"},
			{Type: work.EventStepCompleted, Step: "draft", Attempt: 2, State: work.StatePending, Reason: "it's done; 'quoted'"},
		}})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{State: work.StateCompleted, Result: []byte(`{"ok":true}`),
			Events: []work.Event{{Type: work.EventRunCompleted}}})
		g.Expect(err).NotTo(HaveOccurred())

		events, err := w.Events(ctx, run.ID, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(HaveLen(5))
		for i, e := range events {
			g.Expect(e.Seq).To(Equal(int64(i+1)), "numbered in order, none missing")
			g.Expect(e.WorkTaskID).To(Equal(item.WorkTaskID), "correlation copied from the run")
			g.Expect(e.WorkExecutionID).To(Equal(item.ID))
		}
		g.Expect([]string{events[0].Type, events[1].Type, events[2].Type, events[3].Type, events[4].Type}).To(Equal([]string{
			work.EventRunCreated, work.EventRunStarted, work.EventStepStarted, work.EventStepCompleted, work.EventRunCompleted}))
		g.Expect(events[1].State).To(Equal(work.StateRunning), "an event without a state takes the run's")
		g.Expect(events[2]).To(And(
			HaveField("Step", "draft"), HaveField("Attempt", 2), HaveField("RuntimeExecutionID", "exec-1"), HaveField("State", work.StateRunning)))
		g.Expect(events[3]).To(And(HaveField("State", work.StatePending), HaveField("Reason", "it's done; 'quoted'")))
		g.Expect(events[4].State).To(Equal(work.StateCompleted))

		later, err := w.Events(ctx, run.ID, 3)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(later).To(HaveLen(2))
		g.Expect(later[0].Seq).To(Equal(int64(4)))
	})
}

func TestClaimLeasesARunnableRunToOneWorkerUntilTheLeaseExpires(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, c := newStore(s)
		_, run, _ := submit(t, w)
		first, err := w.Claim(ctx, "worker-1", 10*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(first.ID).To(Equal(run.ID))
		g.Expect(first.LeaseOwner).To(Equal("worker-1"), "the run is returned as leased")
		g.Expect(first.LeaseExpiresAt).To(BeTemporally("~", c.Now().Add(10*time.Second), time.Millisecond))
		second, err := w.Claim(ctx, "worker-2", 10*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(second).To(BeNil(), "a leased run is not claimed twice")

		c.Add(11 * time.Second)
		second, err = w.Claim(ctx, "worker-2", 10*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(second).NotTo(BeNil(), "the run of a worker that died is claimed again")

		_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{State: work.StateRunning})
		g.Expect(err).To(MatchError(work.ErrLeaseLost), "the worker that lost its lease cannot persist a transition")
		renewed, err := w.RenewLease(ctx, run.ID, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(renewed).To(BeFalse())
		_, err = w.Apply(ctx, run.ID, "worker-2", work.Transition{State: work.StateRunning, Events: []work.Event{{Type: work.EventRunStarted}}})
		g.Expect(err).NotTo(HaveOccurred())
	})
}

func TestRespondCompletesTheActionOnceAndResumesTheRunAtItsContinuation(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		item, run, token := submit(t, w)
		action := suspend(t, w, run.ID)
		g.Expect(action.Kind).To(Equal(work.KindChoice))
		g.Expect(action.ContinuationStep).To(Equal("check"))
		read, _ := w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(read.State).To(Equal(work.StateActionRequired))
		g.Expect(read.LeaseOwner).To(BeEmpty(), "a suspended run holds no lease")
		wi, _ := w.WorkItem(ctx, wsA.WorkspaceID, item.ID)
		g.Expect(wi.Status).To(Equal(work.StateActionRequired))

		answer := func(workspace, runID, actionID, tok string, value string) error {
			_, _, _, err := w.Respond(ctx, work.Response{WorkspaceID: workspace, RunID: runID, ActionID: actionID, Token: tok,
				PrincipalID: "p2", Answer: work.Answer{Value: ptr(value)}})
			return err
		}
		g.Expect(answer("ws-b", run.ID, action.ID, token, "brief")).To(MatchError(work.ErrNotFound), "another workspace")
		g.Expect(answer(wsA.WorkspaceID, run.ID, "nope", token, "brief")).To(MatchError(work.ErrNotFound), "another action")
		g.Expect(answer(wsA.WorkspaceID, run.ID, action.ID, token+"x", "brief")).To(MatchError(work.ErrInvalidToken))
		g.Expect(answer(wsA.WorkspaceID, run.ID, action.ID, token, "huge")).To(MatchError(work.ErrInvalidInput))

		done, resumed, next, err := w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID,
			Token: token, PrincipalID: "p2", Answer: work.Answer{Value: ptr("detailed")}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done.Status).To(Equal(work.ActionCompleted))
		g.Expect(done.AnsweredBy).To(Equal("p2"), "the person who answered is recorded")
		g.Expect(string(done.Answer)).To(Equal(`"detailed"`))
		g.Expect(resumed.State).To(Equal(work.StateRunning))
		g.Expect(resumed.CurrentStep).To(Equal("check"))
		g.Expect(next).NotTo(Equal(token))
		data, err := resumed.DecodeData()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(data.Steps["choose"]).To(HaveKeyWithValue("answer", "detailed"))

		g.Expect(answer(wsA.WorkspaceID, run.ID, action.ID, token, "detailed")).To(MatchError(work.ErrConflict), "a token is single-use")
		open, err := w.OpenPendingAction(ctx, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(open).To(BeNil())
	})
}

func TestAnExpiredActionAnswersConflictAndFailsItsRun(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, c := newStore(s)
		_, run, token := submit(t, w)
		action := suspend(t, w, run.ID)
		c.Add(time.Hour)
		_, _, _, err := w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID,
			Token: token, PrincipalID: "p1", Answer: work.Answer{Value: ptr("brief")}})
		g.Expect(err).To(MatchError(work.ErrConflict))
		g.Expect(err.Error()).To(ContainSubstring("expired"))

		n, err := w.ExpirePendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(1))
		failed, _ := w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(failed.State).To(Equal(work.StateFailed))
		g.Expect(failed.Reason).To(ContainSubstring("expired"))
		actions, _ := w.PendingActions(ctx, run.ID)
		g.Expect(actions[0].Status).To(Equal(work.ActionExpired))
	})
}

func TestPauseResumeAndCancelFollowTheRunStates(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		_, run, token := submit(t, w)
		action := suspend(t, w, run.ID)

		paused, err := w.Pause(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(paused.State).To(Equal(work.StatePaused))
		_, err = w.Pause(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).To(MatchError(work.ErrConflict))

		// An answer while paused is kept; the run continues only when resumed.
		_, stillPaused, _, err := w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID,
			Token: token, PrincipalID: "p1", Answer: work.Answer{Value: ptr("brief")}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stillPaused.State).To(Equal(work.StatePaused))
		claimed, err := w.Claim(ctx, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claimed).To(BeNil(), "a paused run is not runnable")

		resumed, err := w.Resume(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resumed.State).To(Equal(work.StateRunning))
		_, err = w.Resume(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).To(MatchError(work.ErrConflict))

		cancelled, err := w.Cancel(ctx, wsA.WorkspaceID, run.ID, "no longer needed")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cancelled.State).To(Equal(work.StateCancelled))
		_, err = w.Cancel(ctx, wsA.WorkspaceID, run.ID, "")
		g.Expect(err).To(MatchError(work.ErrConflict))
		_, err = w.Pause(ctx, "ws-b", run.ID)
		g.Expect(err).To(MatchError(work.ErrNotFound))
	})
}

func TestDeleteNeedsATerminalRunAtItsCurrentVersionAndRemovesItsHistory(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		_, run, _ := submit(t, w)
		suspend(t, w, run.ID)
		current, _ := w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(w.Delete(ctx, wsA.WorkspaceID, run.ID, current.Version)).To(MatchError(work.ErrConflict))
		cancelled, err := w.Cancel(ctx, wsA.WorkspaceID, run.ID, "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(w.Delete(ctx, wsA.WorkspaceID, run.ID, current.Version)).To(MatchError(work.ErrStale))
		g.Expect(w.Delete(ctx, "ws-b", run.ID, cancelled.Version)).To(MatchError(work.ErrNotFound))
		g.Expect(w.Delete(ctx, wsA.WorkspaceID, run.ID, cancelled.Version)).To(Succeed())
		_, err = w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).To(MatchError(work.ErrNotFound))
		for _, table := range []string{"flow_run_events", "pending_actions"} {
			var n int
			g.Expect(s.DB().QueryRow(s.Rebind(`SELECT COUNT(*) FROM `+table+` WHERE run_id = ?`), run.ID).Scan(&n)).To(Succeed())
			g.Expect(n).To(BeZero(), table)
		}
	})
}

func TestRunEventsAreAppendOnly(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w, _ := newStore(s)
		_, run, _ := submit(t, w)
		_, err := s.DB().Exec(s.Rebind(`UPDATE flow_run_events SET reason = 'x' WHERE run_id = ?`), run.ID)
		g.Expect(err).To(HaveOccurred())
		g.Expect(strings.ToLower(err.Error())).To(ContainSubstring("append-only"))
	})
}

// A run's transition does not wait for a transaction that only refers to the run, as a child
// run being submitted under it does (PostgreSQL's foreign-key check holds a key-share lock on the
// parent until that transaction ends).
func TestATransitionDoesNotWaitForATransactionReferringToItsRun(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		if s.Dialect() != store.Postgres {
			t.Skip("SQLite transactions are exclusive: one never runs beside another")
		}
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		_, parent, _ := submit(t, w)
		claimed, err := w.Claim(ctx, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claimed.ID).To(Equal(parent.ID))

		child, err := s.DB().BeginTx(ctx, nil)
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = child.Rollback() }()
		_, _, _, err = w.SubmitTx(ctx, child, work.Submission{Context: wsA, Type: "report", Title: "Part", Instruction: "Prepare a part",
			FlowName: "report", FlowVersion: "1.0.0", ParentFlowRunID: parent.ID, Input: map[string]any{}})
		g.Expect(err).NotTo(HaveOccurred())

		applyCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err = w.Apply(applyCtx, parent.ID, "worker-1", work.Transition{State: work.StateRunning, Events: []work.Event{{Type: work.EventRunStarted}}})
		g.Expect(err).NotTo(HaveOccurred(), "the transition waited for the child's submission")
		g.Expect(child.Commit()).To(Succeed())
	})
}

// A worker's transition written against the run as it holds it (ApplyHeld) persists only while
// nobody changed the run: after a takeover or a pause it is refused as a lost lease, and a lease
// renewed meanwhile keeps its new expiry.
func TestATransitionOfTheHeldRunIsRefusedOnceTheRunChangedUnderIt(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, c := newStore(s)
		_, run, _ := submit(t, w)
		held, err := w.Claim(ctx, "worker-1", 10*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		renewed, err := w.RenewLease(ctx, run.ID, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(renewed).To(BeTrue())
		next, err := w.ApplyHeld(ctx, *held, "worker-1", work.Transition{State: work.StateRunning, Events: []work.Event{{Type: work.EventRunStarted}}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(next.State).To(Equal(work.StateRunning))
		stored, err := w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Version).To(Equal(next.Version))
		g.Expect(stored.LeaseExpiresAt).To(BeTemporally("~", c.Now().Add(time.Minute), time.Millisecond), "the renewal is kept")

		_, err = w.ApplyHeld(ctx, *held, "worker-1", work.Transition{Attempt: 2})
		g.Expect(err).To(MatchError(work.ErrLeaseLost), "a stale copy of the run is refused")

		c.Add(2 * time.Minute)
		taken, err := w.Claim(ctx, "worker-2", 10*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(taken).NotTo(BeNil())
		_, err = w.ApplyHeld(ctx, next, "worker-1", work.Transition{Attempt: 2})
		g.Expect(err).To(MatchError(work.ErrLeaseLost), "the worker whose run was taken over cannot persist a transition")

		_, err = w.Pause(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = w.ApplyHeld(ctx, *taken, "worker-2", work.Transition{Attempt: 2})
		g.Expect(err).To(MatchError(work.ErrLeaseLost), "a paused run is not changed by its worker")
		stored, err = w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.State).To(Equal(work.StatePaused))
		g.Expect(stored.Attempt).To(Equal(1))
	})
}

// A response given a lease resumes the run leased to that worker of the answering process, which
// goes on with it at once: no other worker may claim it meanwhile, and the token the response
// returns answers the run's next question.
func TestAResponseGivenALeaseResumesTheRunHeldByThatWorker(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, clock := newStore(s)
		_, run, token := submit(t, w)
		action := suspend(t, w, run.ID)
		_, resumed, next, err := w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID,
			Token: token, PrincipalID: "p2", Answer: work.Answer{Value: ptr("brief")},
			Lease: &work.Lease{Owner: "reserved-1", Until: clock.Now().Add(time.Minute)}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resumed.LeaseOwner).To(Equal("reserved-1"))
		claimed, err := w.Claim(ctx, "worker-2", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claimed).To(BeNil(), "the resumed run is held by the answering process's worker")

		_, err = w.ApplyHeld(ctx, resumed, "reserved-1", work.Transition{Suspend: &work.Suspension{Step: "confirm", Kind: work.KindConfirmation,
			Prompt: "Publish?", Continuation: "out", TTL: time.Hour}})
		g.Expect(err).NotTo(HaveOccurred())
		second, err := w.OpenPendingAction(ctx, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		_, _, _, err = w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: second.ID, Token: token,
			PrincipalID: "p2", Answer: work.Answer{Confirmed: ptr(true)}})
		g.Expect(err).To(MatchError(work.ErrInvalidToken), "the answered question's token")
		_, _, _, err = w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: second.ID, Token: next,
			PrincipalID: "p2", Answer: work.Answer{Confirmed: ptr(true)}})
		g.Expect(err).NotTo(HaveOccurred(), "the token the response returned")
	})
}
