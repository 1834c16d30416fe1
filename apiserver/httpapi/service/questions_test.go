package service_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
)

// reissuePath is the route that gives a fresh resume token for an open question of a conversation.
func reissuePath(exchange map[string]any) string {
	return "/interactions/" + field(exchange, "interaction", "id").(string) + "/pending-actions/" +
		field(exchange, "action", "pendingAction", "id").(string) + "/resume-token"
}

func answerPath(exchange map[string]any) string {
	return "/interactions/" + field(exchange, "interaction", "id").(string) + "/pending-actions/" +
		field(exchange, "action", "pendingAction", "id").(string) + "/responses?waitSeconds=10"
}

// A page without the question's token (a reload, another tab, a notification) asks for a fresh
// one: the stored hash rotates, the token given before stops answering, the new one answers once,
// the reissue is audited without the token, and no later read or event carries it.
func TestAReissuedResumeTokenReplacesTheOneGivenBeforeAndIsNeverReadAgain(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		var places *workplace.Store
		server := workServerWith(t, s, func(p *workplace.Store) { places = p })
		ws := demoWorkspace(t)
		c := workplaceClient{t: t, server: server, ws: ws}
		opened := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q3"}}`)
		old := opened["resumeToken"].(string)

		reissued := c.call(http.MethodPost, reissuePath(opened), "")
		g.Expect(reissued.status).To(Equal(http.StatusOK), "%v", reissued.body)
		g.Expect(reissued.header.Get("Cache-Control")).To(Equal("no-store"))
		token := reissued.body["resumeToken"].(string)
		g.Expect(token).To(HavePrefix("prt_"))
		g.Expect(token).NotTo(Equal(old))
		g.Expect(field(reissued.body, "pendingAction", "id")).To(Equal(field(opened, "action", "pendingAction", "id")))

		stale := c.call(http.MethodPost, answerPath(opened), `{"resumeToken":"`+old+`","value":"table"}`)
		g.Expect(stale.status).To(Equal(http.StatusBadRequest), "the token given before no longer answers: %v", stale.body)

		// No later read carries the token or its hash.
		interaction := field(opened, "interaction", "id").(string)
		taskID := field(opened, "task", "id").(string)
		for _, path := range []string{"/interactions/" + interaction, "/interactions/" + interaction + "/messages", "/tasks/" + taskID,
			"/tasks", "/pending-actions", "/notifications"} {
			r := c.call(http.MethodGet, path, "")
			g.Expect(r.status).To(Equal(http.StatusOK), path)
			g.Expect(r.raw).NotTo(Or(ContainSubstring(token), ContainSubstring("prt_"), ContainSubstring("hash")), path)
		}

		answered := c.call(http.MethodPost, answerPath(opened), `{"resumeToken":"`+token+`","value":"table"}`)
		g.Expect(answered.status).To(Equal(http.StatusOK), "the fresh token answers: %v", answered.body)
		g.Expect(c.call(http.MethodPost, reissuePath(opened), "").status).To(Equal(http.StatusConflict), "an answered question gets no token")

		g.Expect(places.NumberEvents(context.Background())).To(Succeed())
		events, err := places.Events(context.Background(), ws, 0, 500)
		g.Expect(err).NotTo(HaveOccurred())
		for _, e := range events {
			g.Expect(string(e.Payload)).NotTo(ContainSubstring(token))
		}

		audit, err := (&identity.Audit{Store: s}).Latest(context.Background(), 200)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(audit).To(ContainElement(And(HaveField("Action", identity.ActionResumeTokenReissued),
			HaveField("TargetID", field(opened, "action", "pendingAction", "id")), HaveField("ActorID", "development"))))
	})
}

// The reissues of one question are bounded: a sixth in a minute is 429 Problem Details; another
// workspace's question is not found.
func TestReissuingIsBoundedPerQuestionAndScopedToTheWorkspace(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	c := workplaceClient{t: t, server: server, ws: demoWorkspace(t)}
	opened := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q3"}}`)

	other := workplaceClient{t: t, server: server, ws: demoWorkspace(t)}
	g.Expect(other.call(http.MethodPost, reissuePath(opened), "").status).To(Equal(http.StatusNotFound), "another workspace's question")

	for range work.MaxReissuesPerMinute {
		g.Expect(c.call(http.MethodPost, reissuePath(opened), "").status).To(Equal(http.StatusOK))
	}
	over := c.call(http.MethodPost, reissuePath(opened), "")
	g.Expect(over.status).To(Equal(http.StatusTooManyRequests), "%v", over.body)
	g.Expect(over.header.Get("Content-Type")).To(Equal("application/problem+json"))
	g.Expect(over.raw).NotTo(ContainSubstring("prt_"))
}

