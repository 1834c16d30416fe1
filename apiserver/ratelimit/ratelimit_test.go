package ratelimit_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
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
// not in a replica's memory, and concurrent requests are counted exactly, none lost.
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
		g.Expect(refused).To(HaveLen(10), "40 of 50 requests pass, wherever they arrive")
		g.Expect(refused[0].Limit).To(Equal(ratelimit.WorkspaceRequests))
		g.Expect(refused[0].RetryAfter).To(Equal(900*time.Millisecond), "the second's window ends 900 ms later")
		g.Expect(refused[0].RetryAfterSeconds()).To(Equal(1))

		r, err := replicas[1].Take(context.Background(), "ws-b", "", limits, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r).To(BeNil(), "another workspace counts apart")
		g.Eventually(func(g Gomega) {
			n, last, err := replicas[0].Recent(context.Background(), "ws-a")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(BeNumerically("==", 10), "both replicas' refusals are counted for the Console, those answered from memory too")
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
