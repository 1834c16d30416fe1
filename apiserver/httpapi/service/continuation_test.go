package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// latestRun is the newest run of an interaction: its Flow, its parent and its stored data.
func latestRun(t *testing.T, s *store.Store, interaction string) (flow, parent string, data map[string]any) {
	t.Helper()
	var raw string
	var parentID *string
	err := s.DB().QueryRow(s.Rebind(`SELECT flow_name, parent_flow_run_id, data FROM flow_runs WHERE interaction_id = ? ORDER BY created_at DESC, id DESC LIMIT 1`),
		interaction).Scan(&flow, &parentID, &raw)
	if err != nil {
		t.Fatal(err)
	}
	if parentID != nil {
		parent = *parentID
	}
	if err := json.Unmarshal([]byte(raw), &data); err != nil {
		t.Fatal(err)
	}
	return flow, parent, data
}

// findKey is the first value under key anywhere in v.
func findKey(v any, key string) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		if found, ok := v[key]; ok {
			return found, true
		}
		for _, child := range v {
			if found, ok := findKey(child, key); ok {
				return found, true
			}
		}
	case []any:
		for _, child := range v {
			if found, ok := findKey(child, key); ok {
				return found, true
			}
		}
	}
	return nil, false
}

// Rule 7: a follow-up's continuation context holds the conversation's recent functional messages
// and its Results by reference, and nothing else: no storage entity, runtime internal, provider,
// model, technical prompt or trace.
func TestTheContinuationContextHoldsOnlyRecentFunctionalMessagesAndResultReferences(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		c := workplaceClient{t: t, server: server, ws: demoWorkspace(t)}
		opened := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q3 sales"}}`)
		interaction := field(opened, "interaction", "id").(string)
		done := c.answer(c.answer(opened, `"value":"table"`), `"confirmed":true`)
		taskID := field(done, "task", "id").(string)
		var firstRun string
		g.Expect(s.DB().QueryRow(s.Rebind(`SELECT id FROM flow_runs WHERE interaction_id = ?`), interaction).Scan(&firstRun)).To(Succeed())

		c.must(http.StatusAccepted, http.MethodPost, "/interactions/"+interaction+"/messages?waitSeconds=10", `{"text":"Add the west region"}`)
		_, parent, data := latestRun(t, s, interaction)
		g.Expect(parent).To(Equal(firstRun))
		found, ok := findKey(data, "context")
		g.Expect(ok).To(BeTrue(), "the follow-up's run carries the continuation context: %v", data)
		context := found.(map[string]any)
		g.Expect(context).To(HaveKey("messages"))
		for key := range context {
			g.Expect(key).To(BeElementOf("messages", "results", "artifacts"), "only messages and Result and artifact references")
		}
		var said []string
		for _, m := range context["messages"].([]any) {
			g.Expect(m).To(HaveLen(2), "a message is its role and its text")
			g.Expect(m).To(And(HaveKey("role"), HaveKey("text")))
			said = append(said, m.(map[string]any)["text"].(string))
		}
		g.Expect(said).To(ContainElements("Q3 sales", "Table"), "the conversation's functional messages")
		results := context["results"].([]any)
		g.Expect(results).To(HaveLen(1))
		g.Expect(results[0]).To(And(HaveKey("id"), HaveKey("text")))
		g.Expect(results[0].(map[string]any)["text"]).To(ContainSubstring("Q3 sales"), "the Result, readable")
		g.Expect(c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/results", "")["items"]).To(ContainElement(HaveKeyWithValue("id", results[0].(map[string]any)["id"])),
			"referenced by the Result's own id")

		text, err := json.Marshal(context)
		g.Expect(err).NotTo(HaveOccurred())
		for _, internal := range []string{firstRun, taskID, "prepare-report-builtin", "report-writer-builtin", "deterministic", "Deterministic", "resumeToken", "flowRun", "instructions", "pendingAction"} {
			g.Expect(strings.Contains(string(text), internal)).To(BeFalse(), "the context holds no %q", internal)
		}
	})
}

