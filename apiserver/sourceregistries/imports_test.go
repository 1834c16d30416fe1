package sourceregistries

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/registry"
	testregistry "platform.dev/platform/test/registry"
)

// importFetcher is the guarded client of a registration of reg, as the import uses it.
func importFetcher(t *testing.T, reg *testregistry.Server) SourceFetcher {
	t.Helper()
	pool, err := registry.NewPool(reg.Transport())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	sr := &platformv1.SourceRegistry{Definition: platformv1.SourceRegistryDefinition{IndexURL: reg.IndexURL(),
		EndpointPolicy: &platformv1.EndpointPolicy{AllowPrivateNetwork: true}}}
	f, err := Fetchers(pool)(context.Background(), sr)
	if err != nil {
		t.Fatal(err)
	}
	return f.(SourceFetcher)
}

func TestAManifestThatDescribesAnotherVersionThanTheShardListsIsRefused(t *testing.T) {
	g := NewWithT(t)
	reg := testregistry.Start(t, testregistry.MustArchive(t, "acme", "kit", "1.0.0"))
	f := importFetcher(t, reg)
	manifest := testregistry.ManifestPath("acme", "kit", "1.0.0")
	digest := registry.Digest(reg.Document(manifest))
	listed := func(version string) Listed {
		return Listed{Shard: ShardRef{Name: "acme", Location: "shards/acme.json"},
			Version: registry.SourceVersion{Version: version, Manifest: ".." + manifest, ManifestDigest: digest}}
	}

	got, err := f.FetchManifest(context.Background(), reg.IndexURL(), "acme", "kit", listed("1.0.0"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Manifest.Pack.Digest).To(HavePrefix("sha256:"))

	for name, tc := range map[string]struct{ publisher, source, version string }{
		"another version":   {"acme", "kit", "2.0.0"},
		"another Source":    {"acme", "other", "1.0.0"},
		"another publisher": {"other", "kit", "1.0.0"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := f.FetchManifest(context.Background(), reg.IndexURL(), tc.publisher, tc.source, listed(tc.version))
			var refusal *Refusal
			g.Expect(errors.As(err, &refusal)).To(BeTrue(), "%v", err)
			g.Expect(refusal.Code).To(Equal(CodeManifestMismatch))
		})
	}
}

func TestAnArchiveWhoseDigestDiffersFromTheManifestIsRefused(t *testing.T) {
	g := NewWithT(t)
	reg := testregistry.Start(t, testregistry.MustArchive(t, "acme", "kit", "1.0.0"))
	f := importFetcher(t, reg)
	manifest := testregistry.ManifestPath("acme", "kit", "1.0.0")
	got, err := f.FetchManifest(context.Background(), reg.IndexURL(), "acme", "kit", Listed{Shard: ShardRef{Name: "acme", Location: "shards/acme.json"},
		Version: registry.SourceVersion{Version: "1.0.0", Manifest: ".." + manifest, ManifestDigest: registry.Digest(reg.Document(manifest))}})
	g.Expect(err).NotTo(HaveOccurred())
	archive, err := f.FetchArchive(context.Background(), got.URL, got.Manifest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(registry.Digest(archive)).To(Equal(got.Manifest.Pack.Digest))

	reg.Override(testregistry.ArchivePath("acme", "kit", "1.0.0"), testregistry.MustArchive(t, "acme", "kit", "1.0.1"))
	_, err = f.FetchArchive(context.Background(), got.URL, got.Manifest)
	g.Expect(registry.CodeOf(err)).To(Equal(registry.CodeDigestMismatch))
}

func TestTheSameSelectionIsStoredOnceAndReadBackWhole(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		s := &Store{DB: db}
		sel := Selection{RegistrationUID: "reg", ObservationID: "obs", CatalogName: "acme", Publisher: "acme", Source: "kit", Version: "1.0"}
		imp := Imported{ScopeRef: "/instance", Selection: sel, ManifestDigest: "sha256:m", Manifest: []byte(`{"kind":"Manifest"}`),
			Observation: ObservationRef{RegistrationName: "mine", IndexSerial: 7, CatalogDigest: "sha256:c", ManifestURL: "https://r.example/m.json"},
			Trust:       []byte(`{"verificationStatus":"Verified"}`)}
		first, created, err := s.SaveImport(ctx, imp)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(created).To(BeTrue())
		again, created, err := s.SaveImport(ctx, imp)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(created).To(BeFalse(), "the same selection in the same scope is the same import")
		g.Expect(again.ID).To(Equal(first.ID))
		g.Expect(again.Observation).To(Equal(imp.Observation))
		g.Expect(string(again.Trust)).To(MatchJSON(`{"verificationStatus":"Verified"}`))

		other, created, err := s.SaveImport(ctx, Imported{ScopeRef: "/workspaces/w1", Selection: sel, ManifestDigest: "sha256:m", Manifest: []byte(`{}`), Trust: []byte(`{}`)})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(created).To(BeTrue())
		list, total, err := s.Imports(ctx, ImportFilter{Publisher: "acme"}, 0, 10)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(total).To(Equal(2))
		g.Expect(list[0].ID).To(Equal(other.ID), "newest first")
		_, total, err = s.Imports(ctx, ImportFilter{Publisher: "nobody"}, 0, 10)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(total).To(BeZero())
	})
}
