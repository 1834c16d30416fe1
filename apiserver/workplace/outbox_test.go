package workplace

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"

	"platform.dev/platform/apiserver/notify"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// workAndPlaces is the Work store on s with the Workplace projecting its runs, as serve wires them.
func workAndPlaces(s *store.Store) (*work.Store, *Store) {
	w := work.New(s)
	places := NewStore(s, w, nil)
	w.Observer = places
	return w, places
}

func TestATransactionsOutboxEventsFollowEachWorkspacesLastInTheOrderEmitted(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		emitMany := func(counts map[string]int) {
			g.Expect(w.InTx(ctx, func(tx *sql.Tx) error {
				for i := range 40 {
					for ws, n := range counts {
						if i < n {
							if err := places.emit(ctx, tx, ws, "", EventTaskCreated, map[string]any{"taskId": fmt.Sprint(i)}); err != nil {
								return err
							}
						}
					}
				}
				return nil
			})).To(Succeed())
		}
		written := outboxWrites(t)
		// More than one statement's worth for one workspace, a few for another, then more; on
		// PostgreSQL numbered in rounds smaller than a transaction's events.
		defer func(batch int) { numberBatch = batch }(numberBatch)
		numberBatch = 7
		emitMany(map[string]int{"ws-b": 2*outboxBatch + 3, "ws-a": 5})
		emitMany(map[string]int{"ws-a": 1, "ws-b": 1})
		g.Expect(outboxWrites(t)-written).To(BeEquivalentTo(2), "each transaction's write is timed once (platform_workplace_outbox_write_seconds)")
		g.Expect(places.NumberEvents(ctx)).To(Succeed())

		for ws, want := range map[string]int{"ws-a": 6, "ws-b": 2*outboxBatch + 4} {
			events, err := places.Events(ctx, ws, 0, 500)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(events).To(HaveLen(want))
			for i, e := range events {
				g.Expect(e.Seq).To(Equal(int64(i+1)), "%s: numbered in order, none missing", ws)
				g.Expect(e.WorkspaceID).To(Equal(ws))
				if i < want-1 {
					g.Expect(string(e.Payload)).To(Equal(fmt.Sprintf(`{"taskId":"%d"}`, i)), "%s: in the order emitted", ws)
				}
			}
			last, err := places.LastEventSeq(ctx, ws)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(last).To(Equal(int64(want)))
		}
	})
}

func TestAnUnreadCountEventSaysTheCountItsTransactionLeft(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		change := func(deltas ...int64) {
			g.Expect(w.InTx(ctx, func(tx *sql.Tx) error {
				if err := places.emit(ctx, tx, "ws-a", "", EventTaskCreated, map[string]any{"taskId": "t"}); err != nil {
					return err
				}
				for _, d := range deltas {
					// A transaction tells each Principal's count once, as it is at its end.
					if err := places.unreadChanged(ctx, tx, "ws-a", "p1", d); err != nil {
						return err
					}
				}
				return places.unreadChanged(ctx, tx, "ws-a", "p2", 1)
			})).To(Succeed())
		}
		change(1, 1, 1)
		change(-1)
		g.Expect(w.InTx(ctx, func(tx *sql.Tx) error { return places.unreadChanged(ctx, tx, "ws-a", "p1", 5) })).To(Succeed())
		for _, numbered := range []bool{false, true} {
			if numbered {
				g.Expect(places.NumberEvents(ctx)).To(Succeed())
			}
			for principal, want := range map[string]int{"p1": 7, "p2": 2} {
				n, err := places.UnreadCount(ctx, "ws-a", principal)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(n).To(Equal(want), "%s, numbered: %t", principal, numbered)
			}
		}

		events, err := places.Events(ctx, "ws-a", 0, 500)
		g.Expect(err).NotTo(HaveOccurred())
		var told []string
		for _, e := range events {
			if e.Name == EventUnreadNotificationCountChanged {
				told = append(told, e.PrincipalID+" "+string(e.Payload))
			}
		}
		g.Expect(told).To(Equal([]string{`p1 {"unreadCount":3}`, `p2 {"unreadCount":1}`, `p1 {"unreadCount":2}`, `p2 {"unreadCount":2}`,
			`p1 {"unreadCount":7}`}))
	})
}

