package ratelimit_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func open(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Two replicas on one database count the same requests together: the counters live in the store,
// and each replica leases its share of a window from them. A window never admits more than its
// limit, and at most a lease and a half (three twentieths of the limit) fewer: what the other
// replica leased, the next lease taken ahead included, and had not used yet.
func TestTwoReplicasOnOneDatabaseCountTogether(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		now := time.Now().Truncate(time.Minute).Add(100 * time.Millisecond)
		clock := func() time.Time { return now }
		replicas := []*ratelimit.Counter{{DB: open(t, opts), Now: clock}, {DB: open(t, opts), Now: clock}}
		limits := ratelimit.Limits{RequestsPerSecond: 40}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			refused []*ratelimit.Refusal
		)
		for i := range 50 {
			wg.Go(func() {
				r, err := replicas[i%2].Take(context.Background(), "ws-a", "", limits, false)
				g.Expect(err).NotTo(HaveOccurred())
				if r != nil {
					mu.Lock()
					refused = append(refused, r)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		g.Expect(len(refused)).To(BeNumerically(">=", 10), "at most 40 of 50 requests pass, wherever they arrive")
		g.Expect(len(refused)).To(BeNumerically("<=", 16), "at least 40 pass but the other replica's unused lease and a half, at most 6")
		g.Expect(refused[0].Limit).To(Equal(ratelimit.WorkspaceRequests))
		g.Expect(refused[0].RetryAfter).To(Equal(900*time.Millisecond), "the second's window ends 900 ms later")
		g.Expect(refused[0].RetryAfterSeconds()).To(Equal(1))

		r, err := replicas[1].Take(context.Background(), "ws-b", "", limits, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r).To(BeNil(), "another workspace counts apart")
		g.Eventually(func(g Gomega) {
			n, last, err := replicas[0].Recent(context.Background(), "ws-a")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(BeNumerically("==", len(refused)), "both replicas' refusals are counted for the Console")
			g.Expect(last).To(Equal(now.Truncate(time.Minute).UTC()))
		}).WithTimeout(5 * time.Second).Should(Succeed())

		now = now.Add(time.Second)
		r, err = replicas[0].Take(context.Background(), "ws-a", "", limits, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r).To(BeNil(), "the next window starts again from nothing")
	})
}

// Without a limit nothing is counted: a workspace with no limits costs no write.
func TestNoLimitCountsNothing(t *testing.T) {
	g := NewWithT(t)
	s := open(t, store.Options{DataDir: t.TempDir()})
	c := &ratelimit.Counter{DB: s}
	for range 3 {
		r, err := c.Take(context.Background(), "ws", "token", ratelimit.Limits{}, true)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r).To(BeNil())
	}
	var n int
	g.Expect(s.DB().QueryRow(`SELECT COUNT(*) FROM rate_counters`).Scan(&n)).To(Succeed())
	g.Expect(n).To(BeZero())
}

// A replica alone counts a window exactly, and a flood past the limit costs the store a few
// leases, not a write per request: 100 of 1,000 requests pass, in at most 15 statements.
func TestAFloodPastItsLimitCostsTheStoreAFewLeases(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		s := open(t, opts)
		now := time.Now().Truncate(time.Minute).Add(100 * time.Millisecond)
		c := &ratelimit.Counter{DB: s, Now: func() time.Time { return now }}
		limits := ratelimit.Limits{TokenRequestsPerSecond: 100}
		before := s.Counts()
		var (
			wg            sync.WaitGroup
			passed, shown atomic.Int64
		)
		for range 8 {
			wg.Go(func() {
				for range 125 {
					r, err := c.Take(context.Background(), "ws", "token", limits, false)
					g.Expect(err).NotTo(HaveOccurred())
					if r == nil {
						passed.Add(1)
					} else if r.Limit == ratelimit.TokenRequests {
						shown.Add(1)
					}
				}
			})
		}
		wg.Wait()
		g.Expect(passed.Load()).To(BeNumerically("==", 100), "exactly the limit passes on one replica")
		g.Expect(shown.Load()).To(BeNumerically("==", 900))
		g.Expect(s.Counts().Sub(before).Statements).To(BeNumerically("<=", 15), "leases of 1, 2, 4, 8 and then 10 at a time, and the full window from memory")
	})
}

