// Package usage is the Usage area of the service API: the model usage of a workspace by day,
// agent, Entry and model, and where its budgets stand.
package usage

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/usage"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/internal/resourcenamespace"
)

const tagUsage = "Usage"

// DefaultDays is the range a usage read covers without from: the last 30 days, today included.
const DefaultDays = 30

// MaxDays bounds the range of one usage read.
const MaxDays = 366

// UsageItem is one group of usage. A grouping not asked for is empty.
type UsageItem struct {
	Day          string        `json:"day" doc:"The UTC day (YYYY-MM-DD), when grouped by day"`
	Agent        string        `json:"agent" doc:"The agent, when grouped by agent"`
	Entry        string        `json:"entry" doc:"The Entry the runs came from (empty for runs from none), when grouped by entry"`
	Model        string        `json:"model" doc:"The model that answered, when grouped by model"`
	ModelCalls   int64         `json:"modelCalls"`
	InputTokens  int64         `json:"inputTokens"`
	OutputTokens int64         `json:"outputTokens"`
	TotalTokens  int64         `json:"totalTokens"`
	Cost         *usage.Amount `json:"cost,omitempty" doc:"The cost, when the calls were priced; a group priced in two currencies is two items"`
}

// BudgetStatus is where one budget of the workspace, its Entries or its Agents stands in its current
// period.
type BudgetStatus struct {
	Scope       string        `json:"scope" enum:"Workspace,Entry,Agent"`
	Name        string        `json:"name"`
	Period      string        `json:"period" enum:"Day,Week,Month"`
	PeriodStart string        `json:"periodStart" doc:"The first day of the current period (UTC)"`
	LimitTokens int64         `json:"limitTokens,omitempty"`
	LimitCost   *usage.Amount `json:"limitCost,omitempty"`
	UsedTokens  int64         `json:"usedTokens"`
	UsedCost    *usage.Amount `json:"usedCost,omitempty"`
	Exceeded    bool          `json:"exceeded" doc:"The period reached a limit: the next model call of a run it covers waits for an approval to continue"`
}

// UsageReport is the usage of a workspace in a range of days and where its budgets stand.
type UsageReport struct {
	From      string         `json:"from"`
	To        string         `json:"to"`
	GroupBy   []string       `json:"groupBy"`
	Items     []UsageItem    `json:"items"`
	Truncated bool           `json:"truncated,omitempty" doc:"There were more groups than the read returns (5,000)"`
	Budgets   []BudgetStatus `json:"budgets"`
}

// Routes registers the usage of a workspace.
func Routes(s *httpapi.Server) {
	s.AddTags(&huma.Tag{Name: tagUsage, Description: "Usage: the tokens and cost of the model calls of runs, and budgets."})
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-workspace-usage", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/usage", Tags: []string{tagUsage},
		Summary: "Read the model usage of a workspace by day, agent, Entry or model, and where its budgets stand",
		Description: "Every model call of a run is recorded with the outcome it led to: its input and output tokens and, when " +
			"its ModelProvider's pricing lists the model, its cost. from and to are UTC days (YYYY-MM-DD, inclusive; the last " +
			"30 days by default, at most 366); groupBy is day (the default), agent, entry or model, repeated or comma-separated. " +
			"budgets lists the budgets of the workspace (namespace annotations platform/budget-tokens-per-day, ...), of its " +
			"Entries and of its Agents, with what their current period used.",
		Errors: []int{http.StatusBadRequest, http.StatusServiceUnavailable},
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		Workspace string   `path:"workspace" maxLength:"128" doc:"Workspace id or route name"`
		From      string   `query:"from" doc:"First UTC day, YYYY-MM-DD; 29 days before to by default"`
		To        string   `query:"to" doc:"Last UTC day, YYYY-MM-DD; today by default"`
		GroupBy   []string `query:"groupBy,explode" doc:"day, agent, entry or model; repeated or comma-separated; day by default"`
	}) (*struct{ Body UsageReport }, error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		if s.Work() == nil {
			return nil, huma.Error503ServiceUnavailable("the Work store is not configured on this server")
		}
		from, to, groupBy, err := parseQuery(in.From, in.To, in.GroupBy, time.Now())
		if err != nil {
			return nil, err
		}
		rows, truncated, err := s.Work().UsageReport(ctx, rc.WorkspaceID, from, to, groupBy)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := UsageReport{From: from, To: to, GroupBy: groupBy, Items: make([]UsageItem, 0, len(rows)), Truncated: truncated}
		for _, r := range rows {
			out.Items = append(out.Items, UsageItem{Day: r.Day, Agent: r.Agent, Entry: r.Entry, Model: r.Model, ModelCalls: r.ModelCalls,
				InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, TotalTokens: r.Tokens(), Cost: usage.MoneyOf(r.CostMicros, r.Currency)})
		}
		if out.Budgets, err = budgets(ctx, s, rc); err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body UsageReport }{Body: out}, nil
	})
}

