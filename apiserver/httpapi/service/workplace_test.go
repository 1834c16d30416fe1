package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/internal/demo"
	"platform.dev/platform/internal/publication"
)

// demoWorkspace is a fresh workspace with the demo Entries published.
func demoWorkspace(t testing.TB) string {
	t.Helper()
	ws := routingWorkspace(t)
	publishDemo(t, ws)
	return ws
}

// publishDemo seeds the demo into workspace namespace ws and publishes it with the platform's
// identity, as bootstrap and the controllers would (no controller runs in these tests:
// publication is done here).
func publishDemo(t testing.TB, ws string) {
	t.Helper()
	ctx := context.Background()
	if err := demo.Seed(ctx, platformKube, ws); err != nil {
		t.Fatal(err)
	}
	objects, err := demo.Objects()
	if err != nil {
		t.Fatal(err)
	}
	publisher := &publication.Publisher{Client: platformKube}
	for _, obj := range objects {
		if flow, ok := obj.(*platformv1.Flow); ok {
			current := &platformv1.Flow{}
			if err := platformKube.Get(ctx, keyIn(ws, flow.Name), current); err != nil {
				t.Fatal(err)
			}
			if _, err := publisher.PublishFlowVersion(ctx, current, current.Definition.Version, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, obj := range objects {
		if entry, ok := obj.(*platformv1.Entry); ok {
			current := &platformv1.Entry{}
			if err := platformKube.Get(ctx, keyIn(ws, entry.Name), current); err != nil {
				t.Fatal(err)
			}
			if _, err := publisher.PublishEntry(ctx, current, "test"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// workplaceClient calls the Workplace routes of one workspace.
type workplaceClient struct {
	t      *testing.T
	server *httptest.Server
	ws     string
}

func (c workplaceClient) call(method, path, body string, headers ...string) response {
	c.t.Helper()
	return call(c.t, c.server, method, "/api/workspaces/"+c.ws+path, body, headers...)
}

func (c workplaceClient) must(status int, method, path, body string, headers ...string) map[string]any {
	c.t.Helper()
	r := c.call(method, path, body, headers...)
	if r.status != status {
		c.t.Fatalf("%s %s: %d, want %d: %v", method, path, r.status, status, r.body)
	}
	return r.body
}

// answer answers the question the exchange asks, with the token it carries.
func (c workplaceClient) answer(exchange map[string]any, answer string) map[string]any {
	c.t.Helper()
	interaction := field(exchange, "interaction", "id").(string)
	action := field(exchange, "action", "pendingAction", "id").(string)
	return c.must(http.StatusOK, http.MethodPost, "/interactions/"+interaction+"/pending-actions/"+action+"/responses?waitSeconds=10",
		`{"resumeToken":"`+exchange["resumeToken"].(string)+`",`+answer+`}`)
}

func texts(messages []any) []string {
	var out []string
	for _, m := range messages {
		msg := m.(map[string]any)
		out = append(out, msg["role"].(string)+":"+msg["kind"].(string)+":"+msg["text"].(string))
	}
	return out
}

func TestPrepareReportAsksAChoiceThenAConfirmationAndCreatesATaskWithNoArtifact(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		c := workplaceClient{t: t, server: workServer(t, s), ws: demoWorkspace(t)}

		opened := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q3 sales"}}`)
		g.Expect(field(opened, "action", "type")).To(Equal("requestChoice"), "%v", opened)
		g.Expect(field(opened, "action", "pendingAction", "options")).To(HaveLen(3))
		g.Expect(opened["resumeToken"]).To(HavePrefix("prt_"))
		g.Expect(field(opened, "interaction", "state")).To(Equal("Active"))
		g.Expect(field(opened, "interaction", "blocked")).To(BeTrue(), "a question blocks the composer")
		interaction := field(opened, "interaction", "id").(string)

		confirm := c.answer(opened, `"value":"table"`)
		g.Expect(field(confirm, "action", "type")).To(Equal("requestConfirmation"), "%v", confirm)
		g.Expect(field(confirm, "answered", "status")).To(Equal("completed"))

		done := c.answer(confirm, `"confirmed":true`)
		g.Expect(field(done, "action", "type")).To(Equal("createTask"), "%v", done)
		g.Expect(field(done, "interaction", "state")).To(Equal("Idle"), "a completed Task leaves its conversation Idle, open")
		taskID := field(done, "task", "id").(string)
		g.Expect(field(done, "task", "state")).To(Equal("completed"))
		g.Expect(field(done, "task", "title")).To(Equal("Prepare the report: Q3 sales"), "the Task's title keeps the request's subject")

		messages := c.must(http.StatusOK, http.MethodGet, "/interactions/"+interaction+"/messages", "")["items"].([]any)
		g.Expect(texts(messages)).To(Equal([]string{
			"User:text:Q3 sales",
			"Platform:question:Which format should the report take?",
			"User:answer:Table",
			"Platform:question:Prepare the report in this format now?",
			"User:answer:Yes",
			"Platform:reply:Your report outline is ready. Open its Task to read it.",
		}), "the chosen values are User messages; creating the Task adds no message of its own, the Flow's closing message ends it")

		task := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID, "")
		g.Expect(task["actions"]).To(Equal(map[string]any{"pause": false, "resume": false, "cancel": false, "delete": true}))
		results := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/results", "")["items"].([]any)
		g.Expect(results).To(ConsistOf(And(HaveKeyWithValue("action", "createTask"),
			HaveKeyWithValue("text", ContainSubstring("| Section | What it covers |\n|---|---|\n| Overview |")))), "the outline as a table")
		g.Expect(c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/artifacts", "")["items"]).To(BeEmpty(), "prepare-report produces no artifact")
		activities := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/activities", "")["items"].([]any)
		var labels []string
		for i, a := range activities {
			labels = append(labels, a.(map[string]any)["phase"].(string)+":"+a.(map[string]any)["label"].(string))
			g.Expect(a).NotTo(HaveKey("participant"), "participants are hidden by default")
			g.Expect(a).To(HaveKeyWithValue("seq", BeNumerically("==", i+1)), "numbered in order, none missing")
		}
		g.Expect(labels).To(ContainElements("started:Planning the report", "completed:Prepared", "started:Creating the Task", "completed:Completed"))
		g.Expect(c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/activities?detail=compact", "")["items"]).To(BeEmpty(),
			"compact progress drops what the answer already conveys")

		notifications := c.must(http.StatusOK, http.MethodGet, "/notifications", "")
		g.Expect(notifications["unreadCount"]).To(BeNumerically("==", 1), "the completion; the two questions were answered: resolved and read")
		g.Expect(field(notifications, "items")).To(HaveLen(3))
		g.Expect(notifications["items"].([]any)[0]).To(And(HaveKeyWithValue("kind", "task-completed"), HaveKeyWithValue("read", false)),
			"unread first: completed work is not pushed out by answered questions")
		g.Expect(notifications["items"].([]any)[1:]).To(HaveEach(And(HaveKeyWithValue("resolved", true), HaveKeyWithValue("attention", false))))
		// The count follows each change: one read (twice), then all, then the Task deleted with its
		// notifications, read or not.
		first := field(notifications, "items").([]any)[0].(map[string]any)["id"].(string)
		for range 2 {
			c.must(http.StatusOK, http.MethodPost, "/notifications/"+first+"/read", "")
			g.Expect(c.must(http.StatusOK, http.MethodGet, "/notifications", "")["unreadCount"]).To(BeNumerically("==", 0))
		}
		read := c.must(http.StatusOK, http.MethodPost, "/notifications/read-all", "")
		g.Expect(read["marked"]).To(BeNumerically("==", 0))
		g.Expect(c.must(http.StatusOK, http.MethodGet, "/notifications", "")["unreadCount"]).To(BeNumerically("==", 0))
	})
}

// Deleting a Task takes its unread notifications out of the unread count, and only those.
func TestDeletingATaskTakesItsUnreadNotificationsOutOfTheCount(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		c := workplaceClient{t: t, server: workServer(t, s), ws: demoWorkspace(t)}
		opened := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q3 sales"}}`)
		done := c.answer(c.answer(opened, `"value":"table"`), `"confirmed":true`)
		taskID := field(done, "task", "id").(string)
		notifications := c.must(http.StatusOK, http.MethodGet, "/notifications", "")
		g.Expect(notifications["unreadCount"]).To(BeNumerically("==", 1), "the answered questions are read")

		task := c.call(http.MethodGet, "/tasks/"+taskID, "")
		g.Expect(c.call(http.MethodDelete, "/tasks/"+taskID, "", "If-Match", task.header.Get("ETag")).status).To(Equal(http.StatusNoContent))
		after := c.must(http.StatusOK, http.MethodGet, "/notifications", "")
		g.Expect(after["items"]).To(BeEmpty())
		g.Expect(after["unreadCount"]).To(BeNumerically("==", 0), "the unread one went, the read ones counted for nothing")
	})
}

func TestAFollowUpStartsANewRunWhoseParentIsTheTerminalPredecessorOnTheSameTask(t *testing.T) {
	g := NewWithT(t)
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		server := workServer(t, s)
		c := workplaceClient{t: t, server: server, ws: demoWorkspace(t)}
		opened := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q3"}}`)
		interaction := field(opened, "interaction", "id").(string)
		firstRun := c.must(http.StatusOK, http.MethodGet, "/interactions/"+interaction, "")
		_ = firstRun

		// While a question waits, a message is refused: the question blocks the composer.
		blocked := c.call(http.MethodPost, "/interactions/"+interaction+"/messages", `{"text":"hurry up"}`)
		expectProblem(g, blocked, http.StatusConflict)

		done := c.answer(c.answer(opened, `"value":"summary"`), `"confirmed":true`)
		taskID := field(done, "task", "id").(string)
		tasks := c.must(http.StatusOK, http.MethodGet, "/tasks", "")["items"].([]any)
		g.Expect(tasks).To(HaveLen(1))

		followUp := c.must(http.StatusAccepted, http.MethodPost, "/interactions/"+interaction+"/messages?waitSeconds=10", `{"text":"Add the west region"}`)
		g.Expect(field(followUp, "message", "role")).To(Equal("User"))
		g.Expect(field(followUp, "task", "id")).To(Equal(taskID), "the same public Task")
		g.Expect(field(followUp, "action", "type")).To(Equal("requestChoice"), "the continuation runs the Entry's target again")

		runs := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID, "")
		_ = runs
		g.Expect(c.must(http.StatusOK, http.MethodGet, "/tasks", "")["items"]).To(HaveLen(1), "a continuation is no new Task")

		c.answer(c.answer(followUp, `"value":"summary"`), `"confirmed":true`)
		results := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/results", "")["items"].([]any)
		g.Expect(results).To(HaveLen(2), "each run of the Task adds its Result")
		for i, r := range results {
			g.Expect(r).To(HaveKeyWithValue("seq", BeNumerically("==", i+1)), "numbered in order, none missing")
		}
	})
}

