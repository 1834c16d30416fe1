package e2e

import (
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
