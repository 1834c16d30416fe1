package work_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

// A submission's Prelude (the conversation an Entry opens) is written in the submission's own
// transaction, with the run's id, whether the submission is written as it is or with its run's
// first transition; when the prelude fails, nothing of the submission is written either.
func TestASubmissionsPreludeCommitsWithItOrNothingDoes(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w, _ := newStore(s)
		lease := work.Lease{Owner: "worker-1", Until: time.Now().Add(time.Minute)}
		writers := map[string]func(sub work.Submission) (work.FlowRun, error){
			"as it is": func(sub work.Submission) (work.FlowRun, error) {
				_, run, _, err := w.Submit(ctx, sub)
				return run, err
			},
			"with its run's first transition": func(sub work.Submission) (work.FlowRun, error) {
				sub.Lease = &lease
				p, err := w.Prepare(sub)
				if err != nil {
					return work.FlowRun{}, err
				}
				_, run, err := w.SubmitApplied(ctx, p, lease.Owner, work.Transition{State: work.StateCompleted,
					Events: []work.Event{{Type: work.EventRunCompleted}}})
				return run, err
			},
		}
		for name, write := range writers {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				sub := work.Submission{Context: wsA, Type: "interaction", Title: "Hello", FlowName: "report", FlowVersion: "1.0.0", Input: map[string]any{}}
				var preludeRun string
				sub.Prelude = func(ctx context.Context, tx *sql.Tx, run work.FlowRun) error {
					preludeRun = run.ID
					return nil
				}
				run, err := write(sub)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(preludeRun).To(Equal(run.ID), "the prelude names the run it is written with")
				_, err = w.Run(ctx, wsA.WorkspaceID, run.ID)
				g.Expect(err).NotTo(HaveOccurred())

				refused := errors.New("the conversation cannot be written")
				sub.Prelude = func(ctx context.Context, tx *sql.Tx, run work.FlowRun) error {
					preludeRun = run.ID
					return refused
				}
				_, err = write(sub)
				g.Expect(err).To(MatchError(refused))
				_, err = w.Run(ctx, wsA.WorkspaceID, preludeRun)
				g.Expect(err).To(MatchError(work.ErrNotFound), "no run without what it belongs to")
			})
		}
	})
}
