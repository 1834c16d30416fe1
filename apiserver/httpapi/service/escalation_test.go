package service_test

import (
	"context"
	"net/http"
	"strings"
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
		// It is news to her, no longer a question to answer.
		g.Expect(question).To(HaveKeyWithValue("attention", false))
		g.Expect(question["title"]).To(HavePrefix("Nobody answered in time, so the question went to the workspace's administrators: "))

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

// "Needs you" counts what its reader may answer: a question escalated to the workspace's Owners
// and Admins leaves a Member's count and is listed apart (mayAnswer=false) instead, an Owner's,
// an Admin's and a Platform administrator's count keep it, and one who may only read work answers
// nothing.
func TestTheNeedsYouCountHoldsOnlyTheQuestionsItsReaderMayAnswer(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, s)
		publishDemo(t, e.ws.RouteName)
		e.account("mary", e.ws, identity.RoleMember)
		e.account("olga", e.ws, identity.RoleAdmin)
		e.account("vera", e.ws, identity.RoleViewer)
		sessions := map[string]*http.Cookie{"mary": e.signIn("mary", adminPassword), "olga": e.signIn("olga", adminPassword),
			"vera": e.signIn("vera", adminPassword), "platform administrator": e.adminCookie}
		base := "/api/workspaces/" + e.ws.RouteName
		var actions []string
		for _, request := range []string{"Q3 sales", "Q4 sales"} {
			opened := e.do(sessions["mary"], http.MethodPost, base+"/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"`+request+`"}}`)
			g.Expect(opened.status).To(Equal(http.StatusCreated), "%v", opened.body)
			actions = append(actions, field(opened.body, "action", "pendingAction", "id").(string))
		}
		// As the expiry of a question declared to escalate does (work.ExpirePendingActions).
		_, err := s.DB().ExecContext(context.Background(), s.Rebind(`UPDATE pending_actions SET escalated_at = ? WHERE id = ?`), time.Now().UnixMilli(), actions[0])
		g.Expect(err).NotTo(HaveOccurred())

		ids := func(r response) []string {
			var out []string
			for _, item := range r.body["items"].([]any) {
				out = append(out, item.(map[string]any)["id"].(string))
			}
			return out
		}
		for who, want := range map[string]struct {
			count             int
			mayAnswer, others []string
		}{
			"mary":                   {count: 1, mayAnswer: []string{actions[1]}, others: []string{actions[0]}},
			"olga":                   {count: 2, mayAnswer: actions},
			"platform administrator": {count: 2, mayAnswer: actions},
			"vera":                   {count: 0, others: actions},
		} {
			all := e.do(sessions[who], http.MethodGet, base+"/pending-actions", "")
			g.Expect(all.status).To(Equal(http.StatusOK), "%s: %v", who, all.body)
			g.Expect(all.body).To(HaveKeyWithValue("openCount", BeNumerically("==", 2)), who)
			g.Expect(all.body).To(HaveKeyWithValue("mayAnswerCount", BeNumerically("==", want.count)), who)
			g.Expect(ids(all)).To(ConsistOf(actions), "%s: with no filter, every open question", who)

			mine := e.do(sessions[who], http.MethodGet, base+"/pending-actions?mayAnswer=true", "")
			g.Expect(mine.status).To(Equal(http.StatusOK), "%s: %v", who, mine.body)
			g.Expect(ids(mine)).To(ConsistOf(want.mayAnswer), "%s's questions to answer", who)
			g.Expect(mine.body).To(HaveKeyWithValue("mayAnswerCount", BeNumerically("==", want.count)), who)
			others := e.do(sessions[who], http.MethodGet, base+"/pending-actions?mayAnswer=false", "")
			g.Expect(others.status).To(Equal(http.StatusOK), "%s: %v", who, others.body)
			g.Expect(ids(others)).To(ConsistOf(want.others), "the questions %s may not answer", who)
			for _, item := range others.body["items"].([]any) {
				g.Expect(item).To(HaveKeyWithValue("mayAnswer", false), who)
			}
		}
		bad := e.do(sessions["mary"], http.MethodGet, base+"/pending-actions?mayAnswer=maybe", "")
		expectProblem(g, bad, http.StatusUnprocessableEntity)
	})
}

// A Member's read of the inbox while questions are escalated reads the Member's role once: the
// count of what the Member may answer and the list's mayAnswer of each question share it (it was
// read twice, 5 statements instead of 4, by the reads that list the escalated questions). With no
// question escalated, the same read reads no role at all.
func TestAnInboxReadWithEscalatedQuestionsReadsTheCallersRoleOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, s)
		publishDemo(t, e.ws.RouteName)
		e.account("mary", e.ws, identity.RoleMember)
		mary := e.signIn("mary", adminPassword)
		base := "/api/workspaces/" + e.ws.RouteName
		var actions []string
		for _, request := range []string{"Q3 sales", "Q4 sales"} {
			opened := e.do(mary, http.MethodPost, base+"/entries/prepare-report/interactions?waitSeconds=10", `{"input":{"request":"`+request+`"}}`)
			g.Expect(opened.status).To(Equal(http.StatusCreated), "%v", opened.body)
			actions = append(actions, field(opened.body, "action", "pendingAction", "id").(string))
		}
		// statementsOf is what one read of the inbox runs, the executor's idle polls left out:
		// the session's check that identities did not change, the counts, the role when any
		// question is escalated, and the page.
		statementsOf := func(query string) []string {
			e.do(mary, http.MethodGet, base+"/pending-actions"+query, "") // the session is known to the process
			before := s.Counts()
			stop := s.RecordStatements()
			r := e.do(mary, http.MethodGet, base+"/pending-actions"+query, "")
			recorded := stop()
			g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
			own, polls := workStatements(recorded)
			g.Expect(s.Counts().Sub(before).Statements).To(BeNumerically("==", len(own)+polls), "the store counts what it recorded")
			return own
		}
		reads := map[string]struct{ plain, escalated int }{
			"":                 {plain: 3, escalated: 4},
			"?mayAnswer=false": {plain: 2, escalated: 4}, // with nothing escalated, a Member may answer all: no page to read
			"?mayAnswer=true":  {plain: 3, escalated: 4},
		}
		plain := map[string][]string{}
		for q := range reads {
			plain[q] = statementsOf(q)
		}
		// As the expiry of a question declared to escalate does (work.ExpirePendingActions).
		_, err := s.DB().ExecContext(context.Background(), s.Rebind(`UPDATE pending_actions SET escalated_at = ? WHERE id = ?`), time.Now().UnixMilli(), actions[0])
		g.Expect(err).NotTo(HaveOccurred())
		for q, want := range reads {
			escalated := statementsOf(q)
			t.Logf("the inbox read %q: %d statements with no question escalated, %d with one:\n%s", q, len(plain[q]), len(escalated), strings.Join(escalated, "\n"))
			g.Expect(roleReads(plain[q])).To(Equal(0), "%q reads no role while nothing is escalated", q)
			g.Expect(roleReads(escalated)).To(Equal(1), "%q reads the Member's role once", q)
			g.Expect(plain[q]).To(HaveLen(want.plain), q)
			g.Expect(escalated).To(HaveLen(want.escalated), q)
		}
	})
}

// roleReads counts the statements that read whether the caller is an Owner or Admin of the
// workspace (identity.Service.IsOwnerOrAdmin).
func roleReads(statements []string) int {
	n := 0
	for _, q := range statements {
		if strings.Contains(q, "m.role IN ('Owner', 'Admin')") && strings.Contains(q, "platform_administrators") {
			n++
		}
	}
	return n
}
