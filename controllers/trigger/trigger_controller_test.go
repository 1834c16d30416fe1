package trigger

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/apiserver/triggers/triggerstest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// scheduler is one replica of the scheduler over the fixture: a reconciler with its own
// registry, on the shared fake clock.
type scheduler struct {
	*Reconciler
	clock *clocktesting.FakeClock
}

func newScheduler(env *triggerstest.Env, clock *clocktesting.FakeClock, occurrences Occurrences) *scheduler {
	if occurrences == nil {
		occurrences = env.Service
	}
	r := &Reconciler{Client: env.Kube, Recorder: events.NewFakeRecorder(100), Occurrences: occurrences, Clock: clock}
	r.registry = newRegistry(clock)
	return &scheduler{Reconciler: r, clock: clock}
}

func newEnv(t *testing.T, db *store.Store, start time.Time) (*triggerstest.Env, *clocktesting.FakeClock) {
	env := triggerstest.New(t, db)
	clock := clocktesting.NewFakeClock(start)
	env.Service.Clock = clock.Now
	return env, clock
}

func (s *scheduler) reconcile(t *testing.T, tr *platformv1.Trigger) {
	t.Helper()
	if _, err := s.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tr)}); err != nil {
		t.Fatal(err)
	}
}

// stepToNext moves the clock to the registered firing of tr and reconciles it once the
// registration has sent it, as the controller's watch of the registry does.
func (s *scheduler) stepToNext(t *testing.T, tr *platformv1.Trigger) {
	t.Helper()
	at, ok := s.registry.next(client.ObjectKeyFromObject(tr))
	if !ok {
		t.Fatalf("%s has no registration", tr.Name)
	}
	s.clock.SetTime(at)
	select {
	case e := <-s.registry.events:
		if e.Object.GetName() != tr.Name {
			t.Fatalf("the registration of %s sent %s", tr.Name, e.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the registration of %s sent nothing at %s", tr.Name, at)
	}
	s.reconcile(t, tr)
}

func status(t *testing.T, env *triggerstest.Env, tr *platformv1.Trigger) platformv1.TriggerStatus {
	t.Helper()
	current := &platformv1.Trigger{}
	if err := env.Kube.Get(context.Background(), client.ObjectKeyFromObject(tr), current); err != nil {
		t.Fatal(err)
	}
	return current.Status
}

func history(t *testing.T, env *triggerstest.Env, tr *platformv1.Trigger) []triggers.Occurrence {
	t.Helper()
	list, err := env.Service.Occurrences(context.Background(), string(tr.UID), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func outcomes(list []triggers.Occurrence) []string {
	var out []string
	for i := len(list) - 1; i >= 0; i-- {
		out = append(out, string(list[i].Outcome)+"@"+list[i].ScheduledAt.Format("15:04"))
	}
	return out
}

func TestEachScheduleTypeFiresAtItsInstantsOnAnInjectedClock(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	// The evening before Europe/Paris springs forward (2026-03-29, 02:00 CET -> 03:00 CEST).
	start := time.Date(2026, 3, 28, 22, 0, 0, 0, paris)
	tests := map[string]struct {
		schedule platformv1.TriggerSchedule
		// want are the instants fired, in UTC, by the firings that follow creation.
		want []time.Time
	}{
		"interval": {
			schedule: platformv1.TriggerSchedule{Type: platformv1.IntervalSchedule, Expression: "00:45:00", TimeZone: "Europe/Paris"},
			want:     []time.Time{start.Add(45 * time.Minute), start.Add(90 * time.Minute), start.Add(135 * time.Minute)},
		},
		"cron across a skipped local time": {
			schedule: platformv1.TriggerSchedule{Type: platformv1.CronSchedule, Expression: "30 2 * * *", TimeZone: "Europe/Paris"},
			want:     []time.Time{time.Date(2026, 3, 29, 3, 0, 0, 0, paris), time.Date(2026, 3, 30, 2, 30, 0, 0, paris)},
		},
		"once": {
			schedule: platformv1.TriggerSchedule{Type: platformv1.OnceSchedule, Expression: "2026-03-29T09:15:00", TimeZone: "Europe/Paris"},
			want:     []time.Time{time.Date(2026, 3, 29, 9, 15, 0, 0, paris)},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
				g := NewWithT(t)
				env, clock := newEnv(t, db, start)
				s := newScheduler(env, clock, nil)
				tr := env.Trigger(t, "report", tt.schedule, start, nil)
				s.reconcile(t, tr)
				g.Expect(status(t, env, tr).NextFireTime.Time).To(BeTemporally("==", tt.want[0]))
				for i, want := range tt.want {
					s.stepToNext(t, tr)
					list := history(t, env, tr)
					g.Expect(list).To(HaveLen(i + 1))
					g.Expect(list[0].ScheduledAt).To(BeTemporally("==", want))
					g.Expect(list[0].Outcome).To(Equal(platformv1.OccurrenceSubmitted))
					st := status(t, env, tr)
					g.Expect(st.LastOccurrence.ScheduledTime.Time).To(BeTemporally("==", want))
					g.Expect(st.LastOccurrence.WorkItemID).To(Equal(list[0].WorkItemID))
				}
				st := status(t, env, tr)
				if tt.schedule.Type == platformv1.OnceSchedule {
					g.Expect(st.NextFireTime).To(BeNil(), "a once schedule fires no more")
					g.Expect(s.Registrations()).To(BeZero())
					g.Expect(meta.FindStatusCondition(st.Conditions, platformv1.ReadyCondition).Message).To(ContainSubstring("fires no more"))
				} else {
					g.Expect(st.NextFireTime).NotTo(BeNil())
					g.Expect(s.Registrations()).To(Equal(1))
					g.Expect(meta.FindStatusCondition(st.Conditions, platformv1.ReadyCondition).Message).To(ContainSubstring("is registered"))
				}
			})
		})
	}
}

func TestFireOnceAfterDowntimeSubmitsTheLatestMissedInstantOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		start := time.Date(2026, 1, 30, 9, 0, 0, 0, time.UTC)
		env, clock := newEnv(t, db, start)
		first := newScheduler(env, clock, nil)
		tr := env.Trigger(t, "hourly", platformv1.TriggerSchedule{Type: platformv1.IntervalSchedule, Expression: "01:00:00", TimeZone: "UTC"}, start, nil)
		first.reconcile(t, tr)
		first.stepToNext(t, tr)

		// The service stops for four and a half hours; a new process has an empty registry.
		clock.SetTime(start.Add(5*time.Hour + 30*time.Minute))
		restarted := newScheduler(env, clock, nil)
		restarted.reconcile(t, tr)
		g.Expect(outcomes(history(t, env, tr))).To(Equal([]string{"Submitted@10:00", "Missed@13:00", "Submitted@14:00"}),
			"the missed 11:00 to 13:00 are recorded together, 14:00 is submitted once")
		missed := history(t, env, tr)[1]
		g.Expect(missed.Message).To(ContainSubstring("3 instants from 2026-01-30T11:00:00Z to 2026-01-30T13:00:00Z missed"))
		g.Expect(env.WorkItems(t, string(tr.UID))).To(HaveLen(2))
		at, ok := restarted.registry.next(client.ObjectKeyFromObject(tr))
		g.Expect(ok).To(BeTrue(), "the registration is rebuilt after the restart")
		g.Expect(at).To(BeTemporally("==", start.Add(6*time.Hour)), "anchored at creation: the restart does not shift the interval")

		restarted.reconcile(t, tr)
		g.Expect(history(t, env, tr)).To(HaveLen(3), "a second reconcile decides nothing again")
	})
}

