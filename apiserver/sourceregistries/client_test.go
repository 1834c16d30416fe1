package sourceregistries

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/packs/packstest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/registry"
	testregistry "platform.dev/platform/test/registry"
)

// Against the test registry over HTTPS on loopback, through the guarded client: the request and
// byte counts are the registry's own.
func TestARefreshAtTheTestRegistryTransfersNoBodyOn304AndRefetchesOnlyTheChangedShard(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		reg, err := testregistry.New(t.TempDir())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(reg.Start("127.0.0.1:0")).To(Succeed())
		defer reg.Close()
		for _, p := range []packstest.Pack{
			{Publisher: "acme", Name: "kit", Version: "1.0.0", Resources: map[string]string{"agents/kit.yaml": packstest.Agent("kit", "Help")}},
			{Publisher: "other", Name: "tools", Version: "2.0.0", Resources: map[string]string{"agents/tools.yaml": packstest.Agent("tools", "Help")}},
		} {
			g.Expect(reg.AddArchive(p.Zip())).To(Succeed())
		}
		pool, err := registry.NewPool(reg.Transport())
		g.Expect(err).NotTo(HaveOccurred())
		defer pool.Close()
		sr := &platformv1.SourceRegistry{Definition: platformv1.SourceRegistryDefinition{IndexURL: reg.IndexURL(),
			EndpointPolicy: &platformv1.EndpointPolicy{AllowPrivateNetwork: true}}}
		sr.UID = "uid-e2e"
		fetcher, err := Fetchers(pool)(ctx, sr)
		g.Expect(err).NotTo(HaveOccurred())
		r := &Refresher{Store: &Store{DB: db}, ErrorCode: ErrorCode}
		run := func() RefreshRecord {
			rec, _, err := r.Run(ctx, Refresh{RegistrationUID: "uid-e2e", IndexURL: reg.IndexURL(), Trigger: TriggerManual, Policy: PolicyOf(sr.Definition), Retain: 3, Fetcher: fetcher})
			g.Expect(err).NotTo(HaveOccurred())
			return rec
		}
		g.Expect(run().Outcome).To(Equal(OutcomeSucceeded))
		acme, other := testregistry.ShardPath("acme"), testregistry.ShardPath("other")
		g.Expect(reg.Requests(acme)).To(Equal(1))
		g.Expect(reg.Requests(other)).To(Equal(1))
		indexBytes := reg.BodyBytes(testregistry.IndexPath)

		g.Expect(run().Outcome).To(Equal(OutcomeNotModified))
		g.Expect(reg.Requests(testregistry.IndexPath)).To(Equal(2))
		g.Expect(reg.BodyBytes(testregistry.IndexPath)).To(Equal(indexBytes), "a 304 transfers no body")

		g.Expect(reg.SetPublisherStatus("acme", registry.Verified)).To(Succeed())
		g.Expect(run().Outcome).To(Equal(OutcomeSucceeded))
		g.Expect(reg.Requests(acme)).To(Equal(2), "the changed shard is fetched")
		g.Expect(reg.Requests(other)).To(Equal(1), "an unchanged shard is not")

		g.Expect(reg.ServeOlderIndex()).To(Succeed())
		g.Expect(run()).To(And(HaveField("Outcome", OutcomeFailed), HaveField("ErrorCode", CodeRollback)))
	})
}
