package work

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
	ModelCalls   int64         `json:"modelCalls"`
	InputTokens  int64         `json:"inputTokens"`
	OutputTokens int64         `json:"outputTokens"`
	TotalTokens  int64         `json:"totalTokens"`
	Cost         *usage.Amount `json:"cost,omitempty"`
}

// usageOf is the summed usage of totals.
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
	if _, err := s.txExec(ctx, tx, `INSERT INTO model_usage (id, workspace_id, run_id, step, attempt, agent, entry, model_provider, model,
		input_tokens, output_tokens, cost_micros, currency, day, created_at) VALUES `+strings.Join(rows, ", "), args...); err != nil {
		return fmt.Errorf("work: model usage: %w", err)
	}
	return nil
}

// sumCalls sums calls as sumUsage sums their rows: the cost is that of the currency of the last
// priced call.
func sumCalls(calls []ModelCall) usage.Totals {
	var t usage.Totals
	for _, c := range calls {
		t.ModelCalls++
		t.InputTokens += c.InputTokens
		t.OutputTokens += c.OutputTokens
		if c.Currency != "" {
			t.Currency = c.Currency
		}
	}
	for _, c := range calls {
		if c.Currency == t.Currency && t.Currency != "" {
			t.CostMicros += c.CostMicros
		}
	}
	return t
}

// stepUsage sums the recorded model calls of a run's step, in tx.
func (s *Store) stepUsage(ctx context.Context, tx *sql.Tx, runID, step string) (*ModelUsage, error) {
	t, err := s.sumUsage(func(q string, args ...any) rowScanner { return s.txQueryRow(ctx, tx, q, args...) },
		`run_id = ? AND step = ?`, runID, step)
	if err != nil {
		return nil, err
	}
	return usageOf(t), nil
}

// sumUsage sums the model calls that where selects; the cost is that of the currency of the
// latest priced call (usage priced in another currency is left out of the cost).
func (s *Store) sumUsage(row func(string, ...any) rowScanner, where string, args ...any) (usage.Totals, error) {
	var t usage.Totals
	err := row(`SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
		COALESCE((SELECT currency FROM model_usage WHERE `+where+` AND currency <> '' ORDER BY created_at DESC, id DESC LIMIT 1), '')
		FROM model_usage WHERE `+where, append(append([]any{}, args...), args...)...).Scan(&t.ModelCalls, &t.InputTokens, &t.OutputTokens, &t.Currency)
	if err != nil || t.Currency == "" {
		return t, err
	}
	err = row(`SELECT COALESCE(SUM(cost_micros), 0) FROM model_usage WHERE `+where+` AND currency = ?`, append(append([]any{}, args...), t.Currency)...).
		Scan(&t.CostMicros)
	return t, err
}

// RunUsage sums the model calls of a run.
func (s *Store) RunUsage(ctx context.Context, runID string) (*ModelUsage, error) {
	t, err := s.sumUsage(func(q string, args ...any) rowScanner { return s.queryRow(ctx, q, args...) }, `run_id = ?`, runID)
	if err != nil {
		return nil, err
	}
	return usageOf(t), nil
}

// StepsUsage sums the model calls of each step of a run that made any, by step.
func (s *Store) StepsUsage(ctx context.Context, runID string) (map[string]*ModelUsage, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT step, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cost_micros), MAX(currency)
		FROM model_usage WHERE run_id = ? GROUP BY step`), runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]*ModelUsage{}
	for rows.Next() {
		var (
			step string
			t    usage.Totals
		)
		if err := rows.Scan(&step, &t.ModelCalls, &t.InputTokens, &t.OutputTokens, &t.CostMicros, &t.Currency); err != nil {
			return nil, err
		}
		out[step] = usageOf(t)
	}
	return out, rows.Err()
}

// TasksUsage sums the model calls of the runs of each of a workspace's Tasks, by Task.
func (s *Store) TasksUsage(ctx context.Context, workspaceID string, taskIDs ...string) (map[string]*ModelUsage, error) {
	out := map[string]*ModelUsage{}
	if len(taskIDs) == 0 {
		return out, nil
	}
	args := []any{workspaceID}
	for _, id := range taskIDs {
		args = append(args, id)
	}
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT r.work_task_id, COUNT(*), SUM(u.input_tokens), SUM(u.output_tokens),
		SUM(u.cost_micros), MAX(u.currency) FROM model_usage u JOIN flow_runs r ON r.id = u.run_id
		WHERE r.workspace_id = ? AND r.work_task_id IN (?`+strings.Repeat(", ?", len(taskIDs)-1)+`) GROUP BY r.work_task_id`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			task string
			t    usage.Totals
		)
		if err := rows.Scan(&task, &t.ModelCalls, &t.InputTokens, &t.OutputTokens, &t.CostMicros, &t.Currency); err != nil {
			return nil, err
		}
		out[task] = usageOf(t)
	}
	return out, rows.Err()
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
func (s *Store) recordUsage(ctx context.Context, tx *sql.Tx, run FlowRun, calls []ModelCall, events []Event, now time.Time, fresh bool) ([]Event, error) {
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
		if fresh {
			// A new run has no earlier calls: the step's usage is what calls hold.
			var mine []ModelCall
			for _, c := range calls {
				if c.Step == step {
					mine = append(mine, c)
				}
			}
			u = usageOf(sumCalls(mine))
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
