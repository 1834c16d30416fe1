package work

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"platform.dev/platform/apiserver/store"
	"sort"
	"strings"
	"time"

	"platform.dev/platform/apiserver/usage"
)

// ModelCall is the usage of one model call of an Agent step, recorded in the transaction that
// records what the call decided, so that no call is counted twice and none is lost once its
// outcome is.
type ModelCall struct {
	Step    string
	Attempt int
	Agent   string
	// Entry is the Entry the run came from, as the Work API names it ("report", or
	// "publisher.name/report" for a Pack's); empty when none.
	Entry         string
	ModelProvider string
	Model         string
	InputTokens   int64
	OutputTokens  int64
	// CostMicros is the cost in millionths of Currency; Currency is empty when the model has no
	// price.
	CostMicros int64
	Currency   string
}

// ModelUsage is summed usage as reads show it.
type ModelUsage struct {
	ModelCalls   int64 `json:"modelCalls"`
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	TotalTokens  int64 `json:"totalTokens"`
	// Cost is the cost in the currency of the latest priced call (what a single-currency read
	// always showed); Costs has every currency.
	Cost *usage.Amount `json:"cost,omitempty"`
	// Costs is the cost in each currency the calls were priced in, by currency code: a run whose
	// agents' providers price in USD and EUR costs both, which no one sum can say.
	Costs []usage.Amount `json:"costs,omitempty"`
}

// CurrencySum is the sum of the calls priced in one currency ("" for unpriced calls), with the
// latest of them (created_at, then id), so that sums of several currencies tell which was last.
type CurrencySum struct {
	Currency                              string
	ModelCalls, InputTokens, OutputTokens int64
	CostMicros                            int64
	LatestAt                              int64
	LatestID                              string
}

// CurrencySumColumns are the columns of model_usage that a query grouped by currency selects, in
// the order ScanCurrencySum reads them (after the query's own grouping columns).
var CurrencySumColumns = currencySumColumns("")

// currencySumColumns are CurrencySumColumns of model_usage named by alias ("u.").
func currencySumColumns(alias string) string {
	return strings.ReplaceAll(`$currency, COUNT(*), COALESCE(SUM($input_tokens), 0), COALESCE(SUM($output_tokens), 0),
	COALESCE(SUM($cost_micros), 0), MAX($created_at), MAX($id)`, "$", alias)
}

// ScanCurrencySum reads CurrencySumColumns after dest (a query's own grouping columns).
func ScanCurrencySum(row rowScanner, dest ...any) (CurrencySum, error) {
	var c CurrencySum
	err := row.Scan(append(dest, &c.Currency, &c.ModelCalls, &c.InputTokens, &c.OutputTokens, &c.CostMicros, &c.LatestAt, &c.LatestID)...)
	return c, err
}

// UsageOf is the usage of sums, one per currency: the calls and tokens of all, Cost in the
// currency of the latest priced call, Costs in each priced currency by code.
func UsageOf(sums []CurrencySum) *ModelUsage {
	t, costs := totalsOf(sums)
	u := usageOf(t)
	u.Costs = costs
	return u
}

// totalsOf sums sums: Totals' cost is that of the latest priced currency; costs are all of them.
func totalsOf(sums []CurrencySum) (usage.Totals, []usage.Amount) {
	var (
		t      usage.Totals
		latest *CurrencySum
		costs  []usage.Amount
	)
	sorted := append([]CurrencySum{}, sums...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Currency < sorted[j].Currency })
	for i, c := range sorted {
		t.ModelCalls += c.ModelCalls
		t.InputTokens += c.InputTokens
		t.OutputTokens += c.OutputTokens
		if c.Currency == "" {
			continue
		}
		costs = append(costs, *usage.MoneyOf(c.CostMicros, c.Currency))
		if latest == nil || c.LatestAt > latest.LatestAt || (c.LatestAt == latest.LatestAt && c.LatestID > latest.LatestID) {
			latest = &sorted[i]
		}
	}
	if latest != nil {
		t.CostMicros, t.Currency = latest.CostMicros, latest.Currency
	}
	return t, costs
}

