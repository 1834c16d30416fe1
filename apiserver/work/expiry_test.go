package work_test

import (
	"context"
	"database/sql"
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

// ask claims the run and suspends it on sus, as a worker would, and returns the open action.
func ask(t *testing.T, w *work.Store, runID string, sus work.Suspension) work.PendingAction {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	claimed, err := w.Claim(ctx, "worker-1", time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed).NotTo(BeNil())
	_, err = w.Apply(ctx, runID, "worker-1", work.Transition{State: work.StateRunning, Suspend: &sus})
	g.Expect(err).NotTo(HaveOccurred())
	action, err := w.OpenPendingAction(ctx, runID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(action).NotTo(BeNil())
	return *action
}

func eventTypes(t *testing.T, w *work.Store, runID string) []string {
	t.Helper()
	events, err := w.Events(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}

func TestAnUnansweredQuestionTurnsIntoItsDeclaredFallback(t *testing.T) {
	choice := work.Suspension{Step: "choose", Kind: work.KindChoice, Prompt: "Which level?", Continuation: "choose",
		Options: []work.Option{{Value: "brief"}, {Value: "detailed"}}, TTL: time.Minute}
	approval := work.Suspension{Step: "ship", Kind: work.KindApproval, Prompt: "Ship it?", Continuation: "ship", TTL: time.Minute}
	with := func(s work.Suspension, fallback string, def string) work.Suspension {
		s.OnExpiry = fallback
		if def != "" {
			s.Default = json.RawMessage(def)
		}
		return s
	}
	tests := map[string]struct {
		question   work.Suspension
		state      string // the run's state after the expiry
		resolution string
		answer     any // what the step sees, when the run goes on
		event      string
	}{
		"fail (the default) fails the run": {question: choice, state: work.StateFailed, resolution: work.ResolutionFailed,
			event: work.EventRunFailed},
		"reject answers an approval no and the run goes on": {question: with(approval, work.FallbackReject, ""), state: work.StateRunning,
			resolution: work.ResolutionRejected, answer: map[string]any{"approved": false, "reason": "nobody decided before the question expired"},
			event: work.EventRunResumed},
		"proceed answers with the declared default and the run goes on": {question: with(choice, work.FallbackProceed, `"detailed"`),
			state: work.StateRunning, resolution: work.ResolutionProceeded, answer: "detailed", event: work.EventRunResumed},
		"a default that no longer answers the question fails the run": {question: with(choice, work.FallbackProceed, `"huge"`),
			state: work.StateFailed, resolution: work.ResolutionFailed, event: work.EventRunFailed},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
				g := NewWithT(t)
				ctx := context.Background()
				w, c := newStore(s)
				_, run, _ := submit(t, w)
				action := ask(t, w, run.ID, tt.question)
				c.Add(59 * time.Second)
				n, err := w.ExpirePendingActions(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(n).To(BeZero(), "not before its expiry")
				c.Add(time.Second)
				n, err = w.ExpirePendingActions(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(n).To(Equal(1))

				after, _ := w.Run(ctx, wsA.WorkspaceID, run.ID)
				g.Expect(after.State).To(Equal(tt.state))
				actions, _ := w.PendingActions(ctx, run.ID)
				g.Expect(actions[0].ID).To(Equal(action.ID))
				g.Expect(actions[0].Status).To(Equal(work.ActionExpired))
				g.Expect(actions[0].Resolution).To(Equal(tt.resolution))
				if tt.answer != nil {
					data, err := after.DecodeData()
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(data.Answers).To(HaveKeyWithValue(tt.question.Step, tt.answer))
					g.Expect(actions[0].AnsweredBy).To(Equal(work.ExpiryDecider), "nobody answered")
				}
				g.Expect(eventTypes(t, w, run.ID)).To(ContainElements(work.EventPendingActionExpired, tt.event))
				n, err = w.ExpirePendingActions(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(n).To(BeZero(), "an action expires once")
			})
		})
	}
}

func TestAnEscalatedQuestionWaitsOnceMoreThenFailsTheRun(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, c := newStore(s)
		_, run, token := submit(t, w)
		action := ask(t, w, run.ID, work.Suspension{Step: "why", Kind: work.KindText, Prompt: "Why?", Continuation: "why",
			TTL: time.Minute, OnExpiry: work.FallbackEscalate})
		c.Add(time.Minute)
		n, err := w.ExpirePendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(1))
		open, err := w.OpenPendingAction(ctx, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(open).NotTo(BeNil(), "the escalated question still waits")
		g.Expect(open.ID).To(Equal(action.ID))
		g.Expect(open.EscalatedAt).NotTo(BeZero())
		g.Expect(open.ExpiresAt).To(Equal(action.ExpiresAt.Add(time.Minute)), "a new expiry as long as the first")
		g.Expect(eventTypes(t, w, run.ID)).To(ContainElement(work.EventPendingActionEscalated))
		still, _ := w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(still.State).To(Equal(work.StateActionRequired))

		c.Add(time.Minute)
		n, err = w.ExpirePendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(1))
		failed, _ := w.Run(ctx, wsA.WorkspaceID, run.ID)
		g.Expect(failed.State).To(Equal(work.StateFailed), "escalated once; then nobody answered either")
		_, _, _, err = w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token,
			PrincipalID: "p1", Answer: work.Answer{Value: ptr("late")}})
		g.Expect(err).To(MatchError(work.ErrConflict))
	})
}

