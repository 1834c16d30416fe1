package service_test

import (
	"fmt"
	"net/http"
	"testing"

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
		server := benchServer(b, s) // as `platform serve` runs: the loopback identity and informers
		rawCommits := rawCommitsNow(b, s)
		ws := routingWorkspace(b)
		publishDemo(b, ws)
		path := "/api/workspaces/" + ws + "/entries/quick-answer/interactions?waitSeconds=30"
		for _, clients := range []int{1, 64} {
			b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
				measureClients(b, s, rawCommits, clients, "interactions/s", func() bool {
					status, out := benchCall(b, server, http.MethodPost, path, `{"input":{"question":"Why?"}}`)
					if status != http.StatusCreated || field(out, "action", "type") != "respond" {
						b.Errorf("open: %d %v", status, out)
						return false
					}
					return true
				})
			})
		}
	})
}