// usageOf is the summed usage of totals (one currency).
func usageOf(t usage.Totals) *ModelUsage {
	return &ModelUsage{ModelCalls: t.ModelCalls, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, TotalTokens: t.Tokens(),
		Cost: usage.MoneyOf(t.CostMicros, t.Currency)}
}

// BudgetCrossing is what an approval to continue past a budget shows: the budget, its period and
// what the period used when the call waited.
type BudgetCrossing struct {
	Scope       string        `json:"scope"`
	Name        string        `json:"name"`
	Period      string        `json:"period"`
	PeriodStart string        `json:"periodStart"`
	LimitTokens int64         `json:"limitTokens,omitempty"`
	LimitCost   *usage.Amount `json:"limitCost,omitempty"`
	UsedTokens  int64         `json:"usedTokens"`
	UsedCost    *usage.Amount `json:"usedCost,omitempty"`
	// Agent is the agent whose model call waits.
	Agent string `json:"agent"`
	// Key names the budget in its period (usage.Limit.Key): the decision is recorded under it.
	Key string `json:"key"`
}

// BudgetDecision is a person's decision (or an expiry's) on continuing a run past a budget in one
// period.
type BudgetDecision struct {
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"`
	By       string `json:"by,omitempty"`
}

// insertUsage records model calls of run, made now, in one statement.
func (s *Store) insertUsage(ctx context.Context, tx *sql.Tx, run FlowRun, calls []ModelCall, now time.Time) error {
	rows := make([]string, 0, len(calls))
	args := make([]any, 0, 15*len(calls))
	for _, c := range calls {
		rows = append(rows, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, newID(), run.WorkspaceID, run.ID, c.Step, c.Attempt, c.Agent, c.Entry, c.ModelProvider, c.Model, c.InputTokens,
			c.OutputTokens, c.CostMicros, c.Currency, usage.Day(now), ms(now))
	}
	if _, err := s.txExec(store.Pipelined(ctx), tx, `INSERT INTO model_usage (id, workspace_id, run_id, step, attempt, agent, entry, model_provider, model,
		input_tokens, output_tokens, cost_micros, currency, day, created_at) VALUES `+strings.Join(rows, ", "), args...); err != nil {
		return fmt.Errorf("work: model usage: %w", err)
	}
	return nil
}

// sumCalls sums calls as the reads sum their rows, by currency; the calls are in the order they
// were made.
func sumCalls(calls []ModelCall) []CurrencySum {
	var sums []CurrencySum
	for i, c := range calls {
		at := -1
		for j := range sums {
			if sums[j].Currency == c.Currency {
				at = j
			}
		}
		if at < 0 {
			sums = append(sums, CurrencySum{Currency: c.Currency})
			at = len(sums) - 1
		}
		sum := &sums[at]
		sum.ModelCalls++
		sum.InputTokens += c.InputTokens
		sum.OutputTokens += c.OutputTokens
		sum.CostMicros += c.CostMicros
		sum.LatestAt = int64(i + 1)
	}
	return sums
}

// stepUsage sums the recorded model calls of a run's step, in tx.
func (s *Store) stepUsage(ctx context.Context, tx *sql.Tx, runID, step string) (*ModelUsage, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT `+CurrencySumColumns+` FROM model_usage WHERE run_id = ? AND step = ? GROUP BY currency`), runID, step)
	if err != nil {
		return nil, err
	}
	sums, err := scanSums(rows)
	if err != nil {
		return nil, err
	}
	return UsageOf(sums), nil
}

// scanSums reads the rows of a query of CurrencySumColumns alone, and closes them.
func scanSums(rows *sql.Rows) ([]CurrencySum, error) {
	defer rows.Close()
	var sums []CurrencySum
	for rows.Next() {
		c, err := ScanCurrencySum(rows)
		if err != nil {
			return nil, err
		}
		sums = append(sums, c)
	}
	return sums, rows.Err()
}

// RunUsage sums the model calls of a run.
func (s *Store) RunUsage(ctx context.Context, runID string) (*ModelUsage, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT `+CurrencySumColumns+` FROM model_usage WHERE run_id = ? GROUP BY currency`), runID)
	if err != nil {
		return nil, err
	}
	sums, err := scanSums(rows)
	if err != nil {
		return nil, err
	}
	return UsageOf(sums), nil
}

