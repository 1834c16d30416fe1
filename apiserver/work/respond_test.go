package work_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

// choiceQuestion is a question of step "choose" that the run resumes at once answered.
func choiceQuestion(onExpiry string) work.Suspension {
	return work.Suspension{Step: "choose", Kind: work.KindChoice, Prompt: "Which?", Continuation: "choose",
		Options: []work.Option{{Value: "brief"}, {Value: "detailed"}}, TTL: time.Minute, OnExpiry: onExpiry}
}

// resumedLease is the lease of the worker an answer resumes its run on.
func resumedLease(w *work.Store) *work.Lease {
	return &work.Lease{Owner: "worker-2", Until: w.Clock().Add(time.Minute)}
}

// completes is the resumed run's first transition: the answered step completes the run.
var completes = work.Transition{State: work.StateCompleted, Result: json.RawMessage(`{"level":"detailed"}`),
	Events: []work.Event{{Type: work.EventStepCompleted, Step: "choose"}, {Type: work.EventRunCompleted, Step: "choose", State: work.StateCompleted}}}

// resolutions counts the events that resolve a question of the run.
func resolutions(t *testing.T, w *work.Store, runID string) int {
	n := 0
	for _, e := range eventTypes(t, w, runID) {
		if e == work.EventPendingActionResolved || e == work.EventPendingActionExpired {
			n++
		}
	}
	return n
}

// An answer prepared ahead of its write (the worker resumes the run in the process meanwhile) is
// written with the resumed run's first transition in one commit: the action answered, the run as
// the transition left it, its WorkItem with it, the answer's events then the run's.
func TestAnAnswerWrittenWithTheResumedRunsFirstTransitionCommitsBothAtOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		item, run, token := submit(t, w)
		action := ask(t, w, run.ID, choiceQuestion(""))
		r := work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token, PrincipalID: "p1",
			Answer: work.Answer{Value: ptr("detailed")}, Lease: resumedLease(w)}
		p, ok, err := w.PrepareResponse(ctx, r)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue())
		g.Expect(p.Run.State).To(Equal(work.StateRunning))
		g.Expect(p.Run.LeaseOwner).To(Equal("worker-2"))
		before := s.Counts()
		answered, after, err := w.RespondApplied(ctx, p, "worker-2", completes)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.Counts().Sub(before).Commits).To(BeNumerically("==", 1))
		g.Expect(answered.Status).To(Equal(work.ActionCompleted))
		g.Expect(after.State).To(Equal(work.StateCompleted))
		g.Expect(after.LeaseOwner).To(BeEmpty(), "a settled run keeps no lease")

		stored, err := w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.State).To(Equal(work.StateCompleted))
		g.Expect(stored.Version).To(Equal(after.Version))
		wi, err := w.WorkItem(ctx, wsA.WorkspaceID, item.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(wi.Status).To(Equal(work.StateCompleted))
		actions, _ := w.PendingActions(ctx, run.ID)
		g.Expect(actions[0].Status).To(Equal(work.ActionCompleted))
		g.Expect(actions[0].AnsweredBy).To(Equal("p1"))
		events, err := w.Events(ctx, run.ID, 0)
		g.Expect(err).NotTo(HaveOccurred())
		var told []string
		for _, e := range events[len(events)-4:] {
			told = append(told, e.Type+"/"+e.State)
		}
		g.Expect(told).To(Equal([]string{work.EventPendingActionResolved + "/Running", work.EventRunResumed + "/Running",
			work.EventStepCompleted + "/Completed", work.EventRunCompleted + "/Completed"}), "each event says the state its own change left")

		// The answer's token is spent; the fresh one answers the run's next question.
		_, _, _, err = w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token,
			PrincipalID: "p1", Answer: work.Answer{Value: ptr("brief")}})
		g.Expect(err).To(HaveOccurred())
		g.Expect(resolutions(t, w, run.ID)).To(Equal(1))
	})
}

