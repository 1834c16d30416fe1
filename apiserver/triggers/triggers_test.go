package triggers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/apiserver/triggers/triggerstest"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
)

func TestMain(m *testing.M) { storetest.Main(m) }

var (
	created = time.Date(2026, 1, 30, 12, 0, 0, 0, time.UTC)
	hourly  = platformv1.TriggerSchedule{Type: platformv1.IntervalSchedule, Expression: "01:00:00", TimeZone: "UTC"}
)

func scheduled(at time.Time) triggers.Firing {
	return triggers.Firing{Kind: platformv1.ScheduledOccurrence, ScheduledAt: at}
}

func TestAFiringSubmitsAnAutonomousTaskWithTheTargetInput(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		env := triggerstest.New(t, db)
		tr := env.Trigger(t, "weekly", hourly, created, nil)

		o, fired, err := env.Service.Fire(ctx, tr, scheduled(created.Add(time.Hour)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fired).To(BeTrue())
		g.Expect(o.Outcome).To(Equal(platformv1.OccurrenceSubmitted))
		g.Expect(o.ID).To(Equal(triggers.ScheduledOccurrenceID(string(tr.UID), created.Add(time.Hour))))
		g.Expect(o.WorkItemID).To(Equal(triggers.WorkItemID(o.ID)), "the Work's identity derives from the occurrence's")
		g.Expect(o.PrincipalID).To(Equal(triggerstest.Owner))

		item, err := env.Work.WorkItem(ctx, triggerstest.WorkspaceID, o.WorkItemID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(item.InteractionID).To(BeEmpty())
		g.Expect(item.PrincipalID).To(Equal(triggerstest.Owner))
		g.Expect(item.FlowName).To(Equal(triggerstest.FlowName))
		g.Expect(item.FlowVersion).To(Equal("1.0.0"))
		g.Expect(item.Title).To(Equal("Report weekly"))
		run, err := env.Work.Run(ctx, triggerstest.WorkspaceID, item.FlowRunID)
		g.Expect(err).NotTo(HaveOccurred())
		data, err := run.DecodeData()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(data.Input).To(Equal(map[string]any{"request": "the weekly report"}), "the run's input is target.input")

		task, err := env.Workplace.Task(ctx, triggerstest.WorkspaceID, o.WorkTaskID)
		g.Expect(err).NotTo(HaveOccurred(), "the Work is a Task at once")
		g.Expect(task.InteractionID).To(BeEmpty(), "an autonomous Task: no Entry, no Interaction")
		g.Expect(task.State).To(Equal(workplace.TaskPending))
	})
}

// A recorded occurrence is told in its workspace's outbox, in the transaction that records it,
// once: the kube API's watches of TriggerOccurrences follow it.
func TestARecordedOccurrenceIsToldInTheOutboxOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		env := triggerstest.New(t, db)
		env.Service.Recorded = env.Workplace.TriggerOccurrenceRecorded
		tr := env.Trigger(t, "weekly", hourly, created, nil)
		o, _, err := env.Service.Fire(ctx, tr, scheduled(created.Add(time.Hour)))
		g.Expect(err).NotTo(HaveOccurred())
		_, fired, err := env.Service.Fire(ctx, tr, scheduled(created.Add(time.Hour)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fired).To(BeFalse())

		g.Expect(env.Workplace.NumberEvents(ctx)).To(Succeed())
		events, err := env.Workplace.Events(ctx, triggerstest.WorkspaceID, 0, 500)
		g.Expect(err).NotTo(HaveOccurred())
		var told []string
		for _, e := range events {
			if e.Name == workplace.EventTriggerOccurrenceRecorded {
				told = append(told, string(e.Payload))
			}
		}
		g.Expect(told).To(Equal([]string{`{"triggerOccurrenceId":"` + o.ID + `"}`}))
	})
}

// An occurrence's key refuses a second submission of the same instant, whoever tries: a retry, a
// restart, a second replica at the same moment.
func TestAnInstantSubmitsOnceWhateverReplicaOrRetryFiresIt(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		env := triggerstest.New(t, db)
		tr := env.Trigger(t, "weekly", hourly, created, nil)
		// A second replica: its own service over the same database.
		replica := *env.Service
		instant := created.Add(time.Hour)

		var wg sync.WaitGroup
		results := make([]bool, 8)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				svc := env.Service
				if i%2 == 1 {
					svc = &replica
				}
				_, fired, err := svc.Fire(ctx, tr, scheduled(instant))
				g.Expect(err).NotTo(HaveOccurred())
				results[i] = fired
			}()
		}
		wg.Wait()
		g.Expect(results).To(ContainElement(BeTrue()))
		count := 0
		for _, fired := range results {
			if fired {
				count++
			}
		}
		g.Expect(count).To(Equal(1), "one firing decided the instant")
		g.Expect(env.WorkItems(t, string(tr.UID))).To(HaveLen(1))

		again, fired, err := env.Service.Fire(ctx, tr, scheduled(instant))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fired).To(BeFalse())
		g.Expect(again.Outcome).To(Equal(platformv1.OccurrenceSubmitted), "the recorded occurrence comes back")
		g.Expect(env.WorkItems(t, string(tr.UID))).To(HaveLen(1))
	})
}