// StepsUsage sums the model calls of each step of a run that made any, by step.
func (s *Store) StepsUsage(ctx context.Context, runID string) (map[string]*ModelUsage, error) {
	return s.usageBy(ctx, `SELECT step, `+CurrencySumColumns+` FROM model_usage WHERE run_id = ? GROUP BY step, currency`, runID)
}

// usageBy runs q, grouped by a key and currency (the key first, then CurrencySumColumns), and
// sums each key's currencies.
func (s *Store) usageBy(ctx context.Context, q string, args ...any) (map[string]*ModelUsage, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	sums := map[string][]CurrencySum{}
	for rows.Next() {
		var key string
		c, err := ScanCurrencySum(rows, &key)
		if err != nil {
			return nil, err
		}
		sums[key] = append(sums[key], c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]*ModelUsage, len(sums))
	for key, s := range sums {
		out[key] = UsageOf(s)
	}
	return out, nil
}

// TasksUsage sums the model calls of the runs of each of a workspace's Tasks, by Task.
func (s *Store) TasksUsage(ctx context.Context, workspaceID string, taskIDs ...string) (map[string]*ModelUsage, error) {
	if len(taskIDs) == 0 {
		return map[string]*ModelUsage{}, nil
	}
	args := []any{workspaceID}
	for _, id := range taskIDs {
		args = append(args, id)
	}
	return s.usageBy(ctx, TasksUsageQuery(len(taskIDs)), args...)
}

// TasksUsageQuery sums the model calls of the runs of n Tasks of a workspace (its arguments: the
// workspace, then the Tasks' ids), by Task and currency, in one statement.
func TasksUsageQuery(n int) string {
	return `SELECT r.work_task_id, ` + currencySumColumns("u.") + ` FROM model_usage u JOIN flow_runs r ON r.id = u.run_id
		WHERE r.workspace_id = ? AND r.work_task_id IN (?` + strings.Repeat(", ?", n-1) + `) GROUP BY r.work_task_id, u.currency`
}

// RunsUsageQuery sums the model calls of n runs of a workspace (its arguments: the workspace,
// then the runs' ids), by run and currency, in one statement.
func RunsUsageQuery(n int) string {
	return `SELECT run_id, ` + CurrencySumColumns + ` FROM model_usage WHERE workspace_id = ? AND run_id IN (?` +
		strings.Repeat(", ?", n-1) + `) GROUP BY run_id, currency`
}

// scopeColumn is the column of model_usage that a budget scope selects on, besides the workspace.
func scopeColumn(scope string) string {
	switch scope {
	case usage.ScopeAgent:
		return "agent"
	case usage.ScopeEntry:
		return "entry"
	}
	return ""
}

// UsedSince sums a workspace's model calls from the day since on (UTC, YYYY-MM-DD), of the
// scope's name (an Agent's or an Entry's; the whole workspace's for ScopeWorkspace), with the
// cost in currency (usage priced otherwise is left out of it).
func (s *Store) UsedSince(ctx context.Context, workspaceID, scope, name, since, currency string) (tokens, costMicros int64, err error) {
	where, args := `workspace_id = ? AND day >= ?`, []any{workspaceID, since}
	if col := scopeColumn(scope); col != "" {
		where, args = `workspace_id = ? AND `+col+` = ? AND day >= ?`, []any{workspaceID, name, since}
	}
	err = s.queryRow(ctx, `SELECT COALESCE(SUM(input_tokens + output_tokens), 0),
		COALESCE(SUM(CASE WHEN currency = ? THEN cost_micros ELSE 0 END), 0) FROM model_usage WHERE `+where,
		append([]any{currency}, args...)...).Scan(&tokens, &costMicros)
	return tokens, costMicros, err
}

// Groupings of a usage report.
const (
	GroupByDay   = "day"
	GroupByAgent = "agent"
	GroupByEntry = "entry"
	GroupByModel = "model"
)

// UsageRow is one group of a usage report: the values of its grouping columns (the others
// empty), its currency, and its sums.
type UsageRow struct {
	Day, Agent, Entry, Model string
	usage.Totals
}