func TestTwoReplicasFiringTheSameTriggerSubmitEachInstantOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		start := time.Date(2026, 1, 30, 9, 0, 0, 0, time.UTC)
		env, clock := newEnv(t, db, start)
		replicas := []*scheduler{newScheduler(env, clock, nil), newScheduler(env, clock, nil)}
		tr := env.Trigger(t, "minutely", platformv1.TriggerSchedule{Type: platformv1.IntervalSchedule, Expression: "00:01:00", TimeZone: "UTC"}, start, nil)
		for _, r := range replicas {
			r.reconcile(t, tr)
		}
		for minute := 1; minute <= 5; minute++ {
			clock.SetTime(start.Add(time.Duration(minute) * time.Minute))
			var wg sync.WaitGroup
			for _, r := range replicas {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-r.registry.events
					// A status write may conflict with the other replica's; the firing does not.
					_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tr)})
					g.Expect(err).NotTo(HaveOccurred())
					if _, ok := r.registry.next(client.ObjectKeyFromObject(tr)); !ok {
						r.reconcile(t, tr)
					}
				}()
			}
			wg.Wait()
		}
		list := history(t, env, tr)
		g.Expect(outcomes(list)).To(Equal([]string{"Submitted@09:01", "Submitted@09:02", "Submitted@09:03", "Submitted@09:04", "Submitted@09:05"}))
		g.Expect(env.WorkItems(t, string(tr.UID))).To(HaveLen(5))
	})
}

// crashing is the durable side of a process that stops at a chosen point of a firing.
type crashing struct {
	Occurrences
	// beforeSubmit: the process computed the occurrence and stopped before submitting it.
	beforeSubmit bool
	// afterSubmit: the process submitted and stopped before anything else (status, registration).
	afterSubmit bool
}

