package service_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// Once a question was escalated on expiry it is the workspace's Owners' and Admins' to answer: a
// Member who opened the conversation (and holds its resume token) is refused with 403 Problem
// Details that say why, an Admin answers it, and the conversation's question says who may.
func TestAnEscalatedQuestionIsAnsweredOnlyByTheWorkspacesOwnersAndAdmins(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, s)
		publishDemo(t, e.ws.RouteName)
		e.account("mary", e.ws, identity.RoleMember)
		e.account("olga", e.ws, identity.RoleAdmin)
		mary, olga := e.signIn("mary", adminPassword), e.signIn("olga", adminPassword)
		base := "/api/workspaces/" + e.ws.RouteName

		opened := e.do(mary, http.MethodPost, base+"/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"Q3 sales"}}`)
		g.Expect(opened.status).To(Equal(http.StatusCreated), "%v", opened.body)
		interaction := field(opened.body, "interaction", "id").(string)
		action := field(opened.body, "action", "pendingAction", "id").(string)
		answer := `{"resumeToken":"` + opened.body["resumeToken"].(string) + `","value":"table"}`
		path := base + "/interactions/" + interaction + "/pending-actions/" + action + "/responses"

		// As the expiry of a question declared to escalate does (work.ExpirePendingActions).
		_, err := s.DB().ExecContext(context.Background(), s.Rebind(`UPDATE pending_actions SET escalated_at = ? WHERE id = ?`), time.Now().UnixMilli(), action)
		g.Expect(err).NotTo(HaveOccurred())

		// Every read that carries the question says whose it is now, before anyone clicks.
		conversation := e.do(mary, http.MethodGet, base+"/interactions/"+interaction, "")
		g.Expect(field(conversation.body, "action", "pendingAction", "mayAnswer")).To(BeFalse())
		g.Expect(field(conversation.body, "action", "pendingAction", "answerRefusal")).To(Equal("EscalatedToAdministrators"))
		g.Expect(field(conversation.body, "action", "pendingAction", "escalatedAt")).NotTo(BeNil())
		for who, want := range map[string]bool{"mary": false, "olga": true} {
			session := map[string]*http.Cookie{"mary": mary, "olga": olga}[who]
			inbox := e.do(session, http.MethodGet, base+"/pending-actions", "")
			g.Expect(inbox.status).To(Equal(http.StatusOK), "%v", inbox.body)
			items := inbox.body["items"].([]any)
			g.Expect(items).To(HaveLen(1))
			g.Expect(items[0]).To(HaveKeyWithValue("mayAnswer", want), "%s's inbox", who)
			taskID := items[0].(map[string]any)["taskId"].(string)
			task := e.do(session, http.MethodGet, base+"/tasks/"+taskID, "")
			g.Expect(task.status).To(Equal(http.StatusOK), "%v", task.body)
			g.Expect(task.body["pendingActions"].([]any)[0]).To(HaveKeyWithValue("mayAnswer", want), "%s's Task detail", who)
			if !want {
				g.Expect(items[0]).To(HaveKeyWithValue("answerRefusal", "EscalatedToAdministrators"))
			}
		}
		notes := e.do(mary, http.MethodGet, base+"/notifications", "")
		g.Expect(notes.status).To(Equal(http.StatusOK), "%v", notes.body)
		var question map[string]any
		for _, n := range notes.body["items"].([]any) {
			if n.(map[string]any)["pendingActionId"] == action {
				question = n.(map[string]any)
			}
		}
		g.Expect(question).NotTo(BeNil(), "the Member was told of the question: %v", notes.body)
		g.Expect(question).To(HaveKeyWithValue("mayAnswer", false))
		g.Expect(question).To(HaveKeyWithValue("answerRefusal", "EscalatedToAdministrators"))
		g.Expect(question).To(HaveKey("escalatedAt"))

		// Nor is she given a fresh token, which would only stop the one an Admin's page holds.
		reissue := e.do(mary, http.MethodPost, base+"/interactions/"+interaction+"/pending-actions/"+action+"/resume-token", "")
		expectProblem(g, reissue, http.StatusForbidden)
		g.Expect(reissue.body).To(HaveKeyWithValue("code", "EscalatedToAdministrators"))

		refused := e.do(mary, http.MethodPost, path, answer)
		expectProblem(g, refused, http.StatusForbidden)
		g.Expect(refused.body).To(HaveKeyWithValue("code", "EscalatedToAdministrators"))
		g.Expect(refused.body["detail"]).To(ContainSubstring("only they may answer it now"))

		// A Platform administrator, though no member of the workspace, is told it may answer.
		platform := e.do(e.adminCookie, http.MethodGet, base+"/pending-actions", "")
		g.Expect(platform.status).To(Equal(http.StatusOK), "%v", platform.body)
		g.Expect(platform.body["items"].([]any)[0]).To(HaveKeyWithValue("mayAnswer", true))

		answered := e.do(olga, http.MethodPost, path, answer)
		g.Expect(answered.status).To(Equal(http.StatusOK), "an Admin answers the escalated question: %v", answered.body)
	})
}