func TestAReminderGoesOutOnceBeforeTheExpiry(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, c := newStore(s)
		_, run, _ := submit(t, w)
		ask(t, w, run.ID, work.Suspension{Step: "why", Kind: work.KindText, Prompt: "Why?", Continuation: "why",
			TTL: time.Hour, RemindBefore: 10 * time.Minute})
		c.Add(49 * time.Minute)
		n, err := w.RemindPendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(BeZero(), "not before its lead time")
		c.Add(time.Minute)
		n, err = w.RemindPendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(1))
		c.Add(time.Minute)
		n, err = w.RemindPendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(BeZero(), "once")
		g.Expect(eventTypes(t, w, run.ID)).To(ContainElement(work.EventPendingActionReminded))

		// Without a declared lead, a quarter of the wait (at most an hour) before.
		_, run2, _ := submit(t, w)
		ask(t, w, run2.ID, work.Suspension{Step: "why", Kind: work.KindText, Prompt: "Why?", Continuation: "why", TTL: 8 * time.Minute})
		c.Add(5*time.Minute + 59*time.Second)
		n, _ = w.RemindPendingActions(ctx)
		g.Expect(n).To(BeZero())
		c.Add(time.Second)
		n, _ = w.RemindPendingActions(ctx)
		g.Expect(n).To(Equal(1))
	})
}

// jitterClock reads a millisecond before or after its instant, at random: an answer and an
// expiry sweep that race around the expiry both find their time check passed.
type jitterClock struct {
	mu  sync.Mutex
	at  time.Time
	rnd *rand.Rand
}

func (c *jitterClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rnd.IntN(2) == 0 {
		return c.at.Add(-time.Millisecond)
	}
	return c.at
}

func TestAnAnswerRacingTheExpiryResolvesTheQuestionOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, c := newStore(s)
		const rounds = 40
		answered, expired := 0, 0
		for i := range rounds {
			c.now = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
			w.Clock = c.Now
			_, run, token := submit(t, w)
			action := ask(t, w, run.ID, work.Suspension{Step: "choose", Kind: work.KindChoice, Prompt: "Which?", Continuation: "choose",
				Options: []work.Option{{Value: "brief"}, {Value: "detailed"}}, TTL: time.Minute, OnExpiry: work.FallbackProceed,
				Default: json.RawMessage(`"brief"`)})
			jitter := &jitterClock{at: action.ExpiresAt, rnd: rand.New(rand.NewPCG(uint64(i), 7))}
			w.Clock = jitter.Now
			var (
				wg        sync.WaitGroup
				answerErr error
				n         int
				expireErr error
			)
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _, _, answerErr = w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID,
					Token: token, PrincipalID: "p1", Answer: work.Answer{Value: ptr("detailed")}})
			}()
			go func() {
				defer wg.Done()
				n, expireErr = w.ExpirePendingActions(ctx)
			}()
			wg.Wait()
			g.Expect(expireErr).NotTo(HaveOccurred())
			if answerErr != nil {
				g.Expect(answerErr).To(MatchError(work.ErrConflict), "the loser of the race finds the question resolved")
			}
			// A sweep that came too early finds it later.
			jitter.at = jitter.at.Add(time.Second)
			later, err := w.ExpirePendingActions(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			if answerErr == nil {
				answered++
				g.Expect(n+later).To(BeZero(), "an answered question does not expire")
			} else {
				expired++
				g.Expect(n + later).To(Equal(1))
			}
			resolutions := 0
			for _, e := range eventTypes(t, w, run.ID) {
				if e == work.EventPendingActionResolved || e == work.EventPendingActionExpired {
					resolutions++
				}
			}
			g.Expect(resolutions).To(Equal(1), "round %d: one resolution", i)
			actions, _ := w.PendingActions(ctx, run.ID)
			g.Expect(actions).To(HaveLen(1))
			after, _ := w.Run(ctx, wsA.WorkspaceID, run.ID)
			data, _ := after.DecodeData()
			want := map[bool]string{true: "detailed", false: "brief"}[answerErr == nil]
			g.Expect(data.Answers).To(HaveKeyWithValue("choose", want), "the run goes on with the winner's answer")
			// The next round's Claim must find this run settled: pause it out of the way.
			_, err = w.Cancel(ctx, wsA.WorkspaceID, run.ID, "next round")
			g.Expect(err).NotTo(HaveOccurred())
		}
		t.Logf("%d answers won, %d expiries won", answered, expired)
	})
}

