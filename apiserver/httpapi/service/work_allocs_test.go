package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
)

// maxAllocsPerWorkItem is how many heap allocations the process may make for one WorkItem
// submitted through the service API's handler and run to Completed (a one-Agent-step Flow on the
// Deterministic model, SQLite): the HTTP chain, the submission, the executor's step, the Workplace
// projection and the store's statements. It was 1,096-1,127 when this ceiling was set, and 1,237
// before the projection's payloads were encoded without reflection, the informers' objects read
// without deep copies and a run's result answered as stored; the margin is for the process's
// background work (informers, leases, idle workers' polls) that lands in the measurement.
const maxAllocsPerWorkItem = 1180

// A WorkItem allocates at most maxAllocsPerWorkItem times: garbage is what the collector spends
// the CPU on, and what one WorkItem makes cannot grow unnoticed.
func TestAWorkItemAllocatesAtMostItsCeiling(t *testing.T) {
	g := NewWithT(t)
	s, err := store.Open(context.Background(), store.Options{DataDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { s.Close() })
	server := benchServer(t, s)
	flow := fmt.Sprintf("allocs-%d", benchFlows.Add(1))
	benchFlow(t, server, flow, "@respond done")
	body := `{"type":"bench","title":"t","instruction":"i","flowReference":{"name":"` + flow + `"}}`
	submit := func() {
		req := httptest.NewRequest(http.MethodPost, "/api/work/workitems?waitSeconds=30", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		server.Config.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"state":"Completed"`) {
			t.Fatalf("submit: %d %s", rec.Code, rec.Body)
		}
	}
	submit() // the first one resolves the Flow and the agent
	allocs := testing.AllocsPerRun(50, submit)
	t.Logf("%.0f allocations per WorkItem", allocs)
	g.Expect(allocs).To(BeNumerically("<=", maxAllocsPerWorkItem))
}
