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
// control and the idle workers' polls excluded), once its Flow and agent are known to the
// process: 11.0 on SQLite and 9 of its own on PostgreSQL when it was set, in one commit, with the
// outbox's numbering after (a statement per round, up to one per item when they come one by one).
var maxStatementsPerWorkItem = map[string]float64{store.SQLite: 11, store.Postgres: 10.5}

// idlePoll tells the statements of the executor's idle workers looking for runs to claim (its
// poll), which land in a measurement whenever their timer fires: what they cost does not depend
// on the work measured.
func idlePoll(statement string) bool {
	for _, prefix := range []string{"SELECT COUNT(*) FROM (SELECT 1 FROM flow_runs ", "SELECT COUNT(*) FROM (SELECT 1 FROM runtime_runs ",
		"SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM flow_runs ",
		"UPDATE flow_runs SET lease_owner = ?, lease_expires_at = ? WHERE id = (SELECT", "UPDATE flow_runs SET lease_owner = $1, lease_expires_at = $2 WHERE id = (SELECT",
		"UPDATE runtime_runs SET lease_owner = "} {
		if strings.HasPrefix(statement, prefix) {
			return true
		}
	}
	// A worker's read of a run to claim (work.Store.Claimable).
	return strings.HasPrefix(statement, "SELECT ") && strings.Contains(statement, " FROM flow_runs WHERE state IN ('Pending', 'Running') AND lease_expires_at < ")
}

// workStatements are the recorded statements that are not idle polls.
func workStatements(recorded []string) (work []string, polls int) {
	for _, q := range recorded {
		if idlePoll(q) {
			polls++
			continue
		}
		work = append(work, q)
	}
	return work, polls
}

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
		own, polls := workStatements(recorded)
		perItem := float64(len(own)) / items
		t.Logf("%.1f statements (%d of idle polls besides), %.1f transactions, %.1f commits, %.1f round trips per WorkItem; the statements of %d:\n%s",
			perItem, polls, float64(ran.Transactions)/items, float64(ran.Commits)/items, float64(ran.RoundTrips)/items, items, strings.Join(own, "\n"))
		g.Expect(perItem).To(BeNumerically("<=", maxStatementsPerWorkItem[s.Dialect()]))
		if s.Dialect() == store.Postgres {
			g.Expect(float64(ran.RoundTrips-int64(polls))/items).To(BeNumerically("<=", maxRoundTripsPerWorkItem),
				"round trips to PostgreSQL per WorkItem, idle polls excluded")
		}
		g.Expect(ran.Replans).To(BeZero(), "statements SQLite planned again at their execution")
		// What the budget buys includes the step's model call, recorded in the same commit.
		r := call(t, server, http.MethodGet, "/api/flowRuns/"+runID, "")
		g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
		g.Expect(field(r.body, "usage", "modelCalls")).To(BeNumerically("==", 1), "%v", r.body)
	})
}

// maxRoundTripsPerWorkItem is how many times a WorkItem waits for PostgreSQL: its transaction's
// writes go with its next read or its commit (store.Pipelined), so it waits at its two reads
// (the Task's title and its activities' numbers, each after the writes before it) and its commit,
// and once for the outbox's numbering round: 6 when it was set, 12 before (one per statement).
const maxRoundTripsPerWorkItem = 7

// maxStatementsPerAnswer is what answering a run's question costs the store per dialect, through
// the Work API until the run completed (the answer, the resumed step, the completion; idle polls
// excluded): 15 on SQLite and 14.3 on PostgreSQL in one commit when it was set (24 and 20.7 in two
// before the answer was written with the resumed run's first transition by the worker reserved
// for it, one write of the run, its WorkItem, its events and their projection instead of two;
// 29 and 26.7 before the run and its action were read in one statement, the answered question's
// notification was resolved by one UPDATE ... RETURNING instead of a SELECT before it, the waiter
// took the settled run from the answer's reserved worker instead of reading it, and a step that
// asked with no tool call recorded skipped reading its calls on resumption and summed its usage
// from the model calls its question carried instead of reading them back; 47 in 5 commits on
// SQLite before the answered run went to a reserved worker with the answer instead of waiting for
// a claim), with margin on PostgreSQL for the outbox's numbering rounds.
var maxStatementsPerAnswer = map[string]float64{store.SQLite: 15, store.Postgres: 15.5}