func TestTransactionsOfOneWorkspaceWriteTheirEventsWithoutWaitingForEachOther(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		if s.Dialect() != store.Postgres {
			t.Skip("SQLite runs one writing transaction at a time")
		}
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		emit := func(tx *sql.Tx, taskID string) error {
			if err := places.emit(ctx, tx, "ws-a", "", EventTaskCreated, map[string]any{"taskId": taskID}); err != nil {
				return err
			}
			return places.unreadChanged(ctx, tx, "ws-a", "p1", 1)
		}
		g.Expect(w.InTx(ctx, func(tx *sql.Tx) error { return emit(tx, "before") })).To(Succeed())
		g.Expect(places.NumberEvents(ctx)).To(Succeed())

		// The first transaction has written its events, the change of p1's unread count among
		// them, and not committed yet.
		written, release, firstDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			firstDone <- s.InTx(ctx, func(tx *sql.Tx) error {
				if err := places.writeOutbox(ctx, tx, []Event{{WorkspaceID: "ws-a", Name: EventTaskCreated,
					Payload: []byte(`{"taskId":"first"}`), CreatedAt: time.Now()},
					{WorkspaceID: "ws-a", Name: EventUnreadNotificationCountChanged, PrincipalID: "p1", CreatedAt: time.Now()}},
					map[int]int64{1: 1}, nil); err != nil {
					return err
				}
				close(written)
				<-release
				return nil
			})
		}()
		<-written
		second, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		g.Expect(w.InTx(second, func(tx *sql.Tx) error { return emit(tx, "second") })).To(Succeed(),
			"the second transaction commits while the first holds its events")
		g.Expect(places.NumberEvents(ctx)).To(Succeed())
		close(release)
		g.Expect(<-firstDone).To(Succeed())
		g.Expect(places.NumberEvents(ctx)).To(Succeed())

		events, err := places.Events(ctx, "ws-a", 0, 10)
		g.Expect(err).NotTo(HaveOccurred())
		var order []string
		for _, e := range events {
			order = append(order, fmt.Sprintf("%d %s", e.Seq, e.Payload))
		}
		g.Expect(order).To(Equal([]string{`1 {"taskId":"before"}`, `2 {"unreadCount":1}`, `3 {"taskId":"second"}`, `4 {"unreadCount":2}`,
			`5 {"taskId":"first"}`, `6 {"unreadCount":3}`}), "numbered in the order they committed, each count as its change left it")
	})
}