func TestTheOwnersAuthorizationIsEvaluatedAtEveryFiring(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		env := triggerstest.New(t, db)
		tr := env.Trigger(t, "weekly", hourly, created, nil)

		first, _, err := env.Service.Fire(ctx, tr, scheduled(created.Add(time.Hour)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(first.Outcome).To(Equal(platformv1.OccurrenceSubmitted))

		env.Authorize(triggerstest.Owner, false)
		second, _, err := env.Service.Fire(ctx, tr, scheduled(created.Add(2*time.Hour)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(second.Outcome).To(Equal(platformv1.OccurrenceFailed), "fails closed after revocation")
		g.Expect(second.Reason).To(Equal(platformv1.NotAuthorizedReason))
		g.Expect(second.Message).To(ContainSubstring("runs/execute"))
		g.Expect(second.WorkItemID).To(BeEmpty())
		g.Expect(env.WorkItems(t, string(tr.UID))).To(HaveLen(1), "nothing was submitted")

		unowned := env.Trigger(t, "unowned", hourly, created, func(tr *platformv1.Trigger) { tr.Annotations = nil })
		o, _, err := env.Service.Fire(ctx, unowned, scheduled(created.Add(time.Hour)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(o.Outcome).To(Equal(platformv1.OccurrenceFailed))
		g.Expect(o.Reason).To(Equal(platformv1.OwnerMissingReason))

		missing := env.Trigger(t, "missing", hourly, created, func(tr *platformv1.Trigger) { tr.Definition.Target.Flow.Name = "gone" })
		env.Authorize(triggerstest.Owner, true)
		o, _, err = env.Service.Fire(ctx, missing, scheduled(created.Add(time.Hour)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(o.Outcome).To(Equal(platformv1.OccurrenceFailed))
		g.Expect(o.Reason).To(Equal(platformv1.FlowNotFoundReason))
	})
}

func TestTheConcurrencyPolicyLooksAtTheWorkOfEarlierOccurrences(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		env := triggerstest.New(t, db)
		policy := func(p platformv1.ConcurrencyPolicy) func(*platformv1.Trigger) {
			return func(tr *platformv1.Trigger) { tr.Definition.ConcurrencyPolicy = p }
		}
		t.Run("skip", func(t *testing.T) {
			g := NewWithT(t)
			tr := env.Trigger(t, "skip", hourly, created, policy(platformv1.SkipConcurrency))
			first, _, err := env.Service.Fire(ctx, tr, scheduled(created.Add(time.Hour)))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(first.Outcome).To(Equal(platformv1.OccurrenceSubmitted))
			second, _, err := env.Service.Fire(ctx, tr, scheduled(created.Add(2*time.Hour)))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(second.Outcome).To(Equal(platformv1.OccurrenceSkipped), "the first occurrence's Work is still pending")
			g.Expect(second.Reason).To(Equal(platformv1.ConcurrencySkippedReason))
			g.Expect(second.Message).To(ContainSubstring(first.WorkItemID))

			_, err = env.Work.Cancel(ctx, triggerstest.WorkspaceID, first.FlowRunID, "done with it")
			g.Expect(err).NotTo(HaveOccurred())
			third, _, err := env.Service.Fire(ctx, tr, scheduled(created.Add(3*time.Hour)))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(third.Outcome).To(Equal(platformv1.OccurrenceSubmitted), "once the earlier Work ended")

			manual, _, err := env.Service.Fire(ctx, tr, triggers.Firing{Kind: platformv1.ManualOccurrence, ScheduledAt: created.Add(3 * time.Hour), PrincipalID: triggerstest.Owner})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(manual.Outcome).To(Equal(platformv1.OccurrenceSubmitted), "Run now is an explicit request")
		})
		t.Run("replace", func(t *testing.T) {
			g := NewWithT(t)
			tr := env.Trigger(t, "replace", hourly, created, policy(platformv1.ReplaceConcurrency))
			first, _, err := env.Service.Fire(ctx, tr, scheduled(created.Add(time.Hour)))
			g.Expect(err).NotTo(HaveOccurred())
			second, _, err := env.Service.Fire(ctx, tr, scheduled(created.Add(2*time.Hour)))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(second.Outcome).To(Equal(platformv1.OccurrenceSubmitted))
			run, err := env.Work.Run(ctx, triggerstest.WorkspaceID, first.FlowRunID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(run.State).To(Equal(work.StateCancelled), "the earlier Work was replaced")
			g.Expect(run.Reason).To(ContainSubstring(second.ID))
		})
		t.Run("allow", func(t *testing.T) {
			g := NewWithT(t)
			tr := env.Trigger(t, "allow", hourly, created, policy(platformv1.AllowConcurrency))
			for i := 1; i <= 3; i++ {
				o, _, err := env.Service.Fire(ctx, tr, scheduled(created.Add(time.Duration(i)*time.Hour)))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(o.Outcome).To(Equal(platformv1.OccurrenceSubmitted))
			}
			g.Expect(env.WorkItems(t, string(tr.UID))).To(HaveLen(3))
		})
	})
}

func TestRunNowIsAManualOccurrenceWithItsOwnIdentity(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		env := triggerstest.New(t, db)
		env.Authorize("principal-caller", true)
		tr := env.Trigger(t, "weekly", hourly, created, nil)
		instant := created.Add(time.Hour)
		_, _, err := env.Service.Fire(ctx, tr, scheduled(instant))
		g.Expect(err).NotTo(HaveOccurred())

		manual := triggers.Firing{Kind: platformv1.ManualOccurrence, ScheduledAt: instant, PrincipalID: "principal-caller", Key: "request-1"}
		o, fired, err := env.Service.Fire(ctx, tr, manual)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fired).To(BeTrue(), "the same instant as a scheduled occurrence is another occurrence")
		g.Expect(o.Kind).To(Equal(platformv1.ManualOccurrence))
		g.Expect(o.PrincipalID).To(Equal("principal-caller"), "Run now fires as its caller")
		again, fired, err := env.Service.Fire(ctx, tr, manual)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fired).To(BeFalse(), "a retried Run now with its key submits once")
		g.Expect(again.ID).To(Equal(o.ID))
		g.Expect(env.WorkItems(t, string(tr.UID))).To(HaveLen(2))

		cursor, err := env.Service.Cursor(ctx, string(tr.UID))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cursor.IsZero()).To(BeTrue(), "Run now moves no cursor (the test never synced one)")
	})
}