func TestQuickAnswerCompletesItsInteractionWithoutATask(t *testing.T) {
	g := NewWithT(t)
	c := workplaceClient{t: t, server: workServer(t, storeFor(t)), ws: demoWorkspace(t)}
	opened := c.must(http.StatusCreated, http.MethodPost, "/entries/quick-answer/interactions?waitSeconds=10", `{"input":{"question":"What is a workspace?"}}`)
	g.Expect(field(opened, "action")).To(Equal(map[string]any{"type": "respond", "text": `Here is a quick answer to "What is a workspace?".`}))
	g.Expect(opened).NotTo(HaveKey("task"))
	g.Expect(field(opened, "interaction", "state")).To(Equal("Idle"))
	g.Expect(field(opened, "interaction")).NotTo(HaveKey("taskId"))
	g.Expect(c.must(http.StatusOK, http.MethodGet, "/tasks", "")["items"]).To(BeEmpty(), "quick-answer leaves no Task")
	messages := c.must(http.StatusOK, http.MethodGet, "/interactions/"+field(opened, "interaction", "id").(string)+"/messages", "")["items"].([]any)
	g.Expect(texts(messages)).To(Equal([]string{"User:text:What is a workspace?", `Platform:reply:Here is a quick answer to "What is a workspace?".`}))
}