// An answer prepared ahead is written only while its action and run are as it read them: what
// changed either meanwhile (another answer, the expiry, the escalation, a reissued token, a pause)
// wins, and the prepared answer writes nothing (ErrStale), so the question is resolved once.
func TestAnAnswerPreparedAheadIsWrittenOnlyWhileItsActionAndRunAreUnchanged(t *testing.T) {
	tests := map[string]struct {
		onExpiry  string
		meanwhile func(g Gomega, w *work.Store, c *clock, run work.FlowRun, action work.PendingAction, token string)
		// state is the run's state after; open whether its action is still open.
		state string
		open  bool
	}{
		"another answer committed first": {
			meanwhile: func(g Gomega, w *work.Store, _ *clock, run work.FlowRun, action work.PendingAction, token string) {
				_, _, _, err := w.Respond(context.Background(), work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID,
					Token: token, PrincipalID: "p2", Answer: work.Answer{Value: ptr("brief")}})
				g.Expect(err).NotTo(HaveOccurred())
			},
			state: work.StateRunning,
		},
		"the question expired": {
			meanwhile: func(g Gomega, w *work.Store, c *clock, _ work.FlowRun, _ work.PendingAction, _ string) {
				c.Add(time.Minute)
				n, err := w.ExpirePendingActions(context.Background())
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(n).To(Equal(1))
			},
			state: work.StateFailed,
		},
		"the question was escalated": {
			onExpiry: work.FallbackEscalate,
			meanwhile: func(g Gomega, w *work.Store, c *clock, _ work.FlowRun, _ work.PendingAction, _ string) {
				c.Add(time.Minute)
				n, err := w.ExpirePendingActions(context.Background())
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(n).To(Equal(1))
				c.Add(-time.Minute) // the answer's lease is still live
			},
			state: work.StateActionRequired, open: true,
		},
		"a fresh token was reissued": {
			meanwhile: func(g Gomega, w *work.Store, _ *clock, run work.FlowRun, action work.PendingAction, _ string) {
				_, _, err := w.ReissueResumeToken(context.Background(), work.Reissue{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID})
				g.Expect(err).NotTo(HaveOccurred())
			},
			state: work.StateActionRequired, open: true,
		},
		"the run was paused": {
			meanwhile: func(g Gomega, w *work.Store, _ *clock, run work.FlowRun, _ work.PendingAction, _ string) {
				_, err := w.Pause(context.Background(), wsA.WorkspaceID, run.ID)
				g.Expect(err).NotTo(HaveOccurred())
			},
			state: work.StatePaused, open: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
				g := NewWithT(t)
				ctx := context.Background()
				w, c := newStore(s)
				_, run, token := submit(t, w)
				action := ask(t, w, run.ID, choiceQuestion(tt.onExpiry))
				p, ok, err := w.PrepareResponse(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token,
					PrincipalID: "p1", Answer: work.Answer{Value: ptr("detailed")}, Lease: resumedLease(w)})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(ok).To(BeTrue())
				tt.meanwhile(g, w, c, run, action, token)
				before := eventTypes(t, w, run.ID)

				_, _, err = w.RespondApplied(ctx, p, "worker-2", completes)
				g.Expect(err).To(MatchError(work.ErrStale))
				g.Expect(eventTypes(t, w, run.ID)).To(Equal(before), "the prepared answer wrote nothing")
				after, err := w.Run(ctx, wsA.WorkspaceID, run.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(after.State).To(Equal(tt.state))
				actions, _ := w.PendingActions(ctx, run.ID)
				g.Expect(actions).To(HaveLen(1))
				g.Expect(actions[0].Status == work.ActionCreated).To(Equal(tt.open))
				if !tt.open {
					g.Expect(resolutions(t, w, run.ID)).To(Equal(1))
				}
			})
		})
	}
}

// A process that dies between preparing an answer (and running the resumed run in memory) and
// writing it leaves nothing of it: the question is still open, the run waits on it, and the
// answer given again resolves it once.
func TestAnAnswerNeverWrittenLeavesTheQuestionOpenForTheNextAnswer(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		_, run, token := submit(t, w)
		action := ask(t, w, run.ID, choiceQuestion(""))
		r := work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token, PrincipalID: "p1",
			Answer: work.Answer{Value: ptr("detailed")}, Lease: resumedLease(w)}
		_, ok, err := w.PrepareResponse(ctx, r)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue())
		// The process dies here.
		waiting, err := w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(waiting.State).To(Equal(work.StateActionRequired))
		g.Expect(waiting.LeaseOwner).To(BeEmpty())
		open, err := w.OpenPendingAction(ctx, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(open).NotTo(BeNil())

		p, ok, err := w.PrepareResponse(ctx, r)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue())
		_, done, err := w.RespondApplied(ctx, p, "worker-2", completes)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done.State).To(Equal(work.StateCompleted))
		g.Expect(resolutions(t, w, run.ID)).To(Equal(1))
	})
}

