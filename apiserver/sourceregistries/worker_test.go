package sourceregistries

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/config"
	testregistry "platform.dev/platform/test/registry"
)

// clock is a settable time for the store and the worker's evaluations.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// periodicRegistration is a registration refreshed every hour, retried after a minute, without
// jitter, so that the tests know when it is due.
func periodicRegistration(name, url string, mutate ...func(*platformv1.SourceRegistryDefinition)) *platformv1.SourceRegistry {
	reg := &platformv1.SourceRegistry{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Definition: platformv1.SourceRegistryDefinition{IndexURL: url, Enabled: ptr.To(true),
			EndpointPolicy: &platformv1.EndpointPolicy{AllowPrivateNetwork: true},
			RefreshPolicy: &platformv1.RefreshPolicy{PeriodicEnabled: true, Interval: "01:00:00", InitialBackoff: "00:01:00",
				MaximumBackoff: "00:10:00", Jitter: "00:00:00", Timeout: "00:00:10"}}}
	for _, m := range mutate {
		m(&reg.Definition)
	}
	return reg
}

func fakeKube(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(objs...).
		WithStatusSubresource(&platformv1.SourceRegistry{}).Build()
}

// lockedRegistry is a fakeRegistry the worker's goroutines may call.
type lockedRegistry struct {
	mu sync.Mutex
	fakeRegistry
}

func (l *lockedRegistry) FetchIndex(ctx context.Context, etag, lm string) (*IndexFetch, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fakeRegistry.FetchIndex(ctx, etag, lm)
}

func (l *lockedRegistry) FetchShard(ctx context.Context, ref ShardRef) (*FetchedShard, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fakeRegistry.FetchShard(ctx, ref)
}

func (l *lockedRegistry) requests() int { l.mu.Lock(); defer l.mu.Unlock(); return l.indexRequests }

func TestThePeriodicWorkerRefreshesOnlyEnabledPeriodicRegistrationsWhenTheirPersistedStateMakesThemDue(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		now := &clock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
		registries := map[string]*lockedRegistry{}
		var regs []client.Object
		for name, mutate := range map[string]func(*platformv1.SourceRegistryDefinition){
			"periodic": func(*platformv1.SourceRegistryDefinition) {},
			"off":      func(d *platformv1.SourceRegistryDefinition) { d.RefreshPolicy.PeriodicEnabled = false },
			"disabled": func(d *platformv1.SourceRegistryDefinition) { d.Enabled = ptr.To(false) },
			"default":  func(d *platformv1.SourceRegistryDefinition) { d.RefreshPolicy = nil },
		} {
			url := "https://" + name + ".example/index.json"
			registries[url] = &lockedRegistry{fakeRegistry: fakeRegistry{serial: 1, shardDigest: "s1"}}
			regs = append(regs, periodicRegistration(name, url, mutate))
		}
		kube := fakeKube(regs...)
		cache := &Store{DB: db, Now: now.Now}
		w := &Worker{Kube: kube, Config: config.FromMap(config.Production, nil), Refresher: &Refresher{Store: cache},
			Fetchers: func(_ context.Context, reg *platformv1.SourceRegistry) (Fetcher, error) {
				return registries[reg.Definition.IndexURL], nil
			}}
		evaluate := func() int {
			n, err := w.Evaluate(ctx, now.Now())
			g.Expect(err).NotTo(HaveOccurred())
			w.Wait()
			return n
		}
		periodic := registries["https://periodic.example/index.json"]

		g.Expect(evaluate()).To(Equal(1), "only the enabled registration with periodicEnabled is refreshed")
		for url, reg := range registries {
			if reg != periodic {
				g.Expect(reg.requests()).To(BeZero(), "%s: periodic refresh is off by default, and a disabled registration gets no scheduled work", url)
			}
		}
		history, err := cache.Refreshes(ctx, "uid-periodic", 0, 10)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history).To(HaveExactElements(And(HaveField("Trigger", TriggerScheduled), HaveField("Outcome", OutcomeSucceeded))))
		var got platformv1.SourceRegistry
		g.Expect(kube.Get(ctx, client.ObjectKey{Name: "periodic"}, &got)).To(Succeed())
		g.Expect(got.Status.LastRefresh).To(HaveField("Trigger", platformv1.RefreshTrigger(TriggerScheduled)), "the status shows the scheduled refresh")

		now.Add(59 * time.Minute)
		g.Expect(evaluate()).To(BeZero(), "not due before its interval")
		now.Add(time.Minute)
		g.Expect(evaluate()).To(Equal(1), "due once its interval passed since the persisted last attempt")
		g.Expect(periodic.requests()).To(Equal(2))

		periodic.mu.Lock()
		periodic.fail = errors.New("connection refused")
		periodic.mu.Unlock()
		now.Add(time.Hour)
		g.Expect(evaluate()).To(Equal(1))
		st, _ := cache.State(ctx, "uid-periodic")
		g.Expect(st.ConsecutiveFailures).To(Equal(1))
		now.Add(59 * time.Second)
		g.Expect(evaluate()).To(BeZero(), "a failure backs off for initialBackoff")
		now.Add(time.Second)
		g.Expect(evaluate()).To(Equal(1), "and is retried then, not after the whole interval")
		st, _ = cache.State(ctx, "uid-periodic")
		g.Expect(st.ConsecutiveFailures).To(Equal(2))

		// A new Worker (a restart) reads the same persisted state: still backing off (2 minutes).
		restarted := &Worker{Kube: kube, Config: w.Config, Refresher: &Refresher{Store: cache}, Fetchers: w.Fetchers}
		n, err := restarted.Evaluate(ctx, now.Now().Add(time.Minute))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(BeZero(), "the schedule survives a restart: it comes from the store")
	})
}