func TestGuidedRequestAsksForAStyleWithChoices(t *testing.T) {
	g := NewWithT(t)
	c := workplaceClient{t: t, server: workServer(t, storeFor(t)), ws: demoWorkspace(t)}
	opened := c.must(http.StatusCreated, http.MethodPost, "/entries/guided-request/interactions?waitSeconds=10", `{"input":{"request":"A note to the team"}}`)
	g.Expect(field(opened, "action", "type")).To(Equal("requestChoice"))
	g.Expect(field(opened, "action", "text")).To(Equal("Which style should the answer have?"))
	var values []string
	for _, o := range field(opened, "action", "pendingAction", "options").([]any) {
		values = append(values, o.(map[string]any)["value"].(string))
	}
	g.Expect(values).To(Equal([]string{"formal", "friendly", "concise"}))
}

// unreadable is what a person must never read in an answer or a Result: the provider's name, a
// digest, raw JSON.
var unreadable = Or(ContainSubstring("Deterministic"), MatchRegexp(`[0-9a-f]{12}`), ContainSubstring(`{"`))

func TestEachDemoEntryEndsWithAClosingAnswerAndAReadableResult(t *testing.T) {
	c := workplaceClient{t: t, server: workServer(t, storeFor(t)), ws: demoWorkspace(t)}
	for name, tc := range map[string]struct {
		entry, input string
		answers      []string
		// closing is the conversation's last message; result the Task's Result, "" for no Task.
		closing, result types.GomegaMatcher
	}{
		"prepare-report in a summary, detailed": {entry: "prepare-report", input: `{"request":"Monthly cloud costs","detailLevel":"detailed"}`,
			answers: []string{`"value":"summary"`, `"confirmed":true`},
			closing: Equal("Platform:reply:Your report outline is ready. Open its Task to read it."),
			result:  And(ContainSubstring("Monthly cloud costs: summary outline"), ContainSubstring("(detail level: detailed)"), ContainSubstring("5. **Recommendations**"))},
		"prepare-report as a narrative, at the default detail": {entry: "prepare-report", input: `{"request":"Open support tickets by product"}`,
			answers: []string{`"value":"narrative"`, `"confirmed":true`},
			closing: Equal("Platform:reply:Your report outline is ready. Open its Task to read it."),
			result:  And(ContainSubstring("Open support tickets by product: narrative report outline"), ContainSubstring("(detail level: standard)"), ContainSubstring("**Trends.**"))},
		"prepare-report declined": {entry: "prepare-report", input: `{"request":"Monthly cloud costs"}`,
			answers: []string{`"value":"table"`, `"confirmed":false`},
			closing: Equal("Platform:reply:Nothing was prepared. Start a new request to choose another format."),
			result:  Equal("Nothing was prepared. Start a new request to choose another format.")},
		"guided-request in a formal style": {entry: "guided-request", input: `{"request":"A note to the team about the offsite"}`,
			answers: []string{`"value":"formal"`},
			closing: And(HavePrefix("Platform:reply:Dear colleague"), ContainSubstring("regarding A note to the team about the offsite")),
			result:  ContainSubstring("Kind regards")},
		"guided-request in a concise style": {entry: "guided-request", input: `{"request":"A note to the team about the offsite"}`,
			answers: []string{`"value":"concise"`},
			closing: HavePrefix("Platform:reply:**A note to the team about the offsite**"),
			result:  ContainSubstring("- Next: a short recommendation")},
		"quick-answer": {entry: "quick-answer", input: `{"question":"What is a workspace?"}`,
			closing: Equal(`Platform:reply:Here is a quick answer to "What is a workspace?".`)},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			exchange := c.must(http.StatusCreated, http.MethodPost, "/entries/"+tc.entry+"/interactions?waitSeconds=10", `{"input":`+tc.input+`}`)
			for _, a := range tc.answers {
				exchange = c.answer(exchange, a)
			}
			g.Expect(field(exchange, "interaction", "state")).To(Equal("Idle"), "%v", exchange)
			interaction := field(exchange, "interaction", "id").(string)
			messages := texts(c.must(http.StatusOK, http.MethodGet, "/interactions/"+interaction+"/messages", "")["items"].([]any))
			g.Expect(messages[len(messages)-1]).To(And(tc.closing, Not(unreadable)), "%q", messages)
			if tc.result == nil {
				g.Expect(exchange).NotTo(HaveKey("task"))
				return
			}
			taskID := field(exchange, "task", "id").(string)
			results := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/results", "")["items"].([]any)
			g.Expect(results).To(HaveLen(1))
			g.Expect(results[0].(map[string]any)["text"]).To(And(tc.result, Not(unreadable)))
		})
	}
}