func TestReplicasNumberingAtOnceNumberEveryEventOnceAndEachTransactionsInOrder(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		defer func(batch int) { numberBatch = batch }(numberBatch)
		numberBatch = 5
		const writers, commits = 4, 25
		var producing, numbering sync.WaitGroup
		errs := make(chan error, writers+3)
		for p := range writers {
			producing.Go(func() {
				for c := range commits {
					if err := w.InTx(ctx, func(tx *sql.Tx) error {
						for k := range 2 {
							if err := places.emit(ctx, tx, "ws-a", "", EventTaskCreated, map[string]any{"taskId": fmt.Sprintf("%d-%03d-%d", p, c, k)}); err != nil {
								return err
							}
						}
						return nil
					}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		done := make(chan struct{})
		for range 3 { // as three replicas would, at once
			numbering.Go(func() {
				for {
					if err := places.NumberEvents(ctx); err != nil {
						errs <- err
						return
					}
					select {
					case <-done:
						return
					default:
					}
				}
			})
		}
		producing.Wait()
		close(done)
		numbering.Wait()
		close(errs)
		for err := range errs {
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Expect(places.NumberEvents(ctx)).To(Succeed())

		events, err := places.Events(ctx, "ws-a", 0, 1000)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(HaveLen(writers * commits * 2))
		last := map[string]string{}
		for i, e := range events {
			g.Expect(e.Seq).To(Equal(int64(i+1)), "numbered once each, none missing")
			var payload struct{ TaskID string }
			g.Expect(json.Unmarshal(e.Payload, &payload)).To(Succeed())
			writer := payload.TaskID[:1]
			g.Expect(payload.TaskID > last[writer]).To(BeTrue(), "a writer's events in the order it committed them: %s after %s", payload.TaskID, last[writer])
			last[writer] = payload.TaskID
		}
	})
}

func TestTheHubLearnsOfCommittedEventsOnceTheyAreNumbered(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx, stop := context.WithCancel(context.Background())
		w, places := workAndPlaces(s)
		numbering := make(chan struct{})
		go func() {
			defer close(numbering)
			places.NumberOutbox(ctx, logr.Discard())
		}()
		defer func() {
			stop()
			<-numbering
		}()
		sub, err := w.Changes().Subscribe(Topic("ws-a"))
		g.Expect(err).NotTo(HaveOccurred())
		defer sub.Close()

		for i := range 3 {
			g.Expect(w.InTx(ctx, func(tx *sql.Tx) error {
				return places.emit(ctx, tx, "ws-a", "", EventTaskCreated, map[string]any{"taskId": fmt.Sprint(i)})
			})).To(Succeed())
			// Well before the sweep: woken by the commit.
			g.Eventually(sub.Events()).WithTimeout(numberSweep / 2).Should(Receive())
			events, err := places.Events(ctx, "ws-a", int64(i), 10)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(events).To(HaveLen(1))
			g.Expect(events[0].Seq).To(Equal(int64(i + 1)))
		}
	})
}

// outboxWrites is how many outbox writes platform_workplace_outbox_write_seconds has timed.
func outboxWrites(t *testing.T) uint64 {
	var m dto.Metric
	if err := outboxWriteDuration.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// Replicas (each its own store and pool on one PostgreSQL database) changing one Principal's
// unread count at once while each numbers the outbox lose no change: the count is the sum of
// every committed change, whichever replica reads it, and the events that tell it count up one by
// one in the order they are numbered.
func TestReplicasChangingOneUnreadCountAtOnceLoseNoChangeAndTellItInOrder(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		if opts.DatabaseURL == "" {
			t.Skip("one process owns a SQLite database: there are no other replicas")
		}
		g := NewWithT(t)
		ctx := context.Background()
		type replica struct {
			work   *work.Store
			places *Store
		}
		var replicas []replica
		for range 2 {
			s, err := store.Open(ctx, opts)
			g.Expect(err).NotTo(HaveOccurred())
			t.Cleanup(func() { s.Close() })
			w, places := workAndPlaces(s)
			replicas = append(replicas, replica{w, places})
		}
		const writersPerReplica, commits = 2, 25
		var producing, numbering sync.WaitGroup
		errs := make(chan error, 2*writersPerReplica+2)
		for _, r := range replicas {
			for range writersPerReplica {
				producing.Go(func() {
					for range commits {
						if err := r.work.InTx(ctx, func(tx *sql.Tx) error { return r.places.unreadChanged(ctx, tx, "ws-a", "p1", 1) }); err != nil {
							errs <- err
							return
						}
					}
				})
			}
		}
		done := make(chan struct{})
		for _, r := range replicas {
			numbering.Go(func() {
				for {
					if err := r.places.NumberEvents(ctx); err != nil {
						errs <- err
						return
					}
					select {
					case <-done:
						return
					default:
					}
				}
			})
		}
		producing.Wait()
		close(done)
		numbering.Wait()
		close(errs)
		for err := range errs {
			g.Expect(err).NotTo(HaveOccurred())
		}
		const total = 2 * writersPerReplica * commits
		for i, r := range replicas {
			n, err := r.places.UnreadCount(ctx, "ws-a", "p1")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(total), "replica %d reads every change", i)
		}
		g.Expect(replicas[1].places.NumberEvents(ctx)).To(Succeed())
		events, err := replicas[0].places.Events(ctx, "ws-a", 0, 1000)
		g.Expect(err).NotTo(HaveOccurred())
		var told []string
		for _, e := range events {
			if e.Name == EventUnreadNotificationCountChanged {
				told = append(told, string(e.Payload))
			}
		}
		g.Expect(told).To(HaveLen(total))
		for i, payload := range told {
			g.Expect(payload).To(Equal(fmt.Sprintf(`{"unreadCount":%d}`, i+1)), "event %d tells the count its change left", i+1)
		}
	})
}