// An autonomous Task's read carries the questions it waits on, without a token or hash; the
// inbox lists every open question of the workspace, oldest first, a page at a time; a question's
// notification is resolved (read, no longer attention) when its question is answered.
func TestOpenQuestionsAreReadOnTheirTaskAndInTheInboxOldestFirst(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		ws := demoWorkspace(t)
		c := workplaceClient{t: t, server: server, ws: ws}
		first := c.must(http.StatusCreated, http.MethodPost, "/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q1"}}`)
		time.Sleep(5 * time.Millisecond)
		submitted := call(t, server, http.MethodPost, "/api/work/workitems?waitSeconds=10",
			`{"type":"report","title":"Nightly","instruction":"Prepare","flowReference":{"name":"prepare-report-builtin"}}`,
			httpapi.WorkspaceHeader, ws)
		g.Expect(submitted.status).To(Equal(http.StatusAccepted), "%v", submitted.body)
		taskID := field(submitted.body, "workItem", "id").(string)
		actionID := field(submitted.body, "flowRun", "pendingAction", "id").(string)

		task := c.call(http.MethodGet, "/tasks/"+taskID, "")
		g.Expect(task.status).To(Equal(http.StatusOK))
		g.Expect(task.body).NotTo(HaveKey("interactionId"))
		g.Expect(task.body["pendingActions"]).To(ConsistOf(And(HaveKeyWithValue("id", actionID), HaveKeyWithValue("kind", "choice"),
			HaveKeyWithValue("prompt", Not(BeEmpty())), HaveKeyWithValue("options", HaveLen(3)), HaveKey("expiresAt"))))
		g.Expect(task.raw).NotTo(Or(ContainSubstring("prt_"), ContainSubstring("hash"), ContainSubstring("token")))
		g.Expect(c.must(http.StatusOK, http.MethodGet, "/tasks", "")["items"]).To(ContainElement(And(HaveKeyWithValue("id", taskID),
			HaveKeyWithValue("pendingActions", HaveLen(1)))), "the list items carry them too")

		inbox := c.must(http.StatusOK, http.MethodGet, "/pending-actions?state=open", "")
		g.Expect(inbox["openCount"]).To(BeNumerically("==", 2))
		items := inbox["items"].([]any)
		g.Expect(items).To(HaveLen(2))
		g.Expect(items[0]).To(And(HaveKeyWithValue("id", field(first, "action", "pendingAction", "id")),
			HaveKeyWithValue("interactionId", field(first, "interaction", "id"))), "oldest first")
		g.Expect(items[1]).To(And(HaveKeyWithValue("id", actionID), HaveKeyWithValue("taskId", taskID), Not(HaveKey("interactionId"))))
		page := c.must(http.StatusOK, http.MethodGet, "/pending-actions?take=1", "")
		g.Expect(page["items"]).To(ConsistOf(HaveKeyWithValue("id", field(first, "action", "pendingAction", "id"))))
		next := c.must(http.StatusOK, http.MethodGet, "/pending-actions?take=1&after="+page["next"].(string), "")
		g.Expect(next["items"]).To(ConsistOf(HaveKeyWithValue("id", actionID)))
		g.Expect(next).NotTo(HaveKey("next"))
		g.Expect(c.call(http.MethodGet, "/pending-actions?after=nonsense", "").status).To(Equal(http.StatusUnprocessableEntity))

		waiting := func() map[string]any {
			for _, n := range c.must(http.StatusOK, http.MethodGet, "/notifications", "")["items"].([]any) {
				if n.(map[string]any)["pendingActionId"] == actionID {
					return n.(map[string]any)
				}
			}
			return nil
		}
		g.Expect(waiting()).To(And(HaveKeyWithValue("attention", true), HaveKeyWithValue("read", false), Not(HaveKey("resolved"))))
		unread := c.must(http.StatusOK, http.MethodGet, "/notifications", "")["unreadCount"].(float64)

		answered := c.call(http.MethodPost, "/tasks/"+taskID+"/pending-actions/"+actionID+"/responses", `{"value":"table"}`)
		g.Expect(answered.status).To(Equal(http.StatusOK), "%v", answered.body)
		note := waiting()
		g.Expect(note).To(And(HaveKeyWithValue("resolved", true), HaveKeyWithValue("resolution", "answered"), HaveKeyWithValue("read", true),
			HaveKeyWithValue("attention", false)), "the question's notification follows its question")
		g.Expect(note["title"]).To(HavePrefix("Question answered: "))
		// The next question may be asked meanwhile: the count is checked against the list, as the badge is.
		list := c.must(http.StatusOK, http.MethodGet, "/notifications", "")
		unreadItems := 0
		for _, n := range list["items"].([]any) {
			if n.(map[string]any)["read"] == false {
				unreadItems++
			}
		}
		g.Expect(list["unreadCount"]).To(BeNumerically("==", unreadItems), "the unread count is the unread items")
		g.Expect(unreadItems).To(BeNumerically("<=", unread))
		g.Expect(c.must(http.StatusOK, http.MethodGet, "/pending-actions", "")["items"]).NotTo(ContainElement(HaveKeyWithValue("id", actionID)),
			"an answered question leaves the inbox")
		messages := c.must(http.StatusOK, http.MethodGet, "/interactions/"+field(first, "interaction", "id").(string)+"/messages", "")["items"].([]any)
		g.Expect(messages).To(ContainElement(HaveKeyWithValue("question", HaveKeyWithValue("status", "created"))))
		g.Expect(strings.Contains(answered.raw, "prt_")).To(BeFalse())
	})
}