var errCrashed = errors.New("the process stopped")

func (c crashing) Fire(ctx context.Context, t *platformv1.Trigger, f triggers.Firing) (triggers.Occurrence, bool, error) {
	if c.beforeSubmit {
		return triggers.Occurrence{}, false, errCrashed
	}
	o, fired, err := c.Occurrences.Fire(ctx, t, f)
	if c.afterSubmit && err == nil {
		return o, fired, errCrashed
	}
	return o, fired, err
}

func TestARestartBetweenComputingAndSubmittingNeitherLosesNorDuplicatesTheInstant(t *testing.T) {
	for name, crash := range map[string]crashing{"before the submission": {beforeSubmit: true}, "after the submission": {afterSubmit: true}} {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
				g := NewWithT(t)
				start := time.Date(2026, 1, 30, 9, 0, 0, 0, time.UTC)
				env, clock := newEnv(t, db, start)
				crash.Occurrences = env.Service
				dying := newScheduler(env, clock, crash)
				tr := env.Trigger(t, "hourly", platformv1.TriggerSchedule{Type: platformv1.IntervalSchedule, Expression: "01:00:00", TimeZone: "UTC"}, start, nil)
				dying.reconcile(t, tr)
				clock.SetTime(start.Add(time.Hour + time.Second))
				_, err := dying.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tr)})
				g.Expect(err).To(MatchError(errCrashed))

				restarted := newScheduler(env, clock, nil)
				restarted.reconcile(t, tr)
				restarted.reconcile(t, tr)
				g.Expect(outcomes(history(t, env, tr))).To(Equal([]string{"Submitted@10:00"}))
				g.Expect(env.WorkItems(t, string(tr.UID))).To(HaveLen(1))
				g.Expect(status(t, env, tr).LastOccurrence.Outcome).To(Equal(platformv1.OccurrenceSubmitted))
			})
		})
	}
}

func TestARevokedOwnerFailsClosedAndPausesTheTrigger(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		start := time.Date(2026, 1, 30, 9, 0, 0, 0, time.UTC)
		env, clock := newEnv(t, db, start)
		s := newScheduler(env, clock, nil)
		two := int32(2)
		tr := env.Trigger(t, "hourly", platformv1.TriggerSchedule{Type: platformv1.IntervalSchedule, Expression: "01:00:00", TimeZone: "UTC"}, start,
			func(tr *platformv1.Trigger) { tr.Definition.PauseAfterFailures = &two })
		s.reconcile(t, tr)
		s.stepToNext(t, tr)

		env.Authorize(triggerstest.Owner, false)
		s.stepToNext(t, tr)
		st := status(t, env, tr)
		g.Expect(st.LastOccurrence.Outcome).To(Equal(platformv1.OccurrenceFailed))
		g.Expect(st.LastOccurrence.Reason).To(Equal(platformv1.NotAuthorizedReason))
		g.Expect(st.ConsecutiveFailures).To(BeEquivalentTo(1))
		s.stepToNext(t, tr)
		st = status(t, env, tr)
		ready := meta.FindStatusCondition(st.Conditions, platformv1.ReadyCondition)
		g.Expect(ready.Reason).To(Equal(platformv1.PausedReason))
		g.Expect(st.NextFireTime).To(BeNil())
		g.Expect(s.Registrations()).To(BeZero(), "a paused Trigger has no registration")
		g.Expect(outcomes(history(t, env, tr))).To(Equal([]string{"Submitted@10:00", "Failed@11:00", "Failed@12:00"}))

		// Hours later the owner is authorized again and the Trigger resumed: nothing is owed for
		// the pause, the next instant fires.
		env.Authorize(triggerstest.Owner, true)
		clock.SetTime(start.Add(6*time.Hour + 10*time.Minute))
		g.Expect(env.Service.Resume(context.Background(), string(tr.UID))).To(Succeed())
		s.reconcile(t, tr)
		g.Expect(status(t, env, tr).NextFireTime.Time).To(BeTemporally("==", start.Add(7*time.Hour)))
		s.stepToNext(t, tr)
		g.Expect(outcomes(history(t, env, tr))).To(Equal([]string{"Submitted@10:00", "Failed@11:00", "Failed@12:00", "Submitted@16:00"}))
	})
}

