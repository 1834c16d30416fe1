package e2e

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// TestASIGKILLBetweenAnAnswerAndTheNextStepLeavesTheConversationConsistent: an answer and its User
// message commit together, so a server killed right after an answer comes back with the answer
// recorded once, the run moving on, and the conversation ending as an uninterrupted one does.
func TestASIGKILLBetweenAnAnswerAndTheNextStepLeavesTheConversationConsistent(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data")}
		if opts.DatabaseURL != "" {
			cs.args = []string{"--database-url", opts.DatabaseURL}
		}
		c := cs.start()
		t.Cleanup(cs.stop)
		setupReportFlow(c)
		c.must(http.StatusCreated, http.MethodPost, "/api/entries", `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"report"},`+
			`"definition":{"fields":[{"name":"title","role":"PrimaryInput"}],"binding":{"flow":{"name":"report"}}}}`)
		c.must(http.StatusOK, http.MethodPost, "/api/entries/report/publish", "")
		const ws = "/api/workspaces/default"

		opened := c.must(http.StatusCreated, http.MethodPost, ws+"/entries/report/interactions?waitSeconds=10", `{"input":{"title":"Quarterly"}}`)
		interaction := ws + "/interactions/" + opened["interaction"].(map[string]any)["id"].(string)
		action := opened["action"].(map[string]any)["pendingAction"].(map[string]any)["id"].(string)
		answered := c.must(http.StatusOK, http.MethodPost, interaction+"/pending-actions/"+action+"/responses?waitSeconds=0",
			`{"resumeToken":"`+opened["resumeToken"].(string)+`","value":"detailed"}`)
		token := answered["resumeToken"].(string)
		cs.sigkill()
		c = cs.start()

		var next map[string]any
		g.Eventually(func(g Gomega) {
			_, next = c.call(http.MethodGet, interaction, "")
			g.Expect(next["action"]).To(HaveKeyWithValue("type", "requestConfirmation"))
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		confirm := next["action"].(map[string]any)["pendingAction"].(map[string]any)["id"].(string)
		c.must(http.StatusOK, http.MethodPost, interaction+"/pending-actions/"+confirm+"/responses",
			`{"resumeToken":"`+token+`","confirmed":true}`)
		g.Eventually(func(g Gomega) {
			_, done := c.call(http.MethodGet, interaction, "")
			g.Expect(done["interaction"]).To(HaveKeyWithValue("state", "Idle"))
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		messages := c.must(http.StatusOK, http.MethodGet, interaction+"/messages", "")["items"].([]any)
		var got []string
		for _, m := range messages {
			msg := m.(map[string]any)
			got = append(got, msg["role"].(string)+":"+msg["kind"].(string)+":"+msg["text"].(string))
		}
		g.Expect(got).To(Equal([]string{
			"User:text:Quarterly",
			"Platform:question:Which level of detail?",
			"User:answer:Detailed",
			"Platform:question:Publish the report?",
			"User:answer:Yes",
			"Platform:reply:Report ready",
		}), "every message once, in order")
	})
}

// TestASIGKILLWhileAnAnswerIsInFlightLeavesItAnsweredOnceOrStillOpen: an answer commits with the
// resumed run's steps up to the next agent's call, in one commit, acknowledged only after it. A
// server killed while the answer is on its way (before that commit, or after it but before the
// acknowledgement) comes back with the question still open, to be answered again, or answered
// once and the run moving on; either way the conversation ends as an uninterrupted one does.
func TestASIGKILLWhileAnAnswerIsInFlightLeavesItAnsweredOnceOrStillOpen(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data")}
		if opts.DatabaseURL != "" {
			cs.args = []string{"--database-url", opts.DatabaseURL}
		}
		c := cs.start()
		t.Cleanup(cs.stop)
		setupReportFlow(c)
		c.must(http.StatusCreated, http.MethodPost, "/api/entries", `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"report"},`+
			`"definition":{"fields":[{"name":"title","role":"PrimaryInput"}],"binding":{"flow":{"name":"report"}}}}`)
		c.must(http.StatusOK, http.MethodPost, "/api/entries/report/publish", "")
		const ws = "/api/workspaces/default"

		opened := c.must(http.StatusCreated, http.MethodPost, ws+"/entries/report/interactions?waitSeconds=10", `{"input":{"title":"Quarterly"}}`)
		interaction := ws + "/interactions/" + opened["interaction"].(map[string]any)["id"].(string)
		choice := opened["action"].(map[string]any)["pendingAction"].(map[string]any)["id"].(string)
		answer := `{"resumeToken":"` + opened["resumeToken"].(string) + `","value":"detailed"}`
		// The answer goes out and the server dies a moment later, whatever became of it.
		go func() {
			resp, err := http.Post(c.base+interaction+"/pending-actions/"+choice+"/responses", "application/json", bytes.NewBufferString(answer))
			if err == nil {
				resp.Body.Close()
			}
		}()
		time.Sleep(time.Duration(rand.N(20)) * time.Millisecond)
		cs.sigkill()
		c = cs.start()

		var next map[string]any
		g.Eventually(func(g Gomega) {
			_, next = c.call(http.MethodGet, interaction, "")
			g.Expect(next["action"]).To(HaveKeyWithValue("type", BeElementOf("requestChoice", "requestConfirmation")))
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		if next["action"].(map[string]any)["type"] == "requestChoice" {
			t.Log("the answer was not taken before the kill: it is answered again")
			g.Expect(next["action"].(map[string]any)["pendingAction"].(map[string]any)["id"]).To(Equal(choice))
			c.must(http.StatusOK, http.MethodPost, interaction+"/pending-actions/"+choice+"/responses", answer)
			g.Eventually(func(g Gomega) {
				_, next = c.call(http.MethodGet, interaction, "")
				g.Expect(next["action"]).To(HaveKeyWithValue("type", "requestConfirmation"))
			}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		} else {
			t.Log("the answer was taken before the kill")
		}
		// The token of the answer's response may never have arrived: a fresh one answers.
		confirm := next["action"].(map[string]any)["pendingAction"].(map[string]any)["id"].(string)
		reissued := c.must(http.StatusOK, http.MethodPost, interaction+"/pending-actions/"+confirm+"/resume-token", "")
		c.must(http.StatusOK, http.MethodPost, interaction+"/pending-actions/"+confirm+"/responses",
			`{"resumeToken":"`+reissued["resumeToken"].(string)+`","confirmed":true}`)
		g.Eventually(func(g Gomega) {
			_, done := c.call(http.MethodGet, interaction, "")
			g.Expect(done["interaction"]).To(HaveKeyWithValue("state", "Idle"))
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		messages := c.must(http.StatusOK, http.MethodGet, interaction+"/messages", "")["items"].([]any)
		var got []string
		for _, m := range messages {
			msg := m.(map[string]any)
			got = append(got, msg["role"].(string)+":"+msg["kind"].(string)+":"+msg["text"].(string))
		}
		g.Expect(got).To(Equal([]string{
			"User:text:Quarterly",
			"Platform:question:Which level of detail?",
			"User:answer:Detailed",
			"Platform:question:Publish the report?",
			"User:answer:Yes",
			"Platform:reply:Report ready",
		}), "every message once, in order")
	})
}