func TestATaskAndItsConversationKeepTheSubjectOfTheRequest(t *testing.T) {
	g := NewWithT(t)
	c := workplaceClient{t: t, server: workServer(t, storeFor(t)), ws: demoWorkspace(t)}
	var titles []string
	for _, subject := range []string{"Monthly cloud costs", "Open support tickets by product"} {
		opened := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"`+subject+`"}}`)
		g.Expect(field(opened, "interaction", "title")).To(Equal("Prepare a report: "+subject), "the conversation is named after the request")
		done := c.answer(c.answer(opened, `"value":"summary"`), `"confirmed":true`)
		g.Expect(field(done, "task", "title")).To(Equal("Prepare the report: "+subject), "createTask adds its title, never drops the subject")
		titles = append(titles, field(done, "task", "title").(string))
	}
	g.Expect(titles[0]).NotTo(Equal(titles[1]))
	var recent []string
	for _, i := range c.must(http.StatusOK, http.MethodGet, "/interactions", "")["items"].([]any) {
		recent = append(recent, i.(map[string]any)["title"].(string))
	}
	g.Expect(recent).To(ConsistOf("Prepare a report: Monthly cloud costs", "Prepare a report: Open support tickets by product"))
}

func TestWorkplaceRefusalsAnswerTheirStatusAsProblemDetails(t *testing.T) {
	c := workplaceClient{t: t, server: workServer(t, storeFor(t)), ws: demoWorkspace(t)}
	g := NewWithT(t)
	opened := c.must(http.StatusCreated, http.MethodPost, "/entries/guided-request/interactions?waitSeconds=10", `{"input":{"request":"x"}}`)
	interaction := field(opened, "interaction", "id").(string)
	action := field(opened, "action", "pendingAction", "id").(string)
	answerPath := "/interactions/" + interaction + "/pending-actions/" + action + "/responses"
	token := opened["resumeToken"].(string)

	for name, tc := range map[string]struct {
		method, path, body string
		status             int
		location           string
	}{
		"an unknown field of the Entry":         {http.MethodPost, "/entries/guided-request/interactions", `{"input":{"request":"x","colour":"red"}}`, 422, "body.input[colour]"},
		"a missing required field":              {http.MethodPost, "/entries/guided-request/interactions", `{"input":{}}`, 422, "body.input[request]"},
		"an attachment the Entry does not take": {http.MethodPost, "/entries/guided-request/interactions", `{"input":{"request":"x"},"attachments":[{}]}`, 422, "body.attachments"},
		"an unpublished Entry":                  {http.MethodPost, "/entries/nothing/interactions", `{"input":{}}`, 404, ""},
		"a wrong resume token":                  {http.MethodPost, answerPath, `{"resumeToken":"prt_wrong","value":"formal"}`, 400, ""},
		"an answer that is not an option":       {http.MethodPost, answerPath, `{"resumeToken":"` + token + `","value":"rude"}`, 400, ""},
		"another conversation's action":         {http.MethodPost, "/interactions/00000000-0000-0000-0000-000000000000/pending-actions/" + action + "/responses", `{"resumeToken":"` + token + `","value":"formal"}`, 404, ""},
		"an empty message":                      {http.MethodPost, "/interactions/" + interaction + "/messages", `{"text":" "}`, 422, ""},
		"an unknown Task":                       {http.MethodGet, "/tasks/nothing", "", 404, ""},
		"an unknown notification":               {http.MethodPost, "/notifications/nothing/read", "", 404, ""},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := c.call(tc.method, tc.path, tc.body)
			expectProblem(g, r, tc.status)
			if tc.location != "" {
				g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", tc.location)))
			}
		})
	}

	answered := c.must(http.StatusOK, http.MethodPost, answerPath, `{"resumeToken":"`+token+`","value":"formal"}`)
	g.Expect(field(answered, "answered", "status")).To(Equal("completed"))
	expectProblem(g, c.call(http.MethodPost, answerPath, `{"resumeToken":"`+token+`","value":"formal"}`), http.StatusConflict)
	expectProblem(g, c.call(http.MethodPost, answerPath, `{"resumeToken":"`+answered["resumeToken"].(string)+`","value":"formal"}`), http.StatusBadRequest)
	read := c.must(http.StatusOK, http.MethodGet, "/interactions/"+interaction, "")
	g.Expect(read).NotTo(HaveKey("resumeToken"), "a later read never returns a resume token")
}

func TestADeletedTaskTakesItsHistoryAndTheInteractionKeepsItsConversation(t *testing.T) {
	g := NewWithT(t)
	c := workplaceClient{t: t, server: workServer(t, storeFor(t)), ws: demoWorkspace(t)}
	opened := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q3"}}`)
	interaction := field(opened, "interaction", "id").(string)
	taskID := field(opened, "task", "id").(string)

	running := c.call(http.MethodGet, "/tasks/"+taskID, "")
	expectProblem(g, c.call(http.MethodDelete, "/tasks/"+taskID, "", "If-Match", running.header.Get("ETag")), http.StatusConflict)

	c.answer(c.answer(opened, `"value":"summary"`), `"confirmed":true`)
	done := c.call(http.MethodGet, "/tasks/"+taskID, "")
	expectProblem(g, c.call(http.MethodDelete, "/tasks/"+taskID, ""), http.StatusPreconditionRequired)
	expectProblem(g, c.call(http.MethodDelete, "/tasks/"+taskID, "", "If-Match", running.header.Get("ETag")), http.StatusPreconditionFailed)
	g.Expect(c.call(http.MethodDelete, "/tasks/"+taskID, "", "If-Match", done.header.Get("ETag")).status).To(Equal(http.StatusNoContent))

	expectProblem(g, c.call(http.MethodGet, "/tasks/"+taskID, ""), http.StatusNotFound)
	g.Expect(c.must(http.StatusOK, http.MethodGet, "/notifications", "")["items"]).To(BeEmpty(), "its notifications go with it")
	kept := c.must(http.StatusOK, http.MethodGet, "/interactions/"+interaction, "")
	g.Expect(kept["interaction"]).NotTo(HaveKey("taskId"), "the conversation is detached from the deleted Task")
	g.Expect(c.must(http.StatusOK, http.MethodGet, "/interactions/"+interaction+"/messages", "")["items"]).To(HaveLen(6), "and keeps its messages, the closing answer included")
}

