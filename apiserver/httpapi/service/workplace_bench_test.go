package service_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// BenchmarkQuickAnswerEndToEnd: the demo Entry quick-answer opened through the Workplace API and
// answered to an Idle conversation (its Interaction, first message, WorkItem and FlowRun in one
// transaction, the run executed and projected onto the conversation), by 1 and 64 concurrent
// clients; the latency is open -> answered as a client sees it. raw-commits is the ceiling of
// the same store in the same run.
func BenchmarkQuickAnswerEndToEnd(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		b.Run("raw-commits", func(b *testing.B) { storetest.BenchRawCommits(b, s) })
		server := workServer(b, s)
		ws := routingWorkspace(b)
		publishDemo(b, ws)
		path := "/api/workspaces/" + ws + "/entries/quick-answer/interactions?waitSeconds=30"
		for _, clients := range []int{1, 64} {
			b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
				var (
					next      atomic.Int64
					mu        sync.Mutex
					latencies = make([]time.Duration, 0, b.N)
					wg        sync.WaitGroup
				)
				b.ResetTimer()
				for range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							began := time.Now()
							status, out := benchCall(b, server, http.MethodPost, path, `{"input":{"question":"Why?"}}`)
							if status != http.StatusCreated || field(out, "action", "type") != "respond" {
								b.Errorf("open: %d %v", status, out)
								return
							}
							mu.Lock()
							latencies = append(latencies, time.Since(began))
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				if len(latencies) > 0 {
					reportLatencies(b, "interactions/s", latencies)
				}
			})
		}
	})
}