// An answer costs at most maxStatementsPerAnswer statements and one commit, on both dialects: the
// resumed run goes on on this process's worker without a claim, and its steps up to their first
// call outside the process (here: to the end) commit with the answer.
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
			runID    string
		)
		for i := range answers + 1 {
			r := call(t, server, http.MethodPost, "/api/work/workitems?waitSeconds=30",
				`{"type":"bench","title":"t","instruction":"i","flowReference":{"name":"`+flow+`"}}`)
			g.Expect(r.status).To(Equal(http.StatusAccepted), "%v", r.body)
			runID = field(r.body, "flowRun", "id").(string)
			path := "/api/flowRuns/" + runID + "/pending-actions/" +
				field(r.body, "flowRun", "pendingAction", "id").(string) + "/responses?waitSeconds=30"
			before := s.Counts()
			stop := s.RecordStatements()
			answered := call(t, server, http.MethodPost, path, `{"resumeToken":"`+r.body["resumeToken"].(string)+`","value":"a"}`)
			statements := stop()
			g.Expect(field(answered.body, "flowRun", "state")).To(Equal("Completed"), "%v", answered.body)
			if i > 0 { // the first one resolves the Flow and the agent
				ran, recorded = addCounts(ran, s.Counts().Sub(before)), append(recorded, statements...)
			}
		}
		own, polls := workStatements(recorded)
		perAnswer := float64(len(own)) / answers
		t.Logf("%.1f statements (%d of idle polls besides), %.1f transactions, %.1f commits per answer; the statements of %d:\n%s",
			perAnswer, polls, float64(ran.Transactions)/answers, float64(ran.Commits)/answers, answers, strings.Join(own, "\n"))
		g.Expect(perAnswer).To(BeNumerically("<=", maxStatementsPerAnswer[s.Dialect()]))
		g.Expect(float64(ran.Commits) / answers).To(BeNumerically("<=", 1))
		g.Expect(ran.Replans).To(BeZero(), "statements SQLite planned again at their execution")
		// The resumed step's completion tells the usage of all its model calls: the question's
		// and the one after the answer.
		events := call(t, server, http.MethodGet, "/api/flowRuns/"+runID+"/events", "")
		g.Expect(events.status).To(Equal(http.StatusOK), "%v", events.body)
		var told []any
		for _, e := range events.body["items"].([]any) {
			if e := e.(map[string]any); e["type"] == "StepCompleted" && e["usage"] != nil {
				told = append(told, e["usage"].(map[string]any)["modelCalls"])
			}
		}
		g.Expect(told).To(Equal([]any{float64(1), float64(2)}), "the question's step completion, then the answered one's")
	})
}

// maxStatementsPerQuickAnswer is what the demo Entry's quick-answer costs the store per dialect,
// opened through the Workplace API and answered to an Idle conversation (its Interaction, first
// message, WorkItem and FlowRun, the run executed and projected onto the conversation; idle polls
// excluded), once its Flow and agent are known to the process: 15 on SQLite and 14 on
// PostgreSQL when it was set, in one commit: the conversation and its first message are written
// in the transaction of the run's first flush, already naming the run (23 and 22.7 in two
// commits before; 30 before the first message was written without
// reading the conversation just inserted, a message was numbered in its INSERT instead of a read
// before it, the run's creation was projected with the conversation as Open inserted it, and the
// handler took the settled run from the reserved worker instead of reading the conversation back
// after its commit and the run before and after the wait; 39 before a conversation's change returned its version instead of reading it after,
// and its run's first execution summed its step's usage from its calls instead of reading it
// back), with margin on PostgreSQL for the outbox's numbering rounds.
var maxStatementsPerQuickAnswer = map[string]float64{store.SQLite: 15, store.Postgres: 15}