// The counters of workspaces and tokens that never come back are forgotten once their windows
// ended, and a replica never remembers more than MaxKeys of them: past it, a counter is counted in
// the store request by request, still limited.
func TestAReplicaRemembersABoundedNumberOfCounters(t *testing.T) {
	g := NewWithT(t)
	s := open(t, store.Options{DataDir: t.TempDir()})
	now := time.Now().Truncate(time.Minute).Add(100 * time.Millisecond)
	c := &ratelimit.Counter{DB: s, Now: func() time.Time { return now }, MaxKeys: 10}
	limits := ratelimit.Limits{RequestsPerSecond: 1}
	for i := range 30 {
		r, err := c.Take(context.Background(), fmt.Sprintf("ws-%d", i), "", limits, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r).To(BeNil())
		var digest [32]byte
		digest[0] = byte(i)
		c.RememberBearer(digest, fmt.Sprintf("ws-%d", i), "token")
	}
	g.Expect(c.Remembered()).To(BeNumerically("<=", 20), "at most 10 counters and 10 tokens")
	r, err := c.Take(context.Background(), "ws-29", "", limits, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r).NotTo(BeNil(), "a counter not remembered is still limited, by the store")

	now = now.Add(2 * time.Minute)
	_, err = c.Take(context.Background(), "ws-new", "", limits, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Remembered()).To(Equal(1), "the windows that ended and the tokens not refused lately are forgotten")
}

// BenchmarkTake is what counting costs one request with a workspace and a token limit (one upsert
// of two rows), by 1 and 16 concurrent callers: on SQLite concurrent upserts share a commit.
func BenchmarkTake(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		c := &ratelimit.Counter{DB: s}
		limits := ratelimit.Limits{RequestsPerSecond: 1 << 30, TokenRequestsPerSecond: 1 << 30}
		for _, callers := range []int{1, 16} {
			b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
				b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := c.Take(context.Background(), "ws", "token", limits, false); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	})
}

// A steady caller's requests do not wait for the store: a counter leases its next batch in the
// background once half of one is used, so while another writer holds SQLite's single write lock
// the requests go on being admitted from memory.
func TestASteadyCallerIsAdmittedWhileTheStoreIsBusyWriting(t *testing.T) {
	g := NewWithT(t)
	s := open(t, store.Options{DataDir: t.TempDir()})
	now := time.Now().Truncate(time.Minute).Add(100 * time.Millisecond)
	c := &ratelimit.Counter{DB: s, Now: func() time.Time { return now }}
	limits := ratelimit.Limits{RequestsPerSecond: 1000}
	take := func() {
		r, err := c.Take(context.Background(), "ws", "", limits, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r).To(BeNil())
	}
	// Leased one request at a time when they come, these 227 would use up leases of 1, 2, 4, ...,
	// 64 and 100: the next request would wait for a write.
	for range 227 {
		take()
	}
	time.Sleep(100 * time.Millisecond) // the lease taken ahead is in
	busy, err := s.DB().BeginTx(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(busy.QueryRow(`SELECT 1`).Scan(new(int))).To(Succeed())
	_, err = busy.Exec(`INSERT INTO rate_counters (counter, window_start, hits, expires_at) VALUES ('other', 0, 1, 0)`)
	g.Expect(err).NotTo(HaveOccurred(), "the write lock is held")
	released := time.AfterFunc(2*time.Second, func() { _ = busy.Rollback() })
	defer func() {
		if released.Stop() {
			_ = busy.Rollback()
		}
	}()
	began := time.Now()
	for range 40 {
		take()
	}
	g.Expect(time.Since(began)).To(BeNumerically("<", time.Second), "40 requests admitted while the store's writer is busy")
}
