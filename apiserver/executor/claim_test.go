package executor_test

import (
	"context"
	"fmt"
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

// oneStep resolves the Flow "one": Input, an Agent step answered in the process, Output.
func oneStep() *resolver {
	return &resolver{
		flows:  map[string]platformv1.FlowDefinition{"one@1.0.0": orchestration([]platformv1.FlowStep{input, agentStep("ask", "writer"), output}, edge("in", "ask"), edge("ask", "out"))},
		agents: map[string]provider.Agent{"writer": {Name: "writer", Revision: "1", Instructions: "@respond done"}},
	}
}

// startExecutor runs an executor of opts until the test ends.
func startExecutor(t *testing.T, opts executor.Options) *executor.Executor {
	t.Helper()
	exec, err := executor.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); exec.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return exec
}

// A submitted run that no worker was reserved for is claimed with its first transition: a run
// whose steps make no call outside the process is claimed and completed in one commit, besides
// its submission's.
func TestAQueuedRunWhoseStepsNeedNoOutsideCallIsClaimedAndFinishedInOneCommit(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := work.New(s)
		startExecutor(t, executor.Options{Work: w, Resolver: oneStep(), Provider: provider.DeterministicProvider{}, Workers: 2,
			Lease: time.Minute, Poll: time.Hour, Authorize: func(context.Context, work.Context) error { return nil }})
		time.Sleep(50 * time.Millisecond) // the workers' first look for runs, before the count
		ctx := context.Background()
		before := s.Counts()
		_, run, _, err := w.Submit(ctx, work.Submission{Context: ctxA, Type: "t", Title: "t", Instruction: "i", FlowName: "one",
			FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}})
		g.Expect(err).NotTo(HaveOccurred())
		settled, err := w.WaitSettled(ctx, ctxA.WorkspaceID, run, 10*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(settled.State).To(Equal(work.StateCompleted))
		g.Expect(s.Counts().Sub(before).Commits).To(Equal(int64(2)), "the submission's, then the claim's with the run's end")
	})
}

// Two replicas whose workers race for the same runs execute each run once: of two workers that
// read a run claimable, one takes it with its first commit and the other drops it, having written
// nothing; every run completes with each step completed once.
func TestTwoReplicasRacingForTheSameRunsExecuteEachOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		w := work.New(s)
		var replicas []*executor.Executor
		for range 2 {
			replicas = append(replicas, startExecutor(t, executor.Options{Work: w, Resolver: oneStep(), Provider: provider.DeterministicProvider{},
				Workers: 4, Lease: time.Minute, Poll: time.Hour, Authorize: func(context.Context, work.Context) error { return nil }}))
		}
		ctx := context.Background()
		var ids []string
		for i := range 16 {
			c := ctxA
			c.WorkspaceID = fmt.Sprintf("ws-%d", i%4) // several workspaces, so the shares do not serialize the runs
			_, run, _, err := w.Submit(ctx, work.Submission{Context: c, Type: "t", Title: "t", Instruction: "i", FlowName: "one",
				FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}})
			g.Expect(err).NotTo(HaveOccurred())
			ids = append(ids, run.ID)
			for _, r := range replicas {
				r.Wake() // both replicas hear of each run, as through PostgreSQL's notifications
			}
		}
		for _, id := range ids {
			g.Eventually(func() string {
				run, err := w.RunByID(ctx, id)
				g.Expect(err).NotTo(HaveOccurred())
				return run.State
			}).WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal(work.StateCompleted))
			events, err := w.Events(ctx, id, 0)
			g.Expect(err).NotTo(HaveOccurred())
			var history []string
			for _, e := range events {
				history = append(history, e.Type+" "+e.Step)
			}
			g.Expect(history).To(Equal([]string{"RunCreated ", "RunStarted in", "StepStarted in", "StepCompleted in", "StepStarted ask",
				"StepCompleted ask", "StepStarted out", "StepCompleted out", "RunCompleted out"}), "run %s executed once", id)
		}
	})
}