// What an answer prepared ahead is refused for is what Respond refuses (a wrong token, an
// answer that does not fit); what only Respond can decide (who may answer an escalated
// question, the tool call an approval decides, a paused run) is left to it.
func TestAnAnswerIsPreparedAheadOnlyWhenItsTransactionNeedsNoReadOfItsOwn(t *testing.T) {
	tests := map[string]struct {
		question work.Suspension
		escalate bool
		pause    bool
		answer   work.Answer
		token    string
		err      error
		ok       bool
	}{
		"a choice": {question: choiceQuestion(""), answer: work.Answer{Value: ptr("brief")}, ok: true},
		"a wrong token": {question: choiceQuestion(""), answer: work.Answer{Value: ptr("brief")}, token: "wrong",
			err: work.ErrInvalidToken},
		"an answer that is not an option": {question: choiceQuestion(""), answer: work.Answer{Value: ptr("huge")}, err: work.ErrInvalidInput},
		"an escalated question":           {question: choiceQuestion(work.FallbackEscalate), escalate: true, answer: work.Answer{Value: ptr("brief")}},
		"an approval": {question: work.Suspension{Step: "ship", Kind: work.KindApproval, Prompt: "Ship?", Continuation: "ship", TTL: time.Minute},
			answer: work.Answer{Approved: ptr(true)}},
		"a paused run": {question: choiceQuestion(""), pause: true, answer: work.Answer{Value: ptr("brief")}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
				g := NewWithT(t)
				ctx := context.Background()
				w, c := newStore(s)
				_, run, token := submit(t, w)
				action := ask(t, w, run.ID, tt.question)
				if tt.escalate {
					c.Add(time.Minute)
					_, err := w.ExpirePendingActions(ctx)
					g.Expect(err).NotTo(HaveOccurred())
				}
				if tt.pause {
					_, err := w.Pause(ctx, wsA.WorkspaceID, run.ID)
					g.Expect(err).NotTo(HaveOccurred())
				}
				if tt.token != "" {
					token = tt.token
				}
				_, ok, err := w.PrepareResponse(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token,
					PrincipalID: "p1", Answer: tt.answer, Lease: resumedLease(w)})
				if tt.err != nil {
					g.Expect(err).To(MatchError(tt.err))
				} else {
					g.Expect(err).NotTo(HaveOccurred())
				}
				g.Expect(ok).To(Equal(tt.ok))
			})
		})
	}
}

// An answer written with its resumed run's first transition and the expiry of its question
// racing resolve the question once, on both dialects, whichever commits first.
func TestAnAnswerWrittenWithItsResumedRunRacingTheExpiryResolvesTheQuestionOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, c := newStore(s)
		const rounds = 20
		for i := range rounds {
			c.now = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
			w.Clock = c.Now
			_, run, token := submit(t, w)
			question := choiceQuestion(work.FallbackProceed)
			question.Default = json.RawMessage(`"brief"`)
			action := ask(t, w, run.ID, question)
			p, ok, err := w.PrepareResponse(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token,
				PrincipalID: "p1", Answer: work.Answer{Value: ptr("detailed")}, Lease: resumedLease(w)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(BeTrue())
			jitter := &jitterClock{at: action.ExpiresAt, rnd: rand.New(rand.NewPCG(uint64(i), 11))}
			w.Clock = jitter.Now
			var (
				wg                   sync.WaitGroup
				answerErr, expireErr error
			)
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _, answerErr = w.RespondApplied(ctx, p, "worker-2", completes)
			}()
			go func() {
				defer wg.Done()
				_, expireErr = w.ExpirePendingActions(ctx)
			}()
			wg.Wait()
			g.Expect(expireErr).NotTo(HaveOccurred())
			if answerErr != nil {
				g.Expect(answerErr).To(MatchError(work.ErrStale), "the loser of the race writes nothing")
			}
			jitter.at = jitter.at.Add(time.Second)
			_, err = w.ExpirePendingActions(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resolutions(t, w, run.ID)).To(Equal(1), "round %d: one resolution", i)
			after, _ := w.Run(ctx, wsA.WorkspaceID, run.ID)
			if answerErr == nil {
				g.Expect(after.State).To(Equal(work.StateCompleted))
			} else {
				data, _ := after.DecodeData()
				g.Expect(data.Answers).To(HaveKeyWithValue("choose", "brief"), "round %d: the run goes on with the expiry's default", i)
				// The next round's Claim must find this run settled: pause it out of the way.
				_, err := w.Pause(ctx, wsA.WorkspaceID, run.ID)
				g.Expect(err).NotTo(HaveOccurred())
			}
		}
	})
}
