package service_test

import (
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
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