// storeFor is a fresh SQLite store for a test that runs on one dialect.
func storeFor(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func keyIn(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}

func TestFileAndApprovalQuestionsAreAnsweredInTheConversationAndTheFileBecomesADownloadableArtifact(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	ws, in := entryWorkspace(t, server)
	for _, c := range []struct{ path, body string }{
		{"/api/agents", agentBody("reviewer", "Reviewer")},
		{"/api/flows", `{"name":"review","kind":"Orchestration","definition":{"steps":[{"name":"in","type":"Input"},` +
			`{"name":"upload","type":"Agent","agent":{"name":"reviewer"},"suspend":{"kind":"File","prompt":"Send the draft"}},` +
			`{"name":"approve","type":"Agent","agent":{"name":"reviewer"},"suspend":{"kind":"Approval","prompt":"Publish it?"}},` +
			`{"name":"out","type":"Output"}],"edges":[{"from":"in","to":"upload"},{"from":"upload","to":"approve"},{"from":"approve","to":"out"}]}}`},
		{"/api/flows/review/versions", `{"version":"1.0.0","activate":true}`},
		{"/api/entries", entryBody("review", "Review", `{"flow":{"name":"review"}}`)},
	} {
		r := in(http.MethodPost, c.path, c.body)
		g.Expect(r.status).To(Equal(http.StatusCreated), "%s: %v", c.path, r.body)
	}
	g.Expect(in(http.MethodPost, "/api/entries/review/publish", "").status).To(Equal(http.StatusOK))
	c := workplaceClient{t: t, server: server, ws: ws}

	opened := c.must(http.StatusCreated, http.MethodPost, "/entries/review/interactions?waitSeconds=10", `{"input":{"request":"Q3 review"}}`)
	g.Expect(field(opened, "action", "pendingAction", "kind")).To(Equal("file"), "%v", opened)
	taskID := field(opened, "task", "id").(string)
	bad := c.call(http.MethodPost, "/interactions/"+field(opened, "interaction", "id").(string)+"/pending-actions/"+
		field(opened, "action", "pendingAction", "id").(string)+"/responses", `{"resumeToken":"`+opened["resumeToken"].(string)+`","value":"text instead"}`)
	expectProblem(g, bad, http.StatusBadRequest)
	g.Expect(c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/artifacts", "")["items"]).To(BeEmpty(), "a refused answer stores nothing")

	approval := c.answer(opened, `"file":{"name":"draft.csv","mediaType":"text/csv","contentBase64":"cmVnaW9uLHNhbGVzCm5vcnRoLDEy"}`)
	g.Expect(field(approval, "action", "pendingAction", "kind")).To(Equal("approval"), "%v", approval)
	done := c.answer(approval, `"approved":false,"reason":"numbers are off"`)
	g.Expect(field(done, "interaction", "state")).To(Equal("Idle"))

	messages := c.must(http.StatusOK, http.MethodGet, "/interactions/"+field(opened, "interaction", "id").(string)+"/messages", "")["items"].([]any)
	g.Expect(texts(messages)).To(ContainElements("User:answer:Sent draft.csv", "User:answer:Rejected: numbers are off"))

	artifacts := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/artifacts", "")["items"].([]any)
	g.Expect(artifacts).To(ConsistOf(And(HaveKeyWithValue("name", "draft.csv"), HaveKeyWithValue("mediaType", "text/csv"),
		HaveKeyWithValue("length", BeNumerically("==", 21)))))
	g.Expect(artifacts[0]).NotTo(HaveKey("storageKey"), "storage keys stay inside")
	download := c.call(http.MethodGet, "/tasks/"+taskID+"/artifacts/"+artifacts[0].(map[string]any)["id"].(string)+"/content", "")
	g.Expect(download.status).To(Equal(http.StatusOK))
	g.Expect(download.header.Get("Content-Type")).To(Equal("text/csv"))
	g.Expect(download.header.Get("Content-Length")).To(Equal("21"))
	g.Expect(download.header.Get("Content-Disposition")).To(Equal(`attachment; filename=draft.csv`))
	other := workplaceClient{t: t, server: server, ws: routingWorkspace(t)}
	expectProblem(g, other.call(http.MethodGet, "/tasks/"+taskID+"/artifacts/"+artifacts[0].(map[string]any)["id"].(string)+"/content", ""),
		http.StatusNotFound)
}

func TestAFileAnswerWhoseMediaTypeIsNotATypeAndSubtypeIsRefusedWith400NamingTheField(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	ws, in := entryWorkspace(t, server)
	for _, c := range []struct{ path, body string }{
		{"/api/agents", agentBody("reviewer", "Reviewer")},
		{"/api/flows", `{"name":"upload","kind":"Orchestration","definition":{"steps":[{"name":"in","type":"Input"},` +
			`{"name":"upload","type":"Agent","agent":{"name":"reviewer"},"suspend":{"kind":"File","prompt":"Send the draft"}},` +
			`{"name":"out","type":"Output"}],"edges":[{"from":"in","to":"upload"},{"from":"upload","to":"out"}]}}`},
		{"/api/flows/upload/versions", `{"version":"1.0.0","activate":true}`},
		{"/api/entries", entryBody("upload", "Upload", `{"flow":{"name":"upload"}}`)},
	} {
		r := in(http.MethodPost, c.path, c.body)
		g.Expect(r.status).To(Equal(http.StatusCreated), "%s: %v", c.path, r.body)
	}
	g.Expect(in(http.MethodPost, "/api/entries/upload/publish", "").status).To(Equal(http.StatusOK))
	c := workplaceClient{t: t, server: server, ws: ws}
	opened := c.must(http.StatusCreated, http.MethodPost, "/entries/upload/interactions?waitSeconds=10", `{"input":{"request":"Q3 review"}}`)
	g.Expect(field(opened, "action", "pendingAction", "kind")).To(Equal("file"), "%v", opened)
	responses := "/interactions/" + field(opened, "interaction", "id").(string) + "/pending-actions/" + field(opened, "action", "pendingAction", "id").(string) + "/responses"
	taskID := field(opened, "task", "id").(string)

	cases := map[string]string{
		"a word that is no media type":              `garbage`,
		"a type without a subtype":                  `text`,
		"a subtype without a type":                  `/csv`,
		"a header injected after the subtype":       `text/csv\r\nX-Injected: yes`,
		"CR LF hidden between parameters":           `text/csv;\r\n charset=utf-8`,
		"a control character":                       `text/csv\u0007`,
		"a parameter that is not name=value":        `text/csv; charset`,
		"white space inside the type":               `text /csv`,
		"a type and subtype separated by no slash":  `text-csv`,
		"a non-ASCII character in the subtype":      `text/\u00e7sv`,
		"quotes that are not closed in a parameter": `text/csv; charset=\"utf-8`,
	}
	for name, mediaType := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := c.call(http.MethodPost, responses, `{"resumeToken":"`+opened["resumeToken"].(string)+`",`+
				`"file":{"name":"draft.csv","mediaType":"`+mediaType+`","contentBase64":"cmVnaW9uLHNhbGVzCm5vcnRoLDEy"}}`)
			expectProblem(g, r, http.StatusBadRequest)
			g.Expect(r.body["errors"]).To(ConsistOf(HaveKeyWithValue("location", "body.file.mediaType")))
			g.Expect(r.raw).NotTo(ContainSubstring("Injected"), "the refused value is not echoed")
		})
	}
	g.Expect(c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/artifacts", "")["items"]).To(BeEmpty(), "a refused answer stores nothing")

	done := c.answer(opened, `"file":{"name":"draft.csv","mediaType":"text/csv; charset=utf-8","contentBase64":"cmVnaW9uLHNhbGVzCm5vcnRoLDEy"}`)
	g.Expect(field(done, "interaction", "state")).To(Equal("Idle"), "the question is still open to a valid answer")
	artifacts := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/artifacts", "")["items"].([]any)
	g.Expect(artifacts).To(ConsistOf(HaveKeyWithValue("mediaType", "text/csv; charset=utf-8")))
}

