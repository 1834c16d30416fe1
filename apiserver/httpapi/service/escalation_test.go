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

		refused := e.do(mary, http.MethodPost, path, answer)
		expectProblem(g, refused, http.StatusForbidden)
		g.Expect(refused.body).To(HaveKeyWithValue("code", "EscalatedToAdministrators"))
		g.Expect(refused.body["detail"]).To(ContainSubstring("only they may answer it now"))

		answered := e.do(olga, http.MethodPost, path, answer)
		g.Expect(answered.status).To(Equal(http.StatusOK), "an Admin answers the escalated question: %v", answered.body)
	})
}
