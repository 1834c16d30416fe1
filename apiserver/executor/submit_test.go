package executor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
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

// outsideCaller answers like the offline model, but as a model endpoint would: it tells the
// executor before each call leaves the process, and records the run as the store holds it while
// the call is under way.
type outsideCaller struct {
	work *work.Store
	mu   sync.Mutex
	seen []work.FlowRun
}

func (o *outsideCaller) Name() string            { return "outside" }
func (o *outsideCaller) TellsOutsideCalls() bool { return true }

func (o *outsideCaller) Invoke(ctx context.Context, req provider.Request) (provider.Action, error) {
	if err := provider.BeforeOutsideCall(ctx); err != nil {
		return provider.Action{}, err
	}
	runID, _, _ := strings.Cut(req.IdempotencyKey, "/")
	run, err := o.work.RunByID(ctx, runID)
	if err != nil {
		return provider.Action{}, err
	}
	o.mu.Lock()
	o.seen = append(o.seen, run)
	o.mu.Unlock()
	return provider.Action{Type: provider.ActionRespond, Text: "done"}, nil
}

// failingOnce fails its first read of a Flow version as an unreachable kube API would.
type failingOnce struct {
	*resolver
	mu     sync.Mutex
	failed bool
}

func (f *failingOnce) FlowVersion(ctx context.Context, ns, name, version string) (platformv1.FlowDefinition, string, error) {
	f.mu.Lock()
	first := !f.failed
	f.failed = true
	f.mu.Unlock()
	if first {
		return platformv1.FlowDefinition{}, "", errors.New("the kube API is unreachable")
	}
	return f.resolver.FlowVersion(ctx, ns, name, version)
}

// A submission handed to a reserved worker is written with its run's first transition: a run
// whose steps make no call outside the process is submitted, run and ended in one commit, the
// submitter learning the ended run without reading it; one whose agent's call leaves the process
// commits the submission with the step's start before the call (so that a crash restarts the
// step under its idempotency key) and the outcome after it. A worker that stops before it wrote
// anything submits the work for any worker, which runs it.
func TestASubmissionIsWrittenWithItsRunsFirstTransition(t *testing.T) {
	cases := map[string]struct {
		outside     bool
		failOnce    bool
		commits     int64
		submitted   string // the run's state as the submitter is told
		startedSeen bool   // the store held the step's start while the call was under way
	}{
		"a run answered in the process is submitted, run and ended in one commit": {commits: 1, submitted: work.StateCompleted},
		"a call that leaves the process commits the step's start before it":       {outside: true, commits: 2, submitted: work.StateRunning, startedSeen: true},
		"a worker that wrote nothing submits the work for any worker":             {failOnce: true, submitted: work.StatePending},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
				g := NewWithT(t)
				w := work.New(s)
				var resolve executor.Resolver = &resolver{
					flows:  map[string]platformv1.FlowDefinition{"one@1.0.0": orchestration([]platformv1.FlowStep{input, agentStep("ask", "writer"), output}, edge("in", "ask"), edge("ask", "out"))},
					agents: map[string]provider.Agent{"writer": {Name: "writer", Revision: "1", Instructions: "@respond done"}},
				}
				if tc.failOnce {
					resolve = &failingOnce{resolver: resolve.(*resolver)}
				}
				var calls provider.Provider = provider.DeterministicProvider{}
				outside := &outsideCaller{work: w}
				if tc.outside {
					calls = outside
				}
				exec, err := executor.New(executor.Options{Work: w, Resolver: resolve, Provider: calls, Workers: 2, Lease: time.Minute,
					Poll: time.Hour, Authorize: func(context.Context, work.Context) error { return nil }})
				g.Expect(err).NotTo(HaveOccurred())
				ctx, cancel := context.WithCancel(context.Background())
				stopped := make(chan struct{})
				go func() { defer close(stopped); exec.Run(ctx) }()
				defer func() { cancel(); <-stopped }()

				var r work.Reservation
				g.Eventually(func() (ok bool) { r, ok = exec.Reserve(ctxA.WorkspaceID); return ok }).Should(BeTrue())
				time.Sleep(50 * time.Millisecond) // the workers' first look for runs, before the count
				before := s.Counts()
				submitted, err := r.Submit(ctx, work.Submission{Context: ctxA, Type: "t", Title: "t", Instruction: "i", FlowName: "one",
					FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(submitted.Run.State).To(Equal(tc.submitted))
				g.Expect(submitted.Token).To(HavePrefix("prt_"))

				// The submission was acknowledged: the store has it.
				item, err := w.WorkItem(ctx, ctxA.WorkspaceID, submitted.Item.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(item.FlowRunID).To(Equal(submitted.Run.ID))
				if tc.failOnce {
					g.Eventually(func() string {
						run, err := w.Run(ctx, ctxA.WorkspaceID, submitted.Run.ID)
						g.Expect(err).NotTo(HaveOccurred())
						return run.State
					}).WithTimeout(10 * time.Second).Should(Equal(work.StateCompleted))
					return
				}
				run, ok := submitted.Settled(ctx, 10*time.Second)
				g.Expect(ok).To(BeTrue())
				g.Expect(run.State).To(Equal(work.StateCompleted))
				g.Expect(s.Counts().Sub(before).Commits).To(Equal(tc.commits))
				stored, err := w.Run(ctx, ctxA.WorkspaceID, run.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(stored.Version).To(Equal(run.Version), "the submitter is told the run as committed")
				item, err = w.WorkItem(ctx, ctxA.WorkspaceID, submitted.Item.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(item.Status).To(Equal(work.StateCompleted))

				events, err := w.Events(ctx, run.ID, 0)
				g.Expect(err).NotTo(HaveOccurred())
				var history []string
				for _, e := range events {
					history = append(history, e.Type+" "+e.Step+" "+e.State)
				}
				g.Expect(history).To(Equal([]string{"RunCreated  Pending", "RunStarted in Running", "StepStarted in Running",
					"StepCompleted in Running", "StepStarted ask Running", "StepCompleted ask Running", "StepStarted out Completed",
					"StepCompleted out Completed", "RunCompleted out Completed"}), "each event says the state its own transition left")
				if tc.startedSeen {
					g.Expect(outside.seen).To(HaveLen(1))
					g.Expect(outside.seen[0].StepStarted).To(BeTrue(), "the step's start was committed before the call")
				}
			})
		})
	}
}