func TestDeletingAnEntryClosesItsEligibleConversationsOnlyWhenAsked(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	ws := demoWorkspace(t)
	c := workplaceClient{t: t, server: server, ws: ws}
	idle := c.must(http.StatusCreated, http.MethodPost, "/entries/quick-answer/interactions?waitSeconds=10", `{"input":{"question":"Why?"}}`)
	asking := c.must(http.StatusCreated, http.MethodPost, "/entries/guided-request/interactions?waitSeconds=10", `{"input":{"request":"x"}}`)
	in := func(method, path string, headers ...string) response {
		return call(t, server, method, path, "", append([]string{httpapi.WorkspaceHeader, ws}, headers...)...)
	}
	etag := in(http.MethodGet, "/api/entries/quick-answer").header.Get("ETag")
	g.Expect(in(http.MethodDelete, "/api/entries/quick-answer?removeDashboardReferences=true&closeInteractions=true", "If-Match", etag).status).
		To(Equal(http.StatusNoContent))
	closed := c.must(http.StatusOK, http.MethodGet, "/interactions/"+field(idle, "interaction", "id").(string), "")
	g.Expect(field(closed, "interaction", "state")).To(Equal("Closed"))
	g.Expect(c.must(http.StatusOK, http.MethodGet, "/interactions/"+field(idle, "interaction", "id").(string)+"/messages", "")["items"]).To(HaveLen(2),
		"a closed conversation keeps its history")
	expectProblem(g, c.call(http.MethodPost, "/interactions/"+field(idle, "interaction", "id").(string)+"/messages", `{"text":"again"}`), http.StatusConflict)

	etag = in(http.MethodGet, "/api/entries/guided-request").header.Get("ETag")
	g.Expect(in(http.MethodDelete, "/api/entries/guided-request?removeDashboardReferences=true", "If-Match", etag).status).To(Equal(http.StatusNoContent))
	kept := c.must(http.StatusOK, http.MethodGet, "/interactions/"+field(asking, "interaction", "id").(string), "")
	g.Expect(field(kept, "interaction", "state")).To(Equal("Active"), "without the option the conversation stays as it is")
}

