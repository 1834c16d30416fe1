package installedpack

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// CollectableArchives is an archive store the collector can sweep (apiserver/packs.Store).
type CollectableArchives interface {
	CollectArchives(ctx context.Context, after platformv1.Digest, storedBefore time.Time, scan int,
		inUse func(platformv1.Digest) bool) ([]platformv1.Digest, platformv1.Digest, error)
}

// Collector bounds.
const (
	// DefaultCollectInterval is how often the collector makes a pass.
	DefaultCollectInterval = 10 * time.Minute
	// DefaultCollectGrace keeps an archive stored this recently: the install that stored it
	// names it in its InstalledPack right after.
	DefaultCollectGrace = time.Hour
	// collectScan bounds the archives one pass looks at (and so removes).
	collectScan = 100
	// listChunk is the page of InstalledPacks read at a time.
	listChunk = 500
)

// ArchiveCollector removes the stored Pack archives that no InstalledPack refers to: not as the
// desired archive, the installed one, the one retained for rollback, nor in the journal of its
// operation. Each pass is bounded and goes on where the previous one stopped.
type ArchiveCollector struct {
	// Reader lists the InstalledPacks of every workspace, uncached.
	Reader client.Reader
	Store  CollectableArchives
	// Interval and Grace: DefaultCollectInterval and DefaultCollectGrace when zero.
	Interval, Grace time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	Log logr.Logger

	cursor platformv1.Digest
}

// NeedLeaderElection: one replica collects.
func (c *ArchiveCollector) NeedLeaderElection() bool { return true }

// Start makes a pass every interval until ctx ends; a failed pass is logged and tried again at
// the next.
func (c *ArchiveCollector) Start(ctx context.Context) error {
	interval := c.Interval
	if interval <= 0 {
		interval = DefaultCollectInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		removed, err := c.Collect(ctx)
		if err != nil && ctx.Err() == nil {
			c.Log.Error(err, "collecting Pack archives")
		}
		if len(removed) > 0 {
			c.Log.Info("removed Pack archives no installation refers to", "count", len(removed))
		}
	}
}

// Collect makes one pass and returns the digests it removed.
func (c *ArchiveCollector) Collect(ctx context.Context) ([]platformv1.Digest, error) {
	// The references are read before the archives: an archive stored after this read is
	// younger than the grace and stays.
	inUse, err := c.references(ctx)
	if err != nil {
		return nil, err
	}
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultCollectGrace
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	removed, next, err := c.Store.CollectArchives(ctx, c.cursor, now().Add(-grace), collectScan, func(d platformv1.Digest) bool { return inUse[d] })
	if err == nil {
		c.cursor = next
	}
	return removed, err
}

// references are the digests some InstalledPack refers to.
func (c *ArchiveCollector) references(ctx context.Context) (map[platformv1.Digest]bool, error) {
	refs := map[platformv1.Digest]bool{}
	list := &platformv1.InstalledPackList{}
	for {
		if err := c.Reader.List(ctx, list, client.Limit(listChunk), client.Continue(list.Continue)); err != nil {
			return nil, err
		}
		for i := range list.Items {
			for _, d := range Digests(&list.Items[i]) {
				refs[d] = true
			}
		}
		if list.Continue == "" {
			return refs, nil
		}
	}
}

// Digests are the archives ip refers to.
func Digests(ip *platformv1.InstalledPack) []platformv1.Digest {
	out := []platformv1.Digest{ip.Definition.ArchiveDigest, ip.Definition.Source.Digest, ip.Status.InstalledDigest, ip.Status.RetainedDigest}
	for _, s := range []*platformv1.PackSource{ip.Status.InstalledSource, ip.Status.RetainedSource} {
		if s != nil {
			out = append(out, s.Digest)
		}
	}
	if op := ip.Status.Operation; op != nil {
		out = append(out, op.FromDigest, op.ToDigest)
	}
	return out
}