func TestADisabledTriggerHasNoRegistrationAndOwesNothingOnceEnabled(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		start := time.Date(2026, 1, 30, 9, 0, 0, 0, time.UTC)
		env, clock := newEnv(t, db, start)
		s := newScheduler(env, clock, nil)
		off := false
		tr := env.Trigger(t, "hourly", platformv1.TriggerSchedule{Type: platformv1.IntervalSchedule, Expression: "01:00:00", TimeZone: "UTC"}, start,
			func(tr *platformv1.Trigger) { tr.Definition.Enabled = &off })
		s.reconcile(t, tr)
		g.Expect(s.Registrations()).To(BeZero())
		g.Expect(meta.FindStatusCondition(status(t, env, tr).Conditions, platformv1.ReadyCondition).Reason).To(Equal(platformv1.DisabledReason))

		clock.SetTime(start.Add(3*time.Hour + 30*time.Minute))
		on := true
		current := &platformv1.Trigger{}
		g.Expect(env.Kube.Get(context.Background(), client.ObjectKeyFromObject(tr), current)).To(Succeed())
		current.Definition.Enabled = &on
		g.Expect(env.Kube.Update(context.Background(), current)).To(Succeed())
		s.reconcile(t, tr)
		g.Expect(history(t, env, tr)).To(BeEmpty(), "the instants of the disabled hours are not owed")
		s.stepToNext(t, tr)
		g.Expect(outcomes(history(t, env, tr))).To(Equal([]string{"Submitted@13:00"}))
	})
}

// The scheduler finds the next instant promptly however rarely the schedule fires and whatever
// the zone's daylight saving rules (these searches once never returned and held a reconcile
// worker forever), and a schedule that never fires is reported on the Trigger, not searched.
func TestRareSchedulesAreRegisteredPromptlyAndOneThatNeverFiresIsReported(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	newYork, _ := time.LoadLocation("America/New_York")
	tests := map[string]struct {
		schedule    platformv1.TriggerSchedule
		start, want time.Time
	}{
		"29 February in Paris waits for the next leap year": {
			schedule: platformv1.TriggerSchedule{Type: platformv1.CronSchedule, Expression: "0 0 29 2 *", TimeZone: "Europe/Paris"},
			start:    time.Date(2040, 2, 29, 0, 30, 0, 0, paris), want: time.Date(2044, 2, 29, 0, 0, 0, 0, paris),
		},
		"@yearly in Paris across the end of 2040": {
			schedule: platformv1.TriggerSchedule{Type: platformv1.CronSchedule, Expression: "@yearly", TimeZone: "Europe/Paris"},
			start:    time.Date(2040, 6, 1, 0, 0, 0, 0, paris), want: time.Date(2041, 1, 1, 0, 0, 0, 0, paris),
		},
		"@yearly in New York across the end of 2040": {
			schedule: platformv1.TriggerSchedule{Type: platformv1.CronSchedule, Expression: "@yearly", TimeZone: "America/New_York"},
			start:    time.Date(2040, 6, 1, 0, 0, 0, 0, newYork), want: time.Date(2041, 1, 1, 0, 0, 0, 0, newYork),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
				g := NewWithT(t)
				env, clock := newEnv(t, db, tt.start)
				s := newScheduler(env, clock, nil)
				tr := env.Trigger(t, "rare", tt.schedule, tt.start, nil)
				done := make(chan error, 1)
				go func() {
					_, err := s.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tr)})
					done <- err
				}()
				select {
				case err := <-done:
					g.Expect(err).NotTo(HaveOccurred())
				case <-time.After(5 * time.Second):
					t.Fatalf("%q in %s: the reconcile did not return", tt.schedule.Expression, tt.schedule.TimeZone)
				}
				g.Expect(status(t, env, tr).NextFireTime.Time).To(BeTemporally("==", tt.want))
				at, ok := s.registry.next(client.ObjectKeyFromObject(tr))
				g.Expect(ok).To(BeTrue())
				g.Expect(at).To(BeTemporally("==", tt.want))
			})
		})
	}

	t.Run("a schedule that never fires", func(t *testing.T) {
		storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
			g := NewWithT(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			env, clock := newEnv(t, db, start)
			s := newScheduler(env, clock, nil)
			tr := env.Trigger(t, "never", platformv1.TriggerSchedule{Type: platformv1.CronSchedule, Expression: "0 0 31 2 *", TimeZone: "Europe/Paris"}, start, nil)
			s.reconcile(t, tr)
			st := status(t, env, tr)
			g.Expect(st.NextFireTime).To(BeNil())
			g.Expect(s.Registrations()).To(BeZero())
			ready := meta.FindStatusCondition(st.Conditions, platformv1.ReadyCondition)
			g.Expect(ready.Status).To(BeEquivalentTo("False"))
			g.Expect(ready.Reason).To(Equal(platformv1.InvalidDefinitionReason))
			g.Expect(ready.Message).To(And(ContainSubstring("definition.source.schedule.expression"), ContainSubstring("never fires")))
		})
	})
}
