package ratelimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/ratelimit"
)

// A token refused past a per-second request limit has its admitted requests spread one every
// 1/limit of a second, for a while after its last refusal; any other token, or one refused by
// runs per minute, is never held; a caller that goes away stops waiting; the paced tokens are
// bounded.
func TestATokenRefusedLatelyHasItsAdmittedRequestsSpreadOverItsWindow(t *testing.T) {
	ctx := context.Background()
	t.Run("a token never refused is never held", func(t *testing.T) {
		g := NewWithT(t)
		var p ratelimit.Pacer
		began := time.Now()
		for range 1000 {
			g.Expect(p.Wait(ctx, "calm")).To(Succeed())
		}
		g.Expect(time.Since(began)).To(BeNumerically("<", 100*time.Millisecond))
	})
	t.Run("a flooding token's requests start one every 1/limit of a second", func(t *testing.T) {
		g := NewWithT(t)
		var p ratelimit.Pacer
		p.Refused("hot", &ratelimit.Refusal{Limit: ratelimit.TokenRequests, Allowed: 200})
		began := time.Now()
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			finished []time.Duration
		)
		for range 21 {
			wg.Go(func() {
				g.Expect(p.Wait(ctx, "hot")).To(Succeed())
				mu.Lock()
				finished = append(finished, time.Since(began))
				mu.Unlock()
			})
		}
		wg.Wait()
		g.Expect(finished).To(HaveLen(21))
		// 21 requests at 200 a second: the last starts 100 ms after the first, not with it.
		g.Expect(time.Since(began)).To(BeNumerically(">=", 95*time.Millisecond))
		g.Expect(p.Wait(ctx, "calm")).To(Succeed(), "another token is not held by it")
	})
	t.Run("runs per minute do not pace", func(t *testing.T) {
		g := NewWithT(t)
		var p ratelimit.Pacer
		p.Refused("runner", &ratelimit.Refusal{Limit: ratelimit.TokenRuns, Allowed: 1})
		g.Expect(p.Paced()).To(BeZero())
	})
	t.Run("pacing ends a while after the last refusal and the token is forgotten", func(t *testing.T) {
		g := NewWithT(t)
		now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
		p := ratelimit.Pacer{For: 10 * time.Second, Now: func() time.Time { return now }}
		p.Refused("hot", &ratelimit.Refusal{Limit: ratelimit.WorkspaceRequests, Allowed: 1})
		g.Expect(p.Paced()).To(Equal(1))
		now = now.Add(11 * time.Second)
		began := time.Now()
		g.Expect(p.Wait(ctx, "hot")).To(Succeed())
		g.Expect(p.Wait(ctx, "hot")).To(Succeed())
		g.Expect(time.Since(began)).To(BeNumerically("<", 500*time.Millisecond), "at 1 a second, a paced second request would wait 1 s")
		g.Expect(p.Paced()).To(BeZero())
	})
	t.Run("a caller that goes away stops waiting", func(t *testing.T) {
		g := NewWithT(t)
		var p ratelimit.Pacer
		p.Refused("hot", &ratelimit.Refusal{Limit: ratelimit.TokenRequests, Allowed: 1})
		g.Expect(p.Wait(ctx, "hot")).To(Succeed())
		gone, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		began := time.Now()
		g.Expect(p.Wait(gone, "hot")).To(MatchError(context.DeadlineExceeded))
		g.Expect(time.Since(began)).To(BeNumerically("<", 500*time.Millisecond))
	})
	t.Run("the tokens paced at once are bounded", func(t *testing.T) {
		g := NewWithT(t)
		p := ratelimit.Pacer{MaxKeys: 2}
		for _, id := range []string{"a", "b", "c"} {
			p.Refused(id, &ratelimit.Refusal{Limit: ratelimit.TokenRequests, Allowed: 10})
		}
		g.Expect(p.Paced()).To(Equal(2))
	})
}