// On PostgreSQL a Work transaction that writes outbox events tells the other replicas of its
// changes with the outbox's own INSERT (no pg_notify statement of its own): another replica's
// subscribers learn of the run and of the events to number once it commits, never when it rolls
// back.
func TestAWorkTransactionTellsOtherReplicasWithItsOutboxWrite(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		if s.Dialect() != store.Postgres {
			t.Skip("one process owns a SQLite database: there are no other replicas")
		}
		g := NewWithT(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		here, places := workAndPlaces(s)
		there := work.New(s) // another replica's store on the same database
		go there.Changes().Listen(ctx, s, logr.Discard())
		outbox, err := there.Changes().Subscribe(pendingTopic)
		g.Expect(err).NotTo(HaveOccurred())
		defer outbox.Close()
		g.Eventually(outbox.Events()).WithTimeout(10*time.Second).Should(Receive(), "listening has begun")

		stop := s.RecordStatements()
		_, run, _, err := here.Submit(ctx, work.Submission{Context: work.Context{TenantID: "t1", WorkspaceID: "ws-a", Namespace: "a", PrincipalID: "p1"},
			Type: "report", Title: "Quarterly numbers", Instruction: "i", FlowName: "f", FlowVersion: "1.0.0"})
		statements := stop()
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(outbox.Events()).WithTimeout(10 * time.Second).Should(Receive(Equal(notify.Event{Topic: pendingTopic})))
		for _, q := range statements {
			g.Expect(q).NotTo(HavePrefix("SELECT pg_notify"), "the notification rides with the outbox's INSERT")
		}
		// The numbering tells the workspace's new events in its own statement too.
		numbered, err := there.Changes().Subscribe(Topic("ws-a"))
		g.Expect(err).NotTo(HaveOccurred())
		defer numbered.Close()
		stop = s.RecordStatements()
		g.Expect(places.NumberEvents(ctx)).To(Succeed())
		statements = stop()
		g.Eventually(numbered.Events()).WithTimeout(10 * time.Second).Should(Receive(Equal(notify.Event{Topic: Topic("ws-a")})))
		g.Expect(statements).To(HaveLen(1), "one numbering statement, which notifies: %v", statements)
		runTopic, err := there.Changes().Subscribe(work.RunTopic(run.ID))
		g.Expect(err).NotTo(HaveOccurred())
		defer runTopic.Close()
		_, err = here.Cancel(ctx, "ws-a", run.ID, "not needed")
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(runTopic.Events()).WithTimeout(10*time.Second).Should(Receive(), "the run's topic too")
		g.Eventually(outbox.Events()).WithTimeout(10 * time.Second).Should(Receive())

		g.Expect(here.InTx(ctx, func(tx *sql.Tx) error {
			if err := places.emit(ctx, tx, "ws-a", "", EventTaskCreated, map[string]any{"taskId": "gone"}); err != nil {
				return err
			}
			return sql.ErrNoRows // rolled back
		})).To(MatchError(sql.ErrNoRows))
		g.Consistently(outbox.Events()).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "nothing committed, nothing told")
	})
}