// Rule 6: an Entry's continuation target overrides its initial target for follow-ups, and the
// follow-up run records its terminal predecessor.
func TestAnEntrysContinuationTargetOverridesTheInitialTargetForFollowUps(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		ws := demoWorkspace(t)
		c := workplaceClient{t: t, server: server, ws: ws}
		entry := `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"report-then-answer"},"definition":{"displayName":"Report, then answers",` +
			`"fields":[{"name":"request","type":"Text","role":"PrimaryInput"}],"binding":{"flow":{"name":"prepare-report-builtin"}},` +
			`"continuation":{"agent":{"name":"quick-answer-builtin"}}}}`
		in := func(method, path, body string) response {
			return call(t, server, method, path, body, "X-Platform-Workspace", ws)
		}
		g.Expect(in(http.MethodPost, "/api/entries", entry).status).To(Equal(http.StatusCreated))
		published := in(http.MethodPost, "/api/entries/report-then-answer/publish", "")
		g.Expect(published.status).To(Equal(http.StatusOK), "%v", published.body)
		g.Expect(field(published.body, "published", "continuationTarget", "name")).To(Equal("direct-quick-answer-builtin"))

		opened := c.must(http.StatusCreated, http.MethodPost, "/entries/report-then-answer/interactions?waitSeconds=10", `{"input":{"request":"Q3"}}`)
		interaction := field(opened, "interaction", "id").(string)
		flow, _, _ := latestRun(t, s, interaction)
		g.Expect(flow).To(Equal("prepare-report-builtin"), "the first message runs the initial target")
		c.answer(c.answer(opened, `"value":"summary"`), `"confirmed":true`)
		var firstRun string
		g.Expect(s.DB().QueryRow(s.Rebind(`SELECT id FROM flow_runs WHERE interaction_id = ?`), interaction).Scan(&firstRun)).To(Succeed())

		followUp := c.must(http.StatusAccepted, http.MethodPost, "/interactions/"+interaction+"/messages?waitSeconds=10", `{"text":"What is in the summary?"}`)
		g.Expect(field(followUp, "action", "type")).NotTo(Equal("requestChoice"), "the follow-up does not run the report again")
		flow, parent, _ := latestRun(t, s, interaction)
		g.Expect(flow).To(Equal("direct-quick-answer-builtin"), "a follow-up runs the continuation target")
		g.Expect(parent).To(Equal(firstRun))
	})
}

// Rule 23: submission rechecks that the exact pinned Flow can run now: a Flow disabled after
// publication refuses new work with its stable reason, and nothing is queued.
func TestASubmissionRechecksThatThePinnedFlowCanRunNow(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		ws := demoWorkspace(t)
		c := workplaceClient{t: t, server: server, ws: ws}
		ctx := context.Background()
		workItems := func() (n int) {
			g.Expect(s.DB().QueryRow(`SELECT COUNT(*) FROM work_items`).Scan(&n)).To(Succeed())
			return n
		}
		setEnabled := func(enabled bool) {
			flow := &platformv1.Flow{}
			g.Expect(platformKube.Get(ctx, keyIn(ws, "prepare-report-builtin"), flow)).To(Succeed())
			flow.Definition.Enabled = &enabled
			g.Expect(platformKube.Update(ctx, flow)).To(Succeed())
		}

		setEnabled(false)
		before := workItems()
		refused := c.call(http.MethodPost, "/entries/prepare-report/interactions", `{"input":{"request":"Q3"}}`)
		expectProblem(g, refused, http.StatusConflict)
		g.Expect(refused.body["detail"]).To(ContainSubstring(platformv1.FlowDisabledReason))
		g.Expect(workItems()).To(Equal(before), "nothing is queued")
		g.Expect(c.must(http.StatusOK, http.MethodGet, "/interactions", "")["items"]).To(BeEmpty(), "no conversation starts")

		setEnabled(true)
		c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions", `{"input":{"request":"Q3"}}`)
		g.Expect(workItems()).To(Equal(before + 1))
	})
}
