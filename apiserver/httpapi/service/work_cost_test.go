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
// control excluded), once its Flow and agent are known to the process: 11.0 on SQLite and 12.2
// on PostgreSQL (the outbox's numbering and its notification, after the item's own 9) when it
// was set, in one commit, with margin for the idle workers' polls that land in the measurement.
var maxStatementsPerWorkItem = map[string]float64{store.SQLite: 11.5, store.Postgres: 13}

// A WorkItem costs the store at most maxStatementsPerWorkItem statements, as the store counts
// them, on both dialects: what it costs cannot grow unnoticed. The statements of one are logged.
func TestAWorkItemCostsAtMostItsStatementBudget(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := benchServer(t, s)
		flow := fmt.Sprintf("cost-%d", benchFlows.Add(1))
		benchFlow(t, server, flow, "@respond done")
		body := `{"type":"bench","title":"t","instruction":"i","flowReference":{"name":"` + flow + `"}}`
		var runID string
		submit := func() {
			r := call(t, server, http.MethodPost, "/api/work/workitems?waitSeconds=30", body)
			g.Expect(r.status).To(Equal(http.StatusAccepted), "%v", r.body)
			g.Expect(field(r.body, "flowRun", "state")).To(Equal("Completed"))
			runID, _ = field(r.body, "flowRun", "id").(string)
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
		// What the budget buys includes the step's model call, recorded in the same commit.
		r := call(t, server, http.MethodGet, "/api/flowRuns/"+runID, "")
		g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
		g.Expect(field(r.body, "usage", "modelCalls")).To(BeNumerically("==", 1), "%v", r.body)
	})
}

// maxStatementsPerAnswer is what answering a run's question costs the store per dialect, through
// the Work API until the run completed (the answer, the resumed step, the completion): 37.0 on
// SQLite and 40.7 on PostgreSQL when it was set (47 in 5 commits on SQLite before the answered
// run went to a reserved worker with the answer instead of waiting for a claim), with margin for
// the idle workers' polls that land in the measurement.
var maxStatementsPerAnswer = map[string]float64{store.SQLite: 39, store.Postgres: 43}

// An answer costs at most maxStatementsPerAnswer statements and two commits besides the answer's
// own, on both dialects: the resumed run starts on this process's worker without a claim.
func TestAnAnswerCostsAtMostItsStatementBudget(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := benchServer(t, s)
		flow := fmt.Sprintf("cost-ask-%d", benchFlows.Add(1))
		benchFlow(t, server, flow, `@requestChoice Pick\n@option a A`)
		const answers = 3
		var (
			ran      store.Counts
			recorded []string
		)
		for i := range answers + 1 {
			r := call(t, server, http.MethodPost, "/api/work/workitems?waitSeconds=30",
				`{"type":"bench","title":"t","instruction":"i","flowReference":{"name":"`+flow+`"}}`)
			g.Expect(r.status).To(Equal(http.StatusAccepted), "%v", r.body)
			path := "/api/flowRuns/" + field(r.body, "flowRun", "id").(string) + "/pending-actions/" +
				field(r.body, "flowRun", "pendingAction", "id").(string) + "/responses?waitSeconds=30"
			before := s.Counts()
			stop := s.RecordStatements()
			answered := call(t, server, http.MethodPost, path, `{"resumeToken":"`+r.body["resumeToken"].(string)+`","value":"a"}`)
			statements := stop()
			g.Expect(field(answered.body, "flowRun", "state")).To(Equal("Completed"), "%v", answered.body)
			if i > 0 { // the first one resolves the Flow and the agent
				ran, recorded = addCounts(ran, s.Counts().Sub(before)), statements
			}
		}
		perAnswer := float64(ran.Statements) / answers
		t.Logf("%.1f statements, %.1f transactions, %.1f commits per answer; the statements of one:\n%s",
			perAnswer, float64(ran.Transactions)/answers, float64(ran.Commits)/answers, strings.Join(recorded, "\n"))
		g.Expect(perAnswer).To(BeNumerically("<=", maxStatementsPerAnswer[s.Dialect()]))
		g.Expect(float64(ran.Commits) / answers).To(BeNumerically("<=", 3.5))
	})
}