func TestHistoryIsBoundedAndFailuresCountUntilASuccess(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		env := triggerstest.New(t, db)
		env.Service.HistoryLimit = 5
		now := created
		env.Service.Clock = func() time.Time { return now }
		tr := env.Trigger(t, "weekly", hourly, created, nil)
		st, err := env.Service.Sync(ctx, tr, "key", true, 5)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Cursor).To(Equal(created), "a new Trigger owes the instants since its creation")

		for i := 1; i <= 8; i++ {
			now = created.Add(time.Duration(i) * time.Hour)
			o, _, err := env.Service.Fire(ctx, tr, scheduled(now))
			g.Expect(err).NotTo(HaveOccurred())
			if i < 8 {
				_, err = env.Work.Cancel(ctx, triggerstest.WorkspaceID, o.FlowRunID, "ended")
				g.Expect(err).NotTo(HaveOccurred())
			}
		}
		history, err := env.Service.Occurrences(ctx, string(tr.UID), 100)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history).To(HaveLen(5), "the history keeps the newest occurrences")
		g.Expect(history[0].ScheduledAt).To(Equal(created.Add(8 * time.Hour)))
		st, err = env.Service.Sync(ctx, tr, "key", true, 5)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Cursor).To(Equal(created.Add(8*time.Hour)), "the cursor moved with the firings")
		g.Expect(st.Failures).To(BeZero(), "pending Work neither fails nor succeeds")

		env.Authorize(triggerstest.Owner, false)
		for i := 9; i <= 11; i++ {
			now = created.Add(time.Duration(i) * time.Hour)
			_, _, err := env.Service.Fire(ctx, tr, scheduled(now))
			g.Expect(err).NotTo(HaveOccurred())
		}
		st, err = env.Service.Sync(ctx, tr, "key", true, 5)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Failures).To(Equal(3))

		g.Expect(env.Service.Resume(ctx, string(tr.UID))).To(Succeed())
		st, err = env.Service.Sync(ctx, tr, "key", true, 5)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Failures).To(BeZero(), "a resume starts a new count")

		now = now.Add(30 * time.Minute)
		st, err = env.Service.Sync(ctx, tr, "another schedule", true, 5)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Cursor).To(Equal(now), "a changed schedule owes nothing before the change")

		// A Trigger of the same name, created while the scheduler was not looking: the first sight
		// of it removes what the deleted one left.
		replacement := tr.DeepCopy()
		replacement.UID = "uid-replacement"
		_, err = env.Service.Sync(ctx, replacement, "key", true, 5)
		g.Expect(err).NotTo(HaveOccurred())
		history, err = env.Service.Occurrences(ctx, string(tr.UID), 100)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history).To(BeEmpty(), "the replaced Trigger's history goes")
		cursor, err := env.Service.Cursor(ctx, string(tr.UID))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cursor.IsZero()).To(BeTrue())

		g.Expect(env.Service.Forget(ctx, tr.Namespace, tr.Name, "")).To(Succeed())
		history, err = env.Service.Occurrences(ctx, string(tr.UID), 100)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history).To(BeEmpty(), "a deleted Trigger's history goes with it")
	})
}
