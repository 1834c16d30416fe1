package packs

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func TestArchivesAreStoredOnceByDigest(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		s := &Store{DB: db}
		content := []byte("PK\x03\x04 an archive")
		d1, err := s.PutArchive(ctx, content)
		g.Expect(err).NotTo(HaveOccurred())
		d2, err := s.PutArchive(ctx, content)
		g.Expect(err).NotTo(HaveOccurred(), "storing the same bytes again is not an error")
		g.Expect(d2).To(Equal(d1))
		g.Expect(string(d1)).To(HavePrefix("sha256:"))
		got, err := s.Archive(ctx, d1)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(content))
		var n int
		g.Expect(db.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM pack_archives`).Scan(&n)).To(Succeed())
		g.Expect(n).To(Equal(1))
		_, err = s.Archive(ctx, DigestOf([]byte("other")))
		g.Expect(err).To(MatchError(ErrNotFound))
	})
}

func TestBindingSelectionsAreKeptByPackIdentityPerWorkspace(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		s := &Store{DB: db}
		id := Identity{Workspace: "w1", Publisher: "acme", Name: "hello"}
		g.Expect(s.SetBindings(ctx, id, []Selection{{Binding: "model", TargetKind: "modelProfile", Namespace: "default", Name: "a"}})).To(Succeed())
		g.Expect(s.SetBindings(ctx, id, []Selection{{Binding: "model", TargetKind: "modelProfile", Namespace: "default", Name: "b"},
			{Binding: "key", TargetKind: "secret", Namespace: "default", Name: "k"}})).To(Succeed())
		got, err := s.Bindings(ctx, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal([]Selection{{Binding: "key", TargetKind: "secret", Namespace: "default", Name: "k"},
			{Binding: "model", TargetKind: "modelProfile", Namespace: "default", Name: "b"}}))
		other, err := s.Bindings(ctx, Identity{Workspace: "w2", Publisher: "acme", Name: "hello"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(other).To(BeEmpty(), "another workspace's selections are its own")
	})
}
