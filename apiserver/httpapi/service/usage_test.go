package service_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/resourcenamespace"
)

func TestTheUsageRouteAnswers400NamingTheParameterOfABadRangeOrGrouping(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		ws := routingWorkspace(t)
		read := func(query string) response {
			return call(t, server, http.MethodGet, "/api/workspaces/"+ws+"/usage"+query, "")
		}
		for rule, tt := range map[string]struct{ query, param string }{
			"a day is written YYYY-MM-DD":              {"?from=2026-13-01", "from"},
			"to is a day too":                          {"?to=yesterday", "to"},
			"from is no later than to":                 {"?from=2026-11-02&to=2026-11-01", "from"},
			"a range holds at most 366 days":           {"?from=2025-01-01&to=2026-01-02", "from"},
			"groupings are day, agent, entry or model": {"?groupBy=day,week", "groupBy"},
		} {
			r := read(tt.query)
			expectProblem(g, r, http.StatusBadRequest)
			g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "query."+tt.param)), rule)
		}

		today := time.Now().UTC().Format(time.DateOnly)
		r := read("")
		g.Expect(r.status).To(Equal(http.StatusOK), "body: %v", r.body)
		g.Expect(r.body).To(And(HaveKeyWithValue("to", today), HaveKeyWithValue("from", time.Now().UTC().AddDate(0, 0, -29).Format(time.DateOnly)),
			HaveKeyWithValue("groupBy", []any{"day"}), HaveKeyWithValue("items", BeEmpty()), HaveKeyWithValue("budgets", BeEmpty())),
			"the last 30 days by day, by default")
		r = read("?from=2025-01-01&to=2026-01-01&groupBy=agent&groupBy=day,model,agent")
		g.Expect(r.status).To(Equal(http.StatusOK), "366 days are read: body: %v", r.body)
		g.Expect(r.body["groupBy"]).To(Equal([]any{"agent", "day", "model"}), "repeated or comma-separated, each once")

		annotateWorkspace(t, ws, map[string]string{"platform/budget-tokens-per-day": "1000", "platform/budget-cost-per-month": "5.00 USD"})
		r = read("")
		g.Expect(r.status).To(Equal(http.StatusOK), "body: %v", r.body)
		g.Expect(r.body["budgets"]).To(ConsistOf(
			And(HaveKeyWithValue("scope", "Workspace"), HaveKeyWithValue("name", ws), HaveKeyWithValue("period", "Day"),
				HaveKeyWithValue("periodStart", today), HaveKeyWithValue("limitTokens", BeNumerically("==", 1000)),
				HaveKeyWithValue("usedTokens", BeNumerically("==", 0)), HaveKeyWithValue("exceeded", false), Not(HaveKey("limitCost"))),
			And(HaveKeyWithValue("period", "Month"), HaveKeyWithValue("limitCost", map[string]any{"amount": "5.000000", "currency": "USD"}),
				HaveKeyWithValue("usedCost", map[string]any{"amount": "0.000000", "currency": "USD"}), Not(HaveKey("limitTokens"))),
		))
	})
}

// A Pack's agent and the workspace's own agent of the same name have budgets of their own: the
// usage read lists both, the Pack's named publisher.name/agent as its usage is.
func TestTheUsageReadListsThePackAgentsBudgetsNamedWithTheirResourceNamespace(t *testing.T) {
	g := NewWithT(t)
	db, err := store.Open(context.Background(), store.Options{DataDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { db.Close() })
	server := workServer(t, db)
	ws := routingWorkspace(t)
	packNamespace, err := resourcenamespace.Ensure(context.Background(), kube, ws, "acme.kit")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = kube.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: packNamespace}})
	})
	for ns, tokens := range map[string]int64{ws: 100, packNamespace: 200} {
		agent := &platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "writer"}, Definition: platformv1.AgentDefinition{
			Instructions: "Write", Budgets: []platformv1.Budget{{Period: platformv1.DayBudget, Tokens: &tokens}}}}
		g.Expect(kube.Create(context.Background(), agent)).To(Succeed())
	}
	g.Eventually(func() any {
		return call(t, server, http.MethodGet, "/api/workspaces/"+ws+"/usage", "").body["budgets"]
	}).WithTimeout(10 * time.Second).Should(ConsistOf(
		And(HaveKeyWithValue("scope", "Agent"), HaveKeyWithValue("name", "writer"), HaveKeyWithValue("limitTokens", BeNumerically("==", 100))),
		And(HaveKeyWithValue("scope", "Agent"), HaveKeyWithValue("name", "acme.kit/writer"), HaveKeyWithValue("limitTokens", BeNumerically("==", 200))),
	))
}