// parseQuery checks the range and the groupings: 400 Problem Details naming the parameter.
func parseQuery(fromParam, toParam string, groupParam []string, now time.Time) (from, to string, groupBy []string, err error) {
	bad := func(param, rule string) error {
		return huma.Error400BadRequest("the query parameter "+param+" is invalid", &huma.ErrorDetail{Location: "query." + param, Message: rule})
	}
	day := func(param, v string) (time.Time, error) {
		t, err := time.Parse(usage.DayLayout, v)
		if err != nil || len(v) != len(usage.DayLayout) {
			return t, bad(param, "a UTC day as YYYY-MM-DD")
		}
		return t, nil
	}
	last := usage.PeriodStart(platformv1.DayBudget, now)
	if toParam != "" {
		if last, err = day("to", toParam); err != nil {
			return
		}
	}
	first := last.AddDate(0, 0, -(DefaultDays - 1))
	if fromParam != "" {
		if first, err = day("from", fromParam); err != nil {
			return
		}
	}
	switch {
	case first.After(last):
		return "", "", nil, bad("from", "a day no later than to")
	case last.Sub(first) >= MaxDays*24*time.Hour:
		return "", "", nil, bad("from", "at most 366 days before to")
	}
	for _, p := range groupParam {
		for _, g := range strings.Split(p, ",") {
			g = strings.TrimSpace(g)
			switch g {
			case work.GroupByDay, work.GroupByAgent, work.GroupByEntry, work.GroupByModel:
				if !slices.Contains(groupBy, g) {
					groupBy = append(groupBy, g)
				}
			default:
				return "", "", nil, bad("groupBy", "day, agent, entry or model")
			}
		}
	}
	if len(groupBy) == 0 {
		groupBy = []string{work.GroupByDay}
	}
	return first.Format(usage.DayLayout), last.Format(usage.DayLayout), groupBy, nil
}

// budgets are the budgets of the workspace and of the Entries and Agents of its resource
// namespaces (its own and its Packs': an object of a Pack is named publisher.name/name, as its
// usage is), with what their current period used.
func budgets(ctx context.Context, s *httpapi.Server, rc httpapi.RequestContext) ([]BudgetStatus, error) {
	limits := usage.WorkspaceBudgets(rc.Namespace, s.Config(), rc.Annotations())
	namespaces, err := resourcenamespace.OfWorkspace(ctx, s.Reads(), rc.Namespace)
	if err != nil {
		return nil, err
	}
	for _, ns := range namespaces {
		rns := string(resourcenamespace.Of(ns))
		entries := &platformv1.EntryList{}
		if err := s.Reads().List(ctx, entries, client.InNamespace(ns.Name)); err != nil {
			return nil, err
		}
		for _, e := range entries.Items {
			l, err := usage.LimitsOf(usage.ScopeEntry, executor.RecordedName(rns, e.Name), e.Definition.Budgets)
			if err != nil {
				return nil, err
			}
			limits = append(limits, l...)
		}
		agents := &platformv1.AgentList{}
		if err := s.Reads().List(ctx, agents, client.InNamespace(ns.Name)); err != nil {
			return nil, err
		}
		for _, a := range agents.Items {
			l, err := usage.LimitsOf(usage.ScopeAgent, executor.RecordedName(rns, a.Name), a.Definition.Budgets)
			if err != nil {
				return nil, err
			}
			limits = append(limits, l...)
		}
	}
	out := make([]BudgetStatus, 0, len(limits))
	now := time.Now()
	for _, l := range limits {
		start := usage.PeriodStart(l.Period, now)
		tokens, cost, err := s.Work().UsedSince(ctx, rc.WorkspaceID, l.Scope, l.Name, usage.Day(start), l.Currency)
		if err != nil {
			return nil, err
		}
		b := BudgetStatus{Scope: l.Scope, Name: l.Name, Period: string(l.Period), PeriodStart: start.Format(usage.DayLayout), LimitTokens: l.Tokens,
			UsedTokens: tokens, Exceeded: l.Exceeded(tokens, cost)}
		if l.CostMicros > 0 {
			b.LimitCost, b.UsedCost = usage.MoneyOf(l.CostMicros, l.Currency), usage.MoneyOf(cost, l.Currency)
		}
		out = append(out, b)
	}
	return out, nil
}