func TestARefreshLockHeldByAnotherReplicaSkipsScheduledWorkMakesAManualRefreshWaitAndLapsesWhenItsLeaseEnds(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		now := &clock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
		cache := &Store{DB: db, Now: now.Now}
		reg := &fakeRegistry{serial: 1, shardDigest: "s1"}
		here := &Refresher{Store: cache, Holder: "replica-here", LockWait: 300 * time.Millisecond}
		refresh := func(trigger string) (RefreshRecord, error) {
			rec, _, err := here.Run(ctx, Refresh{RegistrationUID: "reg-l", IndexURL: "https://r.example/i.json", Trigger: trigger,
				Policy: PolicyOf(emptyDefinition), Fetcher: reg})
			return rec, err
		}
		taken, err := cache.TryLock(ctx, "reg-l", "replica-there", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(taken).To(BeTrue())

		_, err = refresh(TriggerScheduled)
		g.Expect(err).To(MatchError(ErrRefreshInProgress), "a scheduled refresh leaves the work to the replica that runs it")
		started := time.Now()
		_, err = refresh(TriggerManual)
		g.Expect(err).To(MatchError(ErrRefreshInProgress))
		g.Expect(time.Since(started)).To(BeNumerically(">=", 300*time.Millisecond), "a manual refresh waits briefly first")
		g.Expect(reg.indexRequests).To(BeZero())

		now.Add(61 * time.Second) // the other replica died: its lease lapses
		rec, err := refresh(TriggerScheduled)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rec.Outcome).To(Equal(OutcomeSucceeded))
		holder, _, err := cache.LockHolder(ctx, "reg-l")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(holder).To(BeEmpty(), "the lock is released after the refresh")

		// The other replica takes the lock and releases it while a manual refresh waits.
		_, _ = cache.TryLock(ctx, "reg-l", "replica-there", time.Minute)
		go func() { time.Sleep(100 * time.Millisecond); _ = cache.Unlock(ctx, "reg-l", "replica-there") }()
		rec, err = refresh(TriggerManual)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rec.Outcome).To(Equal(OutcomeNotModified))
	})
}

func TestAReplicaWhoseLeaseLapsedCannotWriteItsRefresh(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		now := &clock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
		cache := &Store{DB: db, Now: now.Now}
		for name, write := range map[string]func(holder string) error{
			"an observation": func(h string) error {
				_, _, err := cache.saveObservation(ctx, h, observation("reg-f", 1, "sha256:one"), nil, nil)
				return err
			},
			"a failure":    func(h string) error { return cache.recordFailure(ctx, "reg-f", h, now.Now()) },
			"a validation": func(h string) error { return cache.recordValidated(ctx, "reg-f", h, now.Now()) },
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				taken, err := cache.TryLock(ctx, "reg-f", "stalled", time.Minute)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(taken).To(BeTrue())
				now.Add(2 * time.Minute)
				taken, err = cache.TryLock(ctx, "reg-f", "successor", time.Minute)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(taken).To(BeTrue(), "an expired lease is taken over")
				g.Expect(write("stalled")).To(MatchError(ErrLeaseLost))
				g.Expect(cache.RenewLock(ctx, "reg-f", "stalled", time.Minute)).To(MatchError(ErrLeaseLost))
				g.Expect(cache.Unlock(ctx, "reg-f", "stalled")).To(Succeed())
				holder, _, _ := cache.LockHolder(ctx, "reg-f")
				g.Expect(holder).To(Equal("successor"), "the stalled replica's unlock does not release its successor's lock")
				g.Expect(cache.Unlock(ctx, "reg-f", "successor")).To(Succeed())
			})
		}
		st, err := cache.State(ctx, "reg-f")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st).To(And(HaveField("CurrentObservation", BeEmpty()), HaveField("ConsecutiveFailures", BeZero()), HaveField("LastAttemptAt", BeZero())))
	})
}

func TestTheWorkerStopsWhenItsContextEndsAndDoesNotRecordTheAttemptItCanceled(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		reg, pool := startTestRegistry(t)
		reg.Hang(testregistry.IndexPath)
		hanging := periodicRegistration("hanging", reg.IndexURL())
		cache := &Store{DB: db}
		w := &Worker{Kube: fakeKube(hanging), Config: config.FromMap(config.Production, nil), Refresher: &Refresher{Store: cache, ErrorCode: ErrorCode},
			Fetchers: (&Clients{Pool: pool}).Fetcher, Interval: 20 * time.Millisecond}
		ctx, stop := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); w.Run(ctx) }()
		g.Eventually(func() int { return reg.Requests(testregistry.IndexPath) }).Should(Equal(1))
		time.Sleep(100 * time.Millisecond) // evaluations go on meanwhile: the running group is not started twice
		g.Expect(reg.Requests(testregistry.IndexPath)).To(Equal(1))
		stop()
		g.Eventually(stopped).Within(2 * time.Second).Should(BeClosed())

		history, err := cache.Refreshes(context.Background(), string(hanging.UID), 0, 10)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history).To(BeEmpty(), "a stop is no failure of the registry")
		st, _ := cache.State(context.Background(), string(hanging.UID))
		g.Expect(st.LastAttemptAt).To(BeZero(), "so it is due again at the next start")
		holder, _, _ := cache.LockHolder(context.Background(), string(hanging.UID))
		g.Expect(holder).To(BeEmpty(), "and its lock is released")
	})
}