// An answer decides who may give it in its own transaction: an escalation committed after the
// caller was checked (the question was still anyone's then) and before the answer leaves a Member
// refused, an Admin answers, and the role is read only for an escalated question.
func TestAnEscalationBetweenTheCheckAndTheAnswerLeavesTheQuestionToOwnersAndAdmins(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, c := newStore(s)
		_, run, token := submit(t, w)
		action := ask(t, w, run.ID, work.Suspension{Step: "why", Kind: work.KindText, Prompt: "Why?", Continuation: "why",
			TTL: time.Minute, OnExpiry: work.FallbackEscalate})
		asked := 0
		role := func(admin bool) func(context.Context, *sql.Tx) (bool, error) {
			return func(ctx context.Context, tx *sql.Tx) (bool, error) {
				asked++
				return admin, nil
			}
		}

		// The check a route makes before answering: the question is not escalated yet.
		open, err := w.OpenPendingAction(ctx, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(open.EscalatedAt).To(BeZero())
		// The escalation commits between that check and the answer.
		c.Add(time.Minute)
		n, err := w.ExpirePendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(1))

		_, _, _, err = w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token,
			PrincipalID: "member", Answer: work.Answer{Value: ptr("mine")}, MayAnswerEscalated: role(false)})
		g.Expect(err).To(MatchError(work.ErrEscalated), "a Member may no longer answer")
		_, _, _, err = w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token,
			PrincipalID: "member", Answer: work.Answer{Value: ptr("mine")}})
		g.Expect(err).To(MatchError(work.ErrEscalated), "without a check of the role, nobody may")
		still, err := w.OpenPendingAction(ctx, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(still).NotTo(BeNil(), "the refused answers left the question open")

		answered, resumed, _, err := w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID, Token: token,
			PrincipalID: "admin", Answer: work.Answer{Value: ptr("theirs")}, MayAnswerEscalated: role(true)})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(answered.AnsweredBy).To(Equal("admin"))
		g.Expect(resumed.State).To(Equal(work.StateRunning))
		g.Expect(asked).To(Equal(2), "the role is read once per answer to the escalated question")

		// A question that was never escalated is anyone's: the role is not read.
		_, err = w.Cancel(ctx, wsA.WorkspaceID, run.ID, "next")
		g.Expect(err).NotTo(HaveOccurred())
		_, run2, token2 := submit(t, w)
		plain := ask(t, w, run2.ID, work.Suspension{Step: "why", Kind: work.KindText, Prompt: "Why?", Continuation: "why", TTL: time.Minute})
		_, _, _, err = w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run2.ID, ActionID: plain.ID, Token: token2,
			PrincipalID: "member", Answer: work.Answer{Value: ptr("mine")}, MayAnswerEscalated: role(false)})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(asked).To(Equal(2))
	})
}

// A Member's answer racing the escalation resolves the question once: either the answer came
// first (it is answered, nothing escalates) or the escalation did (the Member is refused, the
// question waits for the Owners and Admins); never an answer to an escalated question.
func TestAMembersAnswerRacingTheEscalationNeverAnswersAnEscalatedQuestion(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, c := newStore(s)
		const rounds = 20
		for i := range rounds {
			c.now = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
			w.Clock = c.Now
			_, run, token := submit(t, w)
			action := ask(t, w, run.ID, work.Suspension{Step: "why", Kind: work.KindText, Prompt: "Why?", Continuation: "why",
				TTL: time.Minute, OnExpiry: work.FallbackEscalate})
			jitter := &jitterClock{at: action.ExpiresAt, rnd: rand.New(rand.NewPCG(uint64(i), 11))}
			w.Clock = jitter.Now
			var (
				wg        sync.WaitGroup
				answerErr error
				expireErr error
			)
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _, _, answerErr = w.Respond(ctx, work.Response{WorkspaceID: wsA.WorkspaceID, RunID: run.ID, ActionID: action.ID,
					Token: token, PrincipalID: "member", Answer: work.Answer{Value: ptr("mine")},
					MayAnswerEscalated: func(context.Context, *sql.Tx) (bool, error) { return false, nil }})
			}()
			go func() {
				defer wg.Done()
				_, expireErr = w.ExpirePendingActions(ctx)
			}()
			wg.Wait()
			g.Expect(expireErr).NotTo(HaveOccurred())
			actions, err := w.PendingActions(ctx, run.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(actions).To(HaveLen(1))
			a := actions[0]
			if answerErr == nil {
				g.Expect(a.Status).To(Equal(work.ActionCompleted), "round %d", i)
				g.Expect(a.EscalatedAt).To(BeZero(), "round %d: an answered question does not escalate", i)
			} else {
				g.Expect(answerErr).To(Or(MatchError(work.ErrEscalated), MatchError(work.ErrConflict)), "round %d", i)
				if !a.EscalatedAt.IsZero() {
					g.Expect(a.Status).To(Equal(work.ActionCreated), "round %d: escalated, it waits for the Owners and Admins", i)
				}
				g.Expect(a.AnsweredBy).To(BeEmpty(), "round %d", i)
			}
			_, err = w.Cancel(ctx, wsA.WorkspaceID, run.ID, "next round")
			g.Expect(err).NotTo(HaveOccurred())
		}
	})
}
