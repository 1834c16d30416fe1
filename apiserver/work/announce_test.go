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

// announcingObserver records a topic of its own in every run transition it sees, as the
// Workplace does for its outbox.
type announcingObserver struct {
	w     *work.Store
	topic string
	fail  bool
}

func (o *announcingObserver) Observe(_ context.Context, tx *sql.Tx, _ work.FlowRun, _ []work.Event) error {
	o.w.Announce(tx, o.topic, o.topic)
	if o.fail {
		return errors.New("the projection failed")
	}
	return nil
}

// TestATopicAnnouncedInAStoreTransactionIsPublishedOnceAfterItCommits: what another plane writes
// in a run transition (the Observer) or in InTx wakes its subscribers once the transaction
// committed, once per topic, and never when it rolled back.
func TestATopicAnnouncedInAStoreTransactionIsPublishedOnceAfterItCommits(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		observer := &announcingObserver{w: w, topic: "outbox/ws-a"}
		w.Observer = observer
		sub, err := w.Changes().Subscribe(observer.topic)
		g.Expect(err).NotTo(HaveOccurred())
		defer sub.Close()
		received := func() int {
			n := 0
			for {
				select {
				case <-sub.Events():
					n++
				case <-time.After(50 * time.Millisecond):
					return n
				}
			}
		}

		_, run, _ := submit(t, w)
		g.Expect(received()).To(Equal(1), "a submission's transition, once however often it was announced")
		_, err = w.Cancel(ctx, wsA.WorkspaceID, run.ID, "not needed")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(received()).To(Equal(1), "a caller's transition")

		g.Expect(w.InTx(ctx, func(tx *sql.Tx) error { w.Announce(tx, observer.topic); return nil })).To(Succeed())
		g.Expect(received()).To(Equal(1), "InTx")

		observer.fail = true
		_, _, _, err = w.Submit(ctx, work.Submission{Context: wsA, Type: "report", Title: "Q4", FlowName: "report", FlowVersion: "1.0.0"})
		g.Expect(err).To(HaveOccurred())
		g.Expect(w.InTx(ctx, func(tx *sql.Tx) error { w.Announce(tx, observer.topic); return errors.New("rolled back") })).NotTo(Succeed())
		g.Expect(received()).To(BeZero(), "nothing committed, nothing announced")
	})
}

// A waiter for a run that a worker of this process settled learns it without reading the run:
// the waiter of an answer whose resumed run this process completes costs the store no read once
// woken; a run another process changes is read as before.
func TestAWaiterForARunThisProcessSettledDoesNotReadIt(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		_, run, _ := submit(t, w)
		claimed, err := w.Claim(ctx, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		completed, err := w.ApplyHeld(ctx, *claimed, "worker-1", work.Transition{State: work.StateCompleted,
			Result: []byte(`{"output":"done"}`), Events: []work.Event{{Type: work.EventRunCompleted}}})
		g.Expect(err).NotTo(HaveOccurred())

		stop := s.RecordStatements()
		settled, err := w.WaitSettled(ctx, wsA.WorkspaceID, *claimed, time.Second)
		g.Expect(stop()).To(BeEmpty())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(settled.State).To(Equal(work.StateCompleted))
		g.Expect(settled.Version).To(Equal(completed.Version))

		other := work.New(s) // another replica's store: it never saw the run settle
		stop = s.RecordStatements()
		settled, err = other.WaitSettled(ctx, wsA.WorkspaceID, run, time.Second)
		g.Expect(stop()).To(HaveLen(1))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(settled.State).To(Equal(work.StateCompleted))
	})
}