// A quick-answer costs at most maxStatementsPerQuickAnswer statements on both dialects; the
// statements of each are logged.
func TestAQuickAnswerCostsAtMostItsStatementBudget(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := benchServer(t, s)
		ws := routingWorkspace(t)
		publishDemo(t, ws)
		path := "/api/workspaces/" + ws + "/entries/quick-answer/interactions?waitSeconds=30"
		open := func() {
			r := call(t, server, http.MethodPost, path, `{"input":{"question":"Why?"}}`)
			g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
			g.Expect(field(r.body, "action", "type")).To(Equal("respond"), "%v", r.body)
		}
		open() // the first one resolves the Entry, the Flow and the agent
		const answers = 3
		before := s.Counts()
		stop := s.RecordStatements()
		for range answers {
			open()
		}
		own, polls := workStatements(stop())
		ran := s.Counts().Sub(before)
		perAnswer := float64(len(own)) / answers
		t.Logf("%.1f statements (%d of idle polls besides), %.1f transactions, %.1f commits per quick-answer; the statements of %d:\n%s",
			perAnswer, polls, float64(ran.Transactions)/answers, float64(ran.Commits)/answers, answers, strings.Join(own, "\n"))
		g.Expect(perAnswer).To(BeNumerically("<=", maxStatementsPerQuickAnswer[s.Dialect()]))
		g.Expect(float64(ran.Commits)/answers).To(BeNumerically("<=", 1), "the conversation commits with what its run did")
		g.Expect(ran.Replans).To(BeZero(), "statements SQLite planned again at their execution")
	})
}

// A WorkItem submitted while its workspace holds its share of the workers, by a client that waits
// for it, is handed the worker of the workspace's run that ends next: it is submitted, run and
// completed in one transaction instead of being queued in one and claimed and run in another.
func TestAWaitedWorkItemPastItsWorkspacesShareTakesTheNextFreeWorkerInOneTransaction(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServerOn(t, s, kube, kube, map[string]string{"Platform:Executor:WorkspaceShare": "1"}, nil)
		slow, fast := fmt.Sprintf("share-slow-%d", benchFlows.Add(1)), fmt.Sprintf("share-fast-%d", benchFlows.Add(1))
		benchFlow(t, server, slow, `@latencyMs 150\n@respond late`)
		benchFlow(t, server, fast, "@respond done")
		submit := func(flow string) response {
			return call(t, server, http.MethodPost, "/api/work/workitems?waitSeconds=30",
				`{"type":"bench","title":"t","instruction":"i","flowReference":{"name":"`+flow+`"}}`)
		}
		for _, flow := range []string{slow, fast} { // the first of each resolves its Flow and agent
			g.Expect(field(submit(flow).body, "flowRun", "state")).To(Equal("Completed"))
		}

		before := s.Counts()
		slowDone := make(chan response, 1)
		go func() { slowDone <- submit(slow) }()
		// The slow run's submission is committed with its step's start: it holds the share until
		// its agent answers.
		g.Eventually(func() int64 { return s.Counts().Sub(before).Transactions }).Should(BeNumerically(">=", 1))
		r := submit(fast)
		g.Expect(r.status).To(Equal(http.StatusAccepted), "%v", r.body)
		g.Expect(field(r.body, "flowRun", "state")).To(Equal("Completed"))
		var slowR response
		g.Eventually(slowDone).Should(Receive(&slowR))
		g.Expect(field(slowR.body, "flowRun", "state")).To(Equal("Completed"))
		ran := s.Counts().Sub(before)
		g.Expect(ran.Transactions).To(BeNumerically("<=", 3),
			"the slow item's two transactions and the waited item's one (queued, it takes two)")
	})
}
