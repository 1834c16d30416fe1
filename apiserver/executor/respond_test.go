package executor_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

// askerThenOutside answers the agent "planner" in the process, as the offline model does, and the
// others as outsideCaller does (a call that leaves the process, told before it leaves).
type askerThenOutside struct {
	outside *outsideCaller
}

func (a askerThenOutside) Name() string            { return "asker" }
func (a askerThenOutside) TellsOutsideCalls() bool { return true }

func (a askerThenOutside) Invoke(ctx context.Context, req provider.Request) (provider.Action, error) {
	if req.Agent.Name == "planner" {
		return provider.DeterministicProvider{}.Invoke(ctx, req)
	}
	return a.outside.Invoke(ctx, req)
}

// An answer handed to a reserved worker is written with the resumed run's first transition: a
// resumed run whose next steps make no call outside the process is answered, run and ended in one
// commit, the answerer learning the ended run without reading it; one whose next step's call
// leaves the process commits the answer with the step's start before the call and the outcome
// after it. A worker that stops before it wrote anything gives the answer as the store does, and
// the run goes on.
func TestAnAnswerIsWrittenWithTheResumedRunsFirstTransition(t *testing.T) {
	cases := map[string]struct {
		outside     bool
		failOnce    bool
		commits     int64
		answered    string // the run's state as the answerer is told
		startedSeen bool   // the store held the answer and the step's start while the call was under way
	}{
		"a resumed run answered in the process is answered, run and ended in one commit": {commits: 1, answered: work.StateCompleted},
		"a next call that leaves the process commits the answer with the step's start before it": {outside: true, commits: 2,
			answered: work.StateRunning, startedSeen: true},
		"a worker that wrote nothing gives the answer as the store does": {failOnce: true, commits: 2, answered: work.StateRunning},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
				g := NewWithT(t)
				w := work.New(s)
				steps := []platformv1.FlowStep{input, agentStep("ask", "planner"), output}
				edges := []platformv1.FlowEdge{edge("in", "ask"), edge("ask", "out")}
				if tc.outside {
					steps = []platformv1.FlowStep{input, agentStep("ask", "planner"), agentStep("write", "writer"), output}
					edges = []platformv1.FlowEdge{edge("in", "ask"), edge("ask", "write"), edge("write", "out")}
				}
				resolve := &resolver{
					flows: map[string]platformv1.FlowDefinition{"one@1.0.0": orchestration(steps, edges...)},
					agents: map[string]provider.Agent{
						"planner": {Name: "planner", Revision: "1", Instructions: "@requestChoice Which level?\n@option brief Brief\n@option detailed Detailed"},
						"writer":  {Name: "writer", Revision: "1", Instructions: "@respond done"},
					},
				}
				outside := &outsideCaller{work: w}
				var failing atomic.Bool
				exec, err := executor.New(executor.Options{Work: w, Resolver: resolve, Provider: askerThenOutside{outside: outside}, Workers: 2,
					Lease: time.Minute, Poll: time.Hour, Authorize: func(context.Context, work.Context) error {
						if failing.CompareAndSwap(true, false) {
							return errors.New("the kube API is unreachable")
						}
						return nil
					}})
				g.Expect(err).NotTo(HaveOccurred())
				ctx, cancel := context.WithCancel(context.Background())
				stopped := make(chan struct{})
				go func() { defer close(stopped); exec.Run(ctx) }()
				defer func() { cancel(); <-stopped }()

				var r work.Reservation
				g.Eventually(func() (ok bool) { r, ok = exec.Reserve(ctxA.WorkspaceID); return ok }).Should(BeTrue())
				submitted, err := r.Submit(ctx, work.Submission{Context: ctxA, Type: "t", Title: "t", Instruction: "i", FlowName: "one",
					FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}})
				g.Expect(err).NotTo(HaveOccurred())
				asked, ok := submitted.Settled(ctx, 10*time.Second)
				g.Expect(ok).To(BeTrue())
				g.Expect(asked.State).To(Equal(work.StateActionRequired))
				action, err := w.OpenPendingAction(ctx, asked.ID)
				g.Expect(err).NotTo(HaveOccurred())

				failing.Store(tc.failOnce)
				g.Eventually(func() (ok bool) { r, ok = exec.Reserve(ctxA.WorkspaceID); return ok }).Should(BeTrue())
				time.Sleep(50 * time.Millisecond) // the workers' look for runs after the last commit, before the count
				before := s.Counts()
				answered, err := r.Respond(ctx, work.Response{WorkspaceID: ctxA.WorkspaceID, RunID: asked.ID, ActionID: action.ID,
					Token: submitted.Token, PrincipalID: "p1", Answer: work.Answer{Value: ptr("detailed")}})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(answered.Run.State).To(Equal(tc.answered))
				g.Expect(answered.Action.Status).To(Equal(work.ActionCompleted))
				g.Expect(answered.Token).To(HavePrefix("prt_"))

				// The answer was acknowledged: the store has it.
				actions, err := w.PendingActions(ctx, asked.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(actions[0].Status).To(Equal(work.ActionCompleted))
				run, ok := answered.Settled(ctx, 10*time.Second)
				g.Expect(ok).To(BeTrue())
				g.Expect(run.State).To(Equal(work.StateCompleted))
				g.Expect(s.Counts().Sub(before).Commits).To(Equal(tc.commits))
				stored, err := w.Run(ctx, ctxA.WorkspaceID, run.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(stored.Version).To(Equal(run.Version), "the answerer is told the run as committed")
				item, err := w.WorkItem(ctx, ctxA.WorkspaceID, submitted.Item.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(item.Status).To(Equal(work.StateCompleted))

				events, err := w.Events(ctx, run.ID, 0)
				g.Expect(err).NotTo(HaveOccurred())
				resolved, resumed := 0, 0
				for _, e := range events {
					switch e.Type {
					case work.EventPendingActionResolved:
						resolved++
						g.Expect(e.State).To(Equal(work.StateRunning), "the answer's event says the state the answer left")
					case work.EventRunResumed:
						resumed++
					}
				}
				g.Expect([]int{resolved, resumed}).To(Equal([]int{1, 1}), "%v", events)
				if tc.startedSeen {
					g.Expect(outside.seen).To(HaveLen(1))
					g.Expect(outside.seen[0].StepStarted).To(BeTrue(), "the step's start was committed before the call")
					g.Expect(outside.seen[0].CurrentStep).To(Equal("write"))
				}
			})
		})
	}
}
