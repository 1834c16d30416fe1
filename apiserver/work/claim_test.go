package work_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

// starts is a claimed run's first transition: it starts and completes.
var starts = work.Transition{State: work.StateCompleted, Events: []work.Event{{Type: work.EventRunStarted}, {Type: work.EventRunCompleted}}}

// readClaimable reads the run to claim and sets owner's lease on it, as a worker does.
func readClaimable(t *testing.T, w *work.Store, owner string, excludeRuns ...string) *work.FlowRun {
	t.Helper()
	run, err := w.Claimable(context.Background(), nil, excludeRuns)
	if err != nil {
		t.Fatal(err)
	}
	if run != nil {
		run.LeaseOwner, run.LeaseExpiresAt = owner, w.Clock().Add(time.Minute)
	}
	return run
}

// Two workers (of one replica or two) that read the same run claimable and race to take it with
// their first transitions: one takes it, the other writes nothing (ErrLeaseLost) and drops it.
func TestOfTwoWorkersRacingToTakeARunOneTakesItAndTheOtherWritesNothing(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		for round := range 10 {
			_, run, _ := submit(t, w)
			a, b := readClaimable(t, w, "replica-a"), readClaimable(t, w, "replica-b")
			g.Expect(a).NotTo(BeNil())
			g.Expect(b).NotTo(BeNil())
			g.Expect([]string{a.ID, b.ID}).To(Equal([]string{run.ID, run.ID}))
			var (
				wg   sync.WaitGroup
				errs [2]error
			)
			for i, held := range []*work.FlowRun{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = w.ClaimApplied(ctx, *held, held.LeaseOwner, starts)
				}()
			}
			wg.Wait()
			took := 0
			for _, err := range errs {
				if err == nil {
					took++
				} else {
					g.Expect(err).To(MatchError(work.ErrLeaseLost), "round %d", round)
				}
			}
			g.Expect(took).To(Equal(1), "round %d: one takes the run", round)
			g.Expect(eventTypes(t, w, run.ID)).To(Equal([]string{work.EventRunCreated, work.EventRunStarted, work.EventRunCompleted}),
				"round %d: the run started and completed once", round)
		}
	})
}

// A run read claimable is taken only while it is still claimable as read: one claimed, changed
// or leased meanwhile is not (ErrLeaseLost, nothing written); one never taken (its worker died
// before the commit) stays claimable; a run another worker of the process reads is left out.
func TestARunReadClaimableIsTakenOnlyWhileItIsStillClaimableAsRead(t *testing.T) {
	tests := map[string]struct {
		meanwhile func(g Gomega, w *work.Store, run work.FlowRun)
		events    []string
	}{
		"claimed by another worker": {
			meanwhile: func(g Gomega, w *work.Store, _ work.FlowRun) {
				claimed, err := w.Claim(context.Background(), "worker-old", time.Minute)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(claimed).NotTo(BeNil())
			},
			events: []string{work.EventRunCreated},
		},
		"paused": {
			meanwhile: func(g Gomega, w *work.Store, run work.FlowRun) {
				_, err := w.Pause(context.Background(), wsA.WorkspaceID, run.ID)
				g.Expect(err).NotTo(HaveOccurred())
			},
			events: []string{work.EventRunCreated, work.EventRunPaused},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
				g := NewWithT(t)
				w, _ := newStore(s)
				_, run, _ := submit(t, w)
				held := readClaimable(t, w, "worker-new")
				g.Expect(held).NotTo(BeNil())
				tt.meanwhile(g, w, run)
				_, err := w.ClaimApplied(context.Background(), *held, "worker-new", starts)
				g.Expect(err).To(MatchError(work.ErrLeaseLost))
				g.Expect(eventTypes(t, w, run.ID)).To(Equal(tt.events), "nothing of the late worker was written")
			})
		})
	}
	t.Run("never taken", func(t *testing.T) {
		storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
			g := NewWithT(t)
			w, _ := newStore(s)
			_, run, _ := submit(t, w)
			g.Expect(readClaimable(t, w, "worker-dead")).NotTo(BeNil())
			// The worker dies here; the next finds the run as it was, unless it is being read.
			g.Expect(readClaimable(t, w, "worker-next", run.ID)).To(BeNil(), "a run another worker of the process reads is left out")
			next := readClaimable(t, w, "worker-next")
			g.Expect(next).NotTo(BeNil())
			g.Expect(next.ID).To(Equal(run.ID))
			taken, err := w.ClaimApplied(context.Background(), *next, "worker-next", starts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(taken.State).To(Equal(work.StateCompleted))
			g.Expect(readClaimable(t, w, "worker-next")).To(BeNil())
		})
	})
}

// AnyRunnable tells whether a worker would find a FlowRun or a Runtime Run to claim in any
// workspace: the look an executor's workers skip while nothing became runnable since.
func TestAnyRunnableSeesTheRunsAWorkerWouldClaimInEveryWorkspace(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, clock := newStore(s)
		anyRunnable := func() bool {
			any, err := w.AnyRunnable(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			return any
		}
		g.Expect(anyRunnable()).To(BeFalse(), "an empty store has a runnable run")

		_, queued, _ := submit(t, w)
		g.Expect(anyRunnable()).To(BeTrue(), "a queued FlowRun is not runnable")
		claimed, err := w.Claim(ctx, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claimed.ID).To(Equal(queued.ID))
		g.Expect(anyRunnable()).To(BeFalse(), "a FlowRun a live lease holds is runnable")
		clock.Add(2 * time.Minute)
		g.Expect(anyRunnable()).To(BeTrue(), "a FlowRun whose lease expired is not runnable")
		_, err = w.ClaimApplied(ctx, *claimed, "worker-1", starts)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(anyRunnable()).To(BeFalse(), "a completed FlowRun is runnable")

		_, err = w.CreateRuntimeRun(ctx, work.RuntimeRun{Context: wsA, AgentName: "assistant",
			Messages: []work.Message{{Role: "user", Content: "hello"}}, Mode: "async"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(anyRunnable()).To(BeTrue(), "a pending Runtime Run is not runnable")
		r, err := w.ClaimRuntimeRun(ctx, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r).NotTo(BeNil())
		g.Expect(anyRunnable()).To(BeFalse(), "a Runtime Run a live lease holds is runnable")
	})
}