func TestWorkThatGoesOnForAMinuteBecomesATaskWhoseTurnsNameVisibleParticipants(t *testing.T) {
	g := NewWithT(t)
	var offset atomic.Int64
	server := workServerWith(t, storeFor(t), func(p *workplace.Store) {
		p.Clock = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	ws, in := entryWorkspace(t, server)
	slow := `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"slow-writer"},"definition":{"displayName":"Slow writer","instructions":"@latencyMs 400\n@respond Done"}}`
	g.Expect(in(http.MethodPost, "/api/agents", slow).status).To(Equal(http.StatusCreated))
	entry := `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"slow"},"definition":{"fields":[{"name":"request","role":"PrimaryInput"}],` +
		`"binding":{"agent":{"name":"slow-writer"}},"participants":{"visibility":"Visible"}}}`
	g.Expect(in(http.MethodPost, "/api/entries", entry).status).To(Equal(http.StatusCreated))
	g.Expect(in(http.MethodPost, "/api/entries/slow/publish", "").status).To(Equal(http.StatusOK))
	c := workplaceClient{t: t, server: server, ws: ws}

	quick := c.must(http.StatusCreated, http.MethodPost, "/entries/slow/interactions?waitSeconds=10", `{"input":{"request":"x"}}`)
	g.Expect(quick).NotTo(HaveKey("task"), "an answer within the minute leaves no Task")

	// Two minutes pass while the agent works.
	go func() {
		time.Sleep(150 * time.Millisecond)
		offset.Store(int64(2 * time.Minute))
	}()
	settled := c.must(http.StatusCreated, http.MethodPost, "/entries/slow/interactions?waitSeconds=10", `{"input":{"request":"y"}}`)
	g.Expect(settled).To(HaveKey("task"), "work observed for a minute is durable: it became a Task")
	activities := c.must(http.StatusOK, http.MethodGet, "/tasks/"+field(settled, "task", "id").(string)+"/activities", "")["items"].([]any)
	g.Expect(activities).To(ContainElement(And(HaveKeyWithValue("label", "Prepared"), HaveKeyWithValue("participant", "slow-writer"))),
		"an Entry whose participants are visible names them in its turns")
}

func TestEveryWorkplaceChangeIsAnOutboxEventNumberedInOrderWithIdsAndNoToken(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		var places *workplace.Store
		server := workServerWith(t, s, func(p *workplace.Store) { places = p })
		ws := demoWorkspace(t)
		c := workplaceClient{t: t, server: server, ws: ws}
		opened := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q3"}}`)
		tokens := []string{opened["resumeToken"].(string)}
		confirm := c.answer(opened, `"value":"table"`)
		tokens = append(tokens, confirm["resumeToken"].(string))
		done := c.answer(confirm, `"confirmed":true`)
		taskID := field(done, "task", "id").(string)
		_, err := places.StoreArtifact(context.Background(), taskID, ws, "notes.txt", "text/plain", []byte("notes"))
		g.Expect(err).NotTo(HaveOccurred())
		c.must(http.StatusOK, http.MethodPost, "/notifications/read-all", "")
		// On PostgreSQL the last events may wait for their numbers still.
		g.Expect(places.NumberEvents(context.Background())).To(Succeed())

		events, err := places.Events(context.Background(), ws, 0, 500)
		g.Expect(err).NotTo(HaveOccurred())
		names := map[string]bool{}
		for i, e := range events {
			g.Expect(e.Seq).To(Equal(int64(i+1)), "numbered in order, none missing")
			names[e.Name] = true
			for _, token := range tokens {
				g.Expect(string(e.Payload)).NotTo(ContainSubstring(token))
			}
			g.Expect(string(e.Payload)).NotTo(ContainSubstring("prt_"))
			g.Expect(string(e.Payload)).NotTo(Or(ContainSubstring("Which format"), ContainSubstring("Q3")), "ids and versions, no content")
		}
		for _, name := range []string{workplace.EventInteractionUpdated, workplace.EventMessageAdded, workplace.EventPendingActionCreated,
			workplace.EventPendingActionResolved, workplace.EventTaskCreated, workplace.EventTaskStatusChanged, workplace.EventTaskActivityAdded,
			workplace.EventTaskResultAdded, workplace.EventTaskArtifactAdded, workplace.EventNotificationCreated, workplace.EventNotificationUpdated,
			workplace.EventUnreadNotificationCountChanged} {
			g.Expect(names).To(HaveKey(name))
		}
		last, err := places.LastEventSeq(context.Background(), ws)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last).To(Equal(int64(len(events))))
	})
}

