package service_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// maxStatementsPerWorkItem is what one WorkItem of a one-Agent-step Flow may cost the store per
// dialect, submitted and run to Completed through the Work API (reads and writes, transaction
// control excluded), once its Flow and agent are known to the process: 11.4 on SQLite and 12.8
// on PostgreSQL (its change notifications and the outbox's numbering) when it was set, in one
// commit, with one statement of margin for the idle workers' polls that land in the measurement.
var maxStatementsPerWorkItem = map[string]float64{store.SQLite: 12.5, store.Postgres: 14}

// A WorkItem costs the store at most maxStatementsPerWorkItem statements, as the store counts
// them, on both dialects: what it costs cannot grow unnoticed. The statements of one are logged.
func TestAWorkItemCostsAtMostItsStatementBudget(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := benchServer(t, s)
		flow := fmt.Sprintf("cost-%d", benchFlows.Add(1))
		benchFlow(t, server, flow, "@respond done")
		body := `{"type":"bench","title":"t","instruction":"i","flowReference":{"name":"` + flow + `"}}`
		submit := func() {
			r := call(t, server, http.MethodPost, "/api/work/workitems?waitSeconds=30", body)
			g.Expect(r.status).To(Equal(http.StatusAccepted), "%v", r.body)
			g.Expect(field(r.body, "flowRun", "state")).To(Equal("Completed"))
		}
		submit() // the first one resolves the Flow and the agent
		const items = 5
		before := s.Counts()
		stop := s.RecordStatements()
		for range items {
			submit()
		}
		recorded := stop()
		ran := s.Counts().Sub(before)
		perItem := float64(ran.Statements) / items
		t.Logf("%.1f statements, %.1f transactions, %.1f commits per WorkItem; the statements of %d:\n%s",
			perItem, float64(ran.Transactions)/items, float64(ran.Commits)/items, items, strings.Join(recorded, "\n"))
		g.Expect(perItem).To(BeNumerically("<=", maxStatementsPerWorkItem[s.Dialect()]))
	})
}
