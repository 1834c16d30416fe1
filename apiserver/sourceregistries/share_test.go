package sourceregistries

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/packs/packstest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/registry"
	testregistry "platform.dev/platform/test/registry"
)

// startTestRegistry serves two publishers' Packs over HTTPS on loopback, with a pool trusting it.
func startTestRegistry(t *testing.T) (*testregistry.Server, *registry.Pool) {
	t.Helper()
	g := NewWithT(t)
	reg, err := testregistry.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reg.Start("127.0.0.1:0")).To(Succeed())
	t.Cleanup(reg.Close)
	for _, p := range []packstest.Pack{
		{Publisher: "acme", Name: "kit", Version: "1.0.0", Resources: map[string]string{"agents/kit.yaml": packstest.Agent("kit", "Help")}},
		{Publisher: "other", Name: "tools", Version: "2.0.0", Resources: map[string]string{"agents/tools.yaml": packstest.Agent("tools", "Help")}},
	} {
		g.Expect(reg.AddArchive(p.Zip())).To(Succeed())
	}
	pool, err := registry.NewPool(reg.Transport())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(pool.Close)
	return reg, pool
}

func TestRegistrationsWithTheSameIndexURLShareOneFetchPerIntervalAndEachKeepsItsOwnObservationAndHistory(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		reg, pool := startTestRegistry(t)
		now := &clock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
		cache := &Store{DB: db, Now: now.Now}
		first := periodicRegistration("first", reg.IndexURL())
		second := periodicRegistration("second", reg.IndexURL(), func(d *platformv1.SourceRegistryDefinition) { d.TrustPolicy = platformv1.TrustedPolicy })
		// The same URL, but its requests differ (plain http allowed): it never shares.
		apart := periodicRegistration("apart", reg.IndexURL(), func(d *platformv1.SourceRegistryDefinition) { d.EndpointPolicy.AllowHTTP = true })
		kube := fakeKube(first, second, apart)
		w := &Worker{Kube: kube, Config: config.FromMap(config.Production, nil), Refresher: &Refresher{Store: cache, ErrorCode: ErrorCode},
			Fetchers: (&Clients{Pool: pool}).Fetcher, Interval: time.Minute}
		evaluate := func() {
			_, err := w.Evaluate(ctx, now.Now())
			g.Expect(err).NotTo(HaveOccurred())
			w.Wait()
		}
		acme := testregistry.ShardPath("acme")

		evaluate()
		g.Expect(reg.Requests(testregistry.IndexPath)).To(Equal(2), "first and second share one fetch; apart fetches on its own")
		g.Expect(reg.Requests(acme)).To(Equal(2))
		observations := map[string]bool{}
		for _, r := range []*platformv1.SourceRegistry{first, second, apart} {
			st, err := cache.State(ctx, string(r.UID))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.CurrentObservation).NotTo(BeEmpty(), r.Name)
			observations[st.CurrentObservation] = true
			history, err := cache.Refreshes(ctx, string(r.UID), 0, 10)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(history).To(HaveExactElements(And(HaveField("Trigger", TriggerScheduled), HaveField("Outcome", OutcomeSucceeded))), r.Name)
			var got platformv1.SourceRegistry
			g.Expect(kube.Get(ctx, client.ObjectKey{Name: r.Name}, &got)).To(Succeed())
			g.Expect(got.Status.CurrentObservationID).To(Equal(st.CurrentObservation))
		}
		g.Expect(observations).To(HaveLen(3), "each registration records its own observation")

		// An interval later both are due again: one conditional request (304) validates both.
		now.Add(time.Hour)
		g.Expect(reg.Republish()).To(Succeed())
		evaluate()
		g.Expect(reg.Requests(testregistry.IndexPath)).To(Equal(4))
		for _, r := range []*platformv1.SourceRegistry{first, second} {
			history, _ := cache.Refreshes(ctx, string(r.UID), 0, 1)
			g.Expect(history).To(HaveExactElements(HaveField("Outcome", OutcomeSucceeded)), "%s sees the new index", r.Name)
		}
		g.Expect(reg.Requests(acme)).To(Equal(2), "a shard whose digest did not change is fetched by nobody")

		now.Add(time.Hour)
		evaluate()
		g.Expect(reg.Requests(testregistry.IndexPath)).To(Equal(6))
		for _, r := range []*platformv1.SourceRegistry{first, second} {
			history, _ := cache.Refreshes(ctx, string(r.UID), 0, 1)
			g.Expect(history).To(HaveExactElements(HaveField("Outcome", OutcomeNotModified)), "%s: the shared 304 validates it", r.Name)
		}
	})
}

func TestASharedFetchServesTheRegistrationsDueInTheSameOrTheNextEvaluationOnly(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		reg, pool := startTestRegistry(t)
		start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
		now := &clock{t: start}
		cache := &Store{DB: db, Now: now.Now}
		fetching, next, later := periodicRegistration("fetching", reg.IndexURL()), periodicRegistration("next", reg.IndexURL()), periodicRegistration("later", reg.IndexURL())
		// next and later were last validated long ago (with another index): due one and two
		// evaluations (minutes) from now.
		g.Expect(cache.RecordValidated(ctx, string(next.UID), start.Add(-59*time.Minute))).To(Succeed())
		g.Expect(cache.RecordValidated(ctx, string(later.UID), start.Add(-58*time.Minute))).To(Succeed())
		w := &Worker{Kube: fakeKube(fetching, next, later), Config: config.FromMap(config.Production, nil), Refresher: &Refresher{Store: cache, ErrorCode: ErrorCode},
			Fetchers: (&Clients{Pool: pool}).Fetcher, Interval: time.Minute}
		evaluate := func() int {
			n, err := w.Evaluate(ctx, now.Now())
			g.Expect(err).NotTo(HaveOccurred())
			w.Wait()
			return n
		}
		g.Expect(evaluate()).To(Equal(1))
		g.Expect(reg.Requests(testregistry.IndexPath)).To(Equal(1))
		now.Add(time.Minute)
		g.Expect(evaluate()).To(Equal(1))
		g.Expect(reg.Requests(testregistry.IndexPath)).To(Equal(1), "the next evaluation reuses the fetch")
		history, _ := cache.Refreshes(ctx, string(next.UID), 0, 1)
		g.Expect(history).To(HaveExactElements(HaveField("Outcome", OutcomeSucceeded)))
		now.Add(time.Minute)
		g.Expect(evaluate()).To(Equal(1))
		g.Expect(reg.Requests(testregistry.IndexPath)).To(Equal(2), "two evaluations later the fetch is too old to share, even though next reused it")
	})
}
