package notify_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/notify"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// A subscriber receives the events of its topics and of no other.
func TestASubscriberReceivesTheEventsOfItsTopicsOnly(t *testing.T) {
	g := NewWithT(t)
	h := notify.New(notify.Options{})
	run, err := h.Subscribe("run/1", "workspace/a")
	g.Expect(err).NotTo(HaveOccurred())
	defer run.Close()
	h.Publish("run/2", "workspace/b")
	h.Publish("run/1")
	h.Publish("workspace/a")
	g.Expect(<-run.Events()).To(Equal(notify.Event{Topic: "run/1"}))
	g.Expect(<-run.Events()).To(Equal(notify.Event{Topic: "workspace/a"}))
	g.Consistently(run.Events()).WithTimeout(50 * time.Millisecond).ShouldNot(Receive())
}

// A subscriber that does not keep up is dropped (its channel closed, Dropped set) instead of
// slowing the publisher or the other subscribers.
func TestASlowSubscriberIsDroppedWithoutBlockingOthers(t *testing.T) {
	g := NewWithT(t)
	h := notify.New(notify.Options{Buffer: 2})
	slow, _ := h.Subscribe("run/1")
	fast, _ := h.Subscribe("run/1")
	defer fast.Close()
	for range 3 {
		h.Publish("run/1")
		g.Expect(fast.Events()).To(Receive())
	}
	g.Expect(slow.Dropped()).To(BeTrue())
	g.Expect(fast.Dropped()).To(BeFalse())
	n := 0
	for range slow.Events() {
		n++
	}
	g.Expect(n).To(Equal(2), "the queued events, then the channel is closed")
	g.Expect(h.Subscribers()).To(Equal(1))
	slow.Close() // closing a dropped subscription is harmless
}

// The hub holds at most MaxSubscribers subscriptions; a closed one frees its place.
func TestTheHubBoundsItsSubscribers(t *testing.T) {
	g := NewWithT(t)
	h := notify.New(notify.Options{MaxSubscribers: 2})
	a, _ := h.Subscribe("x")
	_, err := h.Subscribe("y")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = h.Subscribe("z")
	g.Expect(err).To(MatchError(notify.ErrTooManySubscribers))
	a.Close()
	_, err = h.Subscribe("z")
	g.Expect(err).NotTo(HaveOccurred())
}

// On PostgreSQL another replica's subscribers learn of a change when its transaction commits,
// never of one rolled back; the hub that staged it skips its own notification.
func TestOtherReplicasLearnOfCommittedChangesThroughPostgres(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		if s.Dialect() != store.Postgres {
			t.Skip("one process owns a SQLite database: there are no other replicas")
		}
		g := NewWithT(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		here, there := notify.New(notify.Options{}), notify.New(notify.Options{})
		go here.Listen(ctx, s, logr.Discard())
		go there.Listen(ctx, s, logr.Discard())
		mine, _ := here.Subscribe("run/1")
		theirs, _ := there.Subscribe("run/1")
		// Listening has begun once the listeners woke every subscriber.
		g.Eventually(mine.Events()).WithTimeout(10 * time.Second).Should(Receive())
		g.Eventually(theirs.Events()).WithTimeout(10 * time.Second).Should(Receive())

		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			if err := here.Stage(ctx, tx, s.Dialect(), "run/1"); err != nil {
				return err
			}
			return sql.ErrNoRows // rolled back
		})).To(MatchError(sql.ErrNoRows))
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error { return here.Stage(ctx, tx, s.Dialect(), "run/1") })).To(Succeed())
		g.Eventually(theirs.Events()).WithTimeout(10 * time.Second).Should(Receive(Equal(notify.Event{Topic: "run/1"})))
		g.Consistently(theirs.Events()).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "once, for the commit")
		g.Consistently(mine.Events()).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "its own notification is skipped")
	})
}
