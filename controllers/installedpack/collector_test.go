package installedpack

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/apiserver/store"
)

func TestTheArchiveCollectorRemovesOnlyArchivesThatNoInstallationRefersTo(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { db.Close() })
	stored := time.Now().Add(-2 * time.Hour)
	archives := &packs.Store{DB: db, Now: func() time.Time { return stored }}
	put := func(name string) platformv1.Digest {
		d, err := archives.PutArchive(ctx, []byte("PK archive "+name))
		g.Expect(err).NotTo(HaveOccurred())
		return d
	}
	desired, installed, retained, journaled := put("desired"), put("installed"), put("retained"), put("journaled")
	var orphans []platformv1.Digest
	for i := range 150 {
		orphans = append(orphans, put(fmt.Sprintf("orphan %d", i)))
	}
	revived := put("revived")
	// Stored a moment ago by an install that has not named it yet; and stored long ago, then
	// again by such an install.
	stored = time.Now()
	fresh := put("fresh")
	g.Expect(put("revived")).To(Equal(revived))

	ip := &platformv1.InstalledPack{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "acme.kit"},
		Definition: platformv1.InstalledPackDefinition{Publisher: "acme", Name: "kit", ArchiveDigest: desired},
		Status: platformv1.InstalledPackStatus{InstalledDigest: installed, RetainedDigest: retained,
			Operation: &platformv1.PackOperation{Kind: platformv1.PackOperationUpdate, FromDigest: journaled, ToDigest: desired, Phase: platformv1.PackApplying}}}
	c := &ArchiveCollector{Reader: fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(ip).Build(), Store: archives}

	first, err := c.Collect(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(first)).To(BeNumerically("<=", collectScan), "a pass is bounded")
	g.Expect(len(first)).To(BeNumerically(">", 0))
	var removed []platformv1.Digest
	removed = append(removed, first...)
	for range 3 {
		more, err := c.Collect(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		removed = append(removed, more...)
	}
	g.Expect(removed).To(ConsistOf(orphans), "the next passes go on where the first stopped")
	for _, d := range []platformv1.Digest{desired, installed, retained, journaled, fresh, revived} {
		_, err := archives.Archive(ctx, d)
		g.Expect(err).NotTo(HaveOccurred(), "%s is in use or new", d)
	}
	_, err = archives.Archive(ctx, orphans[0])
	g.Expect(err).To(MatchError(packs.ErrNotFound))

}