func TestOnlyADeliverableTheResultDeclaresBecomesAnArtifactOfItsTask(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	ws, in := entryWorkspace(t, server)
	writer := `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"writer"},"definition":{"displayName":"Writer",` +
		`"instructions":"@showResult # Q3 report: North 12\n@deliverable q3-report.md text/markdown"}}`
	chatty := `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"chatty"},"definition":{"displayName":"Chatty",` +
		`"instructions":"@respond # Q3 report: North 12"}}`
	for _, c := range []struct{ path, body string }{
		{"/api/agents", writer},
		{"/api/agents", chatty},
		{"/api/entries", entryBody("write", "Write", `{"agent":{"name":"writer"}}`)},
		{"/api/entries", entryBody("chat", "Chat", `{"agent":{"name":"chatty"}}`)},
	} {
		r := in(http.MethodPost, c.path, c.body)
		g.Expect(r.status).To(Equal(http.StatusCreated), "%s: %v", c.path, r.body)
	}
	for _, entry := range []string{"write", "chat"} {
		g.Expect(in(http.MethodPost, "/api/entries/"+entry+"/publish", "").status).To(Equal(http.StatusOK))
	}
	c := workplaceClient{t: t, server: server, ws: ws}

	chat := c.must(http.StatusCreated, http.MethodPost, "/entries/chat/interactions?waitSeconds=10", `{"input":{"request":"Q3"}}`)
	g.Expect(field(chat, "interaction", "state")).To(Equal("Idle"), "%v", chat)
	g.Expect(chat["task"]).To(BeNil(), "conversation text is never turned into a file, nor into a Task")

	opened := c.must(http.StatusCreated, http.MethodPost, "/entries/write/interactions?waitSeconds=10", `{"input":{"request":"Q3"}}`)
	taskID, _ := field(opened, "task", "id").(string)
	g.Expect(taskID).NotTo(BeEmpty(), "a declared deliverable is durable: its work is a Task: %v", opened)
	artifacts := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/artifacts", "")["items"].([]any)
	g.Expect(artifacts).To(ConsistOf(And(HaveKeyWithValue("name", "q3-report.md"), HaveKeyWithValue("mediaType", "text/markdown"),
		HaveKeyWithValue("length", BeNumerically("==", len("# Q3 report: North 12"))))))
	download := c.call(http.MethodGet, "/tasks/"+taskID+"/artifacts/"+artifacts[0].(map[string]any)["id"].(string)+"/content", "")
	g.Expect(download.status).To(Equal(http.StatusOK))
	g.Expect(download.raw).To(Equal("# Q3 report: North 12"))
	results := c.must(http.StatusOK, http.MethodGet, "/tasks/"+taskID+"/results", "")
	g.Expect(results["items"]).To(ConsistOf(HaveKeyWithValue("action", "showResult")))
	g.Expect(fmt.Sprint(results)).To(ContainSubstring("q3-report.md"))
	g.Expect(fmt.Sprint(results)).NotTo(ContainSubstring("storageKey"), "storage keys stay inside")

	task := c.call(http.MethodGet, "/tasks/"+taskID, "")
	g.Expect(c.call(http.MethodDelete, "/tasks/"+taskID, "", "If-Match", task.header.Get("ETag")).status).To(Equal(http.StatusNoContent))
	expectProblem(g, c.call(http.MethodGet, "/tasks/"+taskID+"/artifacts/"+artifacts[0].(map[string]any)["id"].(string)+"/content", ""), http.StatusNotFound)
}