// MaxUsageRows bounds a usage report.
const MaxUsageRows = 5000

// UsageReport sums a workspace's model calls from day from to day to (inclusive, YYYY-MM-DD) by
// the groupings asked (each group split by currency), ordered by its groups. truncated is true
// when there were more than MaxUsageRows groups.
func (s *Store) UsageReport(ctx context.Context, workspaceID, from, to string, groupBy []string) (rows []UsageRow, truncated bool, err error) {
	columns := map[string]string{GroupByDay: "day", GroupByAgent: "agent", GroupByEntry: "entry", GroupByModel: "model"}
	var groups []string
	for _, g := range groupBy {
		col, ok := columns[g]
		if !ok {
			return nil, false, fmt.Errorf("groupBy %q: %w", g, ErrInvalidInput)
		}
		groups = append(groups, col)
	}
	selected := make([]string, 0, 4)
	for _, col := range []string{"day", "agent", "entry", "model"} {
		used := false
		for _, g := range groups {
			used = used || g == col
		}
		if used {
			selected = append(selected, col)
		} else {
			selected = append(selected, "''")
		}
	}
	group := append(append([]string{}, groups...), "currency")
	q := `SELECT ` + strings.Join(selected, ", ") + `, currency, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cost_micros)
		FROM model_usage WHERE workspace_id = ? AND day >= ? AND day <= ? GROUP BY ` + strings.Join(group, ", ") +
		` ORDER BY ` + strings.Join(group, ", ") + ` LIMIT ?`
	r, err := s.db.DB().QueryContext(ctx, s.q(q), workspaceID, from, to, MaxUsageRows+1)
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	for r.Next() {
		var u UsageRow
		if err := r.Scan(&u.Day, &u.Agent, &u.Entry, &u.Model, &u.Currency, &u.ModelCalls, &u.InputTokens, &u.OutputTokens, &u.CostMicros); err != nil {
			return nil, false, err
		}
		rows = append(rows, u)
	}
	if len(rows) > MaxUsageRows {
		return rows[:MaxUsageRows], true, r.Err()
	}
	return rows, false, r.Err()
}

// usageJSON is an event's usage as stored.
func usageJSON(u *ModelUsage) sql.NullString {
	if u == nil {
		return sql.NullString{}
	}
	b, _ := json.Marshal(u)
	return sql.NullString{String: string(b), Valid: true}
}

// recordUsage records model calls of run in tx and gives the event of events that tells their
// step's outcome (its completion, failure or retry, else the step's first event) the usage of the
// step's calls so far.
func (s *Store) recordUsage(ctx context.Context, tx *sql.Tx, run FlowRun, calls []ModelCall, events []Event, now time.Time, fresh bool,
	prior map[string][]ModelCall) ([]Event, error) {
	if err := s.insertUsage(ctx, tx, run, calls, now); err != nil {
		return nil, err
	}
	// One commit may hold the outcomes of several steps (steps answered in the process commit
	// together): each step's outcome tells that step's usage.
	events = append([]Event{}, events...)
	told := map[string]bool{}
	for _, c := range calls {
		step := c.Step
		if told[step] {
			continue
		}
		told[step] = true
		at := -1
		for i, e := range events {
			if e.Step != step {
				continue
			}
			switch e.Type {
			case EventStepCompleted, EventStepRetried, EventRunFailed:
				at = i
			default:
				if at < 0 && e.Type != EventStepStarted {
					at = i
				}
			}
		}
		if at < 0 {
			continue
		}
		var u *ModelUsage
		before, carried := prior[step]
		if fresh || carried {
			// A new run has no earlier calls, and a step's carried calls are all it had before:
			// the step's usage is what those and calls hold.
			mine := append([]ModelCall{}, before...)
			for _, c := range calls {
				if c.Step == step {
					mine = append(mine, c)
				}
			}
			u = UsageOf(sumCalls(mine))
		} else {
			var err error
			if u, err = s.stepUsage(ctx, tx, run.ID, step); err != nil {
				return nil, err
			}
		}
		events[at].Usage = u
	}
	return events, nil
}
