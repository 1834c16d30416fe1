package service_test

import (
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/workplace"
)

// An Entry's follow-up policy decides what a message does while the conversation's work is in
// progress (here: its run paused by a person, so that it stays in progress as long as the test
// needs): Enqueue waits for the run to end, Reject refuses the message with 409 and starts
// nothing, Interrupt cancels the run as a cancel does and starts the new one at once.
func TestAnEntrysFollowUpPolicyDecidesWhatAMessageDoesWhileWorkIsInProgress(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		server := workServer(t, s)
		ws := demoWorkspace(t)
		c := workplaceClient{t: t, server: server, ws: ws}
		in := func(method, path, body string) response {
			return call(t, server, method, path, body, "X-Platform-Workspace", ws)
		}
		runsOf := func(g Gomega, interaction string) (ids, states, parents []string) {
			rows, err := s.DB().Query(s.Rebind(`SELECT id, state, COALESCE(parent_flow_run_id, '') FROM flow_runs WHERE interaction_id = ? ORDER BY created_at, id`), interaction)
			g.Expect(err).NotTo(HaveOccurred())
			defer rows.Close()
			for rows.Next() {
				var id, state, parent string
				g.Expect(rows.Scan(&id, &state, &parent)).To(Succeed())
				ids, states, parents = append(ids, id), append(states, state), append(parents, parent)
			}
			return ids, states, parents
		}
		for name, tc := range map[string]struct {
			policy string
			check  func(g Gomega, interaction, running string, sent response)
		}{
			"Enqueue (the default) records the message and starts it when the run ends": {policy: "", check: func(g Gomega, interaction, running string, sent response) {
				g.Expect(sent.status).To(Equal(http.StatusAccepted), "%v", sent.body)
				g.Expect(field(sent.body, "message", "pending")).To(BeTrue())
				g.Expect(field(sent.body, "interaction", "followUpPolicy")).To(Equal("Enqueue"))
				_, states, _ := runsOf(g, interaction)
				g.Expect(states).To(Equal([]string{"Paused"}), "the run in progress goes on; no run starts yet")
			}},
			"Reject answers 409 with its code and starts no run": {policy: "Reject", check: func(g Gomega, interaction, running string, sent response) {
				expectProblem(g, sent, http.StatusConflict)
				g.Expect(sent.body).To(HaveKeyWithValue("code", "FollowUpRejected"))
				g.Expect(sent.body["detail"]).To(ContainSubstring("follow-up policy is Reject"))
				_, states, _ := runsOf(g, interaction)
				g.Expect(states).To(Equal([]string{"Paused"}), "no run starts and the run in progress goes on")
				messages := c.must(http.StatusOK, http.MethodGet, "/interactions/"+interaction+"/messages", "")["items"].([]any)
				g.Expect(texts(messages)).NotTo(ContainElement(ContainSubstring("Hurry up")), "the refused message is not recorded")
			}},
			"Interrupt cancels the running run and starts the new one with the message": {policy: "Interrupt", check: func(g Gomega, interaction, running string, sent response) {
				g.Expect(sent.status).To(Equal(http.StatusAccepted), "%v", sent.body)
				g.Expect(field(sent.body, "message")).NotTo(HaveKey("pending"), "the message starts its run now")
				g.Expect(field(sent.body, "action", "type")).To(Equal("requestChoice"), "the new run works on the message")
				ids, states, parents := runsOf(g, interaction)
				g.Expect(states).To(Equal([]string{"Cancelled", "ActionRequired"}))
				g.Expect(ids[0]).To(Equal(running))
				g.Expect(parents[1]).To(Equal(running), "the cancelled run is the new one's terminal predecessor")
				run := in(http.MethodGet, "/api/flowRuns/"+running, "")
				g.Expect(run.body).To(HaveKeyWithValue("reason", workplace.InterruptReason))
				messages := texts(c.must(http.StatusOK, http.MethodGet, "/interactions/"+interaction+"/messages", "")["items"].([]any))
				g.Expect(messages).To(ContainElements("System:cancelled:The work was cancelled", "User:text:Hurry up"))
			}},
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				entry := "follow-ups-" + strings.ToLower(tc.policy+"default")
				policy := ""
				if tc.policy != "" {
					policy = `,"followUps":{"policy":"` + tc.policy + `"}`
				}
				created := in(http.MethodPost, "/api/entries", `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"`+entry+`"},`+
					`"definition":{"fields":[{"name":"request","type":"Text","role":"PrimaryInput"}],"binding":{"flow":{"name":"prepare-report-builtin"}}`+policy+`}}`)
				g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
				if tc.policy != "" {
					g.Expect(field(created.body, "definition", "followUps", "policy")).To(Equal(tc.policy), "the Entry's API view shows the policy")
				}
				g.Expect(in(http.MethodPost, "/api/entries/"+entry+"/publish", "").status).To(Equal(http.StatusOK))

				opened := c.must(http.StatusCreated, http.MethodPost, "/entries/"+entry+"/interactions?waitSeconds=10", `{"input":{"request":"Q3"}}`)
				interaction := field(opened, "interaction", "id").(string)
				ids, _, _ := runsOf(g, interaction)
				g.Expect(ids).To(HaveLen(1))
				paused := in(http.MethodPost, "/api/flowRuns/"+ids[0]+"/pause", "")
				g.Expect(paused.status).To(Equal(http.StatusOK), "%v", paused.body)

				tc.check(g, interaction, ids[0], c.call(http.MethodPost, "/interactions/"+interaction+"/messages?waitSeconds=10", `{"text":"Hurry up"}`))
			})
		}
	})
}
