// Package usage is the arithmetic of model usage: exact decimal money in millionths of a currency
// (micros), prices per million tokens, the calendar periods of budgets in UTC, and the budgets a
// workspace, an Entry and an Agent declare. It has no store and no server: the Work store records
// usage, the executor checks budgets and the service API reads both with it.
package usage

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// MicrosPerUnit is how many micros make one unit of a currency.
const MicrosPerUnit = 1_000_000

// maxDecimal bounds the amounts parsed (a trillion units): far beyond any budget or price, and
// small enough that every sum of them stays an int64.
const maxDecimal = 1_000_000_000_000 * MicrosPerUnit

// ParseMicros reads a non-negative decimal string with at most six decimals ("2.50") as micros.
func ParseMicros(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 6 || strings.Contains(frac, ".") || (strings.Contains(s, ".") && frac == "") {
		return 0, fmt.Errorf("%q is not a decimal number with at most six decimals", s)
	}
	for _, r := range whole + frac {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("%q is not a decimal number with at most six decimals", s)
		}
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > maxDecimal/MicrosPerUnit {
		return 0, fmt.Errorf("%q is too large", s)
	}
	f := int64(0)
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	return w*MicrosPerUnit + f, nil
}

// FormatMicros writes micros as a decimal string with six decimals ("0.000400").
func FormatMicros(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	return fmt.Sprintf("%s%d.%06d", sign, micros/MicrosPerUnit, micros%MicrosPerUnit)
}

// Price is what a model's tokens cost: micros of Currency per million tokens, input and output
// apart.
type Price struct {
	Currency               string
	InputPerMillionMicros  int64
	OutputPerMillionMicros int64
}

// Cost is what input and output tokens cost at p, in micros, rounded half up to a whole micro
// (each call is rounded once, so sums are exact integers).
func (p Price) Cost(input, output int64) int64 {
	total := new(big.Int).Mul(big.NewInt(input), big.NewInt(p.InputPerMillionMicros))
	total.Add(total, new(big.Int).Mul(big.NewInt(output), big.NewInt(p.OutputPerMillionMicros)))
	total.Add(total, big.NewInt(500_000))
	total.Quo(total, big.NewInt(1_000_000))
	if !total.IsInt64() {
		return 1<<63 - 1
	}
	return total.Int64()
}

// PriceOf is the price of model in a provider's pricing; false when it declares none.
func PriceOf(pricing *platformv1.ModelPricing, model string) (Price, bool, error) {
	if pricing == nil {
		return Price{}, false, nil
	}
	for _, m := range pricing.Models {
		if m.ModelID != model {
			continue
		}
		in, err := ParseMicros(m.InputPerMillion)
		if err != nil {
			return Price{}, false, fmt.Errorf("pricing of model %s: inputPerMillion: %w", model, err)
		}
		out, err := ParseMicros(m.OutputPerMillion)
		if err != nil {
			return Price{}, false, fmt.Errorf("pricing of model %s: outputPerMillion: %w", model, err)
		}
		return Price{Currency: pricing.Currency, InputPerMillionMicros: in, OutputPerMillionMicros: out}, true, nil
	}
	return Price{}, false, nil
}

// The settings of the Deterministic model's price: it has no ModelProvider when
// AI:Provider=Deterministic (and the built-in Deterministic provider declares no pricing), so
// it costs nothing unless the instance says otherwise.
const (
	DeterministicInputSetting    = "Platform:Usage:Deterministic:InputPerMillion"
	DeterministicOutputSetting   = "Platform:Usage:Deterministic:OutputPerMillion"
	DeterministicCurrencySetting = "Platform:Usage:Deterministic:Currency"
)

// Getter reads settings (config.Config).
type Getter interface {
	Get(key string) string
}

// DeterministicPrice is the instance's price of the Deterministic model; nil when none is set.
func DeterministicPrice(cfg Getter) (*Price, error) {
	in, out, currency := cfg.Get(DeterministicInputSetting), cfg.Get(DeterministicOutputSetting), cfg.Get(DeterministicCurrencySetting)
	if in == "" && out == "" {
		return nil, nil
	}
	if currency == "" {
		currency = "USD"
	}
	if !validCurrency(currency) {
		return nil, fmt.Errorf("%s=%q: an ISO 4217 code such as USD", DeterministicCurrencySetting, currency)
	}
	p := &Price{Currency: currency}
	var err error
	if in != "" {
		if p.InputPerMillionMicros, err = ParseMicros(in); err != nil {
			return nil, fmt.Errorf("%s: %w", DeterministicInputSetting, err)
		}
	}
	if out != "" {
		if p.OutputPerMillionMicros, err = ParseMicros(out); err != nil {
			return nil, fmt.Errorf("%s: %w", DeterministicOutputSetting, err)
		}
	}
	return p, nil
}

func validCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for _, r := range c {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// DayLayout is how a day of usage is written: 2026-11-27 (UTC).
const DayLayout = time.DateOnly

// Day is the UTC day of t.
func Day(t time.Time) string { return t.UTC().Format(DayLayout) }

// PeriodStart is the first day of the period that holds t, in UTC: the day itself, the Monday of
// its week, or the first of its month.
func PeriodStart(period platformv1.BudgetPeriod, t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch period {
	case platformv1.WeekBudget:
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	case platformv1.MonthBudget:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return day
}

// Scopes of a budget.
const (
	ScopeWorkspace = "Workspace"
	ScopeEntry     = "Entry"
	ScopeAgent     = "Agent"
)

// Limit is one declared budget of a scope, parsed.
type Limit struct {
	Scope  string
	Name   string
	Period platformv1.BudgetPeriod
	// Tokens is the limit of input and output tokens together; 0 when none.
	Tokens int64
	// CostMicros and Currency are the limit of cost; CostMicros 0 when none.
	CostMicros int64
	Currency   string
	// Expiry is the declared expiry of the approval to continue past it.
	Expiry *platformv1.QuestionExpiry
}

// Key names the limit in one period, for the approvals a run was given: the scope, its name, the
// period and the period's first day.
func (l Limit) Key(periodStart time.Time) string {
	return strings.Join([]string{l.Scope, l.Name, string(l.Period), periodStart.Format(DayLayout)}, "/")
}

// LimitsOf parses the budgets a scope declares.
func LimitsOf(scope, name string, budgets []platformv1.Budget) ([]Limit, error) {
	var out []Limit
	for _, b := range budgets {
		l := Limit{Scope: scope, Name: name, Period: b.Period, Expiry: b.ApprovalExpiry}
		if b.Tokens != nil {
			l.Tokens = *b.Tokens
		}
		if b.Cost != nil {
			micros, err := ParseMicros(b.Cost.Amount)
			if err != nil {
				return nil, fmt.Errorf("the %s budget of %s %s: %w", b.Period, scope, name, err)
			}
			l.CostMicros, l.Currency = micros, b.Cost.Currency
		}
		if l.Tokens > 0 || l.CostMicros > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// The annotations of a workspace's namespace that declare its budgets, and the settings of the
// instance's default (Platform:Budgets:*): tokens a whole number, cost "<amount> <currency>"
// ("5.00 USD"); 0 or empty is no budget.
var (
	TokensAnnotations = map[platformv1.BudgetPeriod]string{
		platformv1.DayBudget: "platform/budget-tokens-per-day", platformv1.WeekBudget: "platform/budget-tokens-per-week",
		platformv1.MonthBudget: "platform/budget-tokens-per-month"}
	CostAnnotations = map[platformv1.BudgetPeriod]string{
		platformv1.DayBudget: "platform/budget-cost-per-day", platformv1.WeekBudget: "platform/budget-cost-per-week",
		platformv1.MonthBudget: "platform/budget-cost-per-month"}
	TokensSettings = map[platformv1.BudgetPeriod]string{
		platformv1.DayBudget: "Platform:Budgets:TokensPerDay", platformv1.WeekBudget: "Platform:Budgets:TokensPerWeek",
		platformv1.MonthBudget: "Platform:Budgets:TokensPerMonth"}
	CostSettings = map[platformv1.BudgetPeriod]string{
		platformv1.DayBudget: "Platform:Budgets:CostPerDay", platformv1.WeekBudget: "Platform:Budgets:CostPerWeek",
		platformv1.MonthBudget: "Platform:Budgets:CostPerMonth"}
)

// Periods lists the periods in order.
var Periods = []platformv1.BudgetPeriod{platformv1.DayBudget, platformv1.WeekBudget, platformv1.MonthBudget}

// ParseTokens reads a tokens budget: a whole number, 0 for none.
func ParseTokens(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("a whole number of tokens from 0 (no budget) up")
	}
	return n, nil
}

// ParseCost reads a cost budget: "<amount> <currency>" such as "5.00 USD"; "" or "0" for none.
func ParseCost(v string) (int64, string, error) {
	v = strings.TrimSpace(v)
	if v == "" || v == "0" {
		return 0, "", nil
	}
	amount, currency, ok := strings.Cut(v, " ")
	currency = strings.TrimSpace(currency)
	micros, err := ParseMicros(amount)
	if !ok || err != nil || !validCurrency(currency) {
		return 0, "", errors.New(`an amount and an ISO 4217 currency such as "5.00 USD"`)
	}
	return micros, currency, nil
}

// WorkspaceBudgets are the budgets of a workspace: the instance's defaults (settings) with what
// its namespace's annotations set. A value that does not parse is ignored here (admission
// refuses it on the namespace; startup on the settings).
func WorkspaceBudgets(workspace string, settings Getter, annotations map[string]string) []Limit {
	var out []Limit
	for _, p := range Periods {
		l := Limit{Scope: ScopeWorkspace, Name: workspace, Period: p}
		tokens := ""
		if settings != nil {
			tokens = settings.Get(TokensSettings[p])
		}
		if v, ok := annotations[TokensAnnotations[p]]; ok {
			tokens = v
		}
		if tokens != "" {
			l.Tokens, _ = ParseTokens(tokens)
		}
		cost := ""
		if settings != nil {
			cost = settings.Get(CostSettings[p])
		}
		if v, ok := annotations[CostAnnotations[p]]; ok {
			cost = v
		}
		l.CostMicros, l.Currency, _ = ParseCost(cost)
		if l.Tokens > 0 || l.CostMicros > 0 {
			out = append(out, l)
		}
	}
	return out
}

// CheckSettings refuses instance budget or price settings that do not parse, at startup.
func CheckSettings(cfg Getter) error {
	for _, p := range Periods {
		if v := cfg.Get(TokensSettings[p]); v != "" {
			if _, err := ParseTokens(v); err != nil {
				return fmt.Errorf("%s=%q: %w", TokensSettings[p], v, err)
			}
		}
		if v := cfg.Get(CostSettings[p]); v != "" {
			if _, _, err := ParseCost(v); err != nil {
				return fmt.Errorf("%s=%q: %w", CostSettings[p], v, err)
			}
		}
	}
	_, err := DeterministicPrice(cfg)
	return err
}

// Totals are summed usage.
type Totals struct {
	ModelCalls   int64
	InputTokens  int64
	OutputTokens int64
	// CostMicros is the cost in Currency; usage priced in other currencies is not in it.
	CostMicros int64
	Currency   string
}

// Tokens is input and output together.
func (t Totals) Tokens() int64 { return t.InputTokens + t.OutputTokens }

// Exceeded says whether usage used of the period reached a limit of l.
func (l Limit) Exceeded(tokens, costMicros int64) bool {
	return (l.Tokens > 0 && tokens >= l.Tokens) || (l.CostMicros > 0 && costMicros >= l.CostMicros)
}

// Describe says, for people, what a limit is: "1000 tokens a day", "1.50 USD a week".
func (l Limit) Describe() string {
	per := map[platformv1.BudgetPeriod]string{platformv1.DayBudget: "a day", platformv1.WeekBudget: "a week", platformv1.MonthBudget: "a month"}[l.Period]
	var parts []string
	if l.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", l.Tokens))
	}
	if l.CostMicros > 0 {
		parts = append(parts, ShortMicros(l.CostMicros)+" "+l.Currency)
	}
	return strings.Join(parts, " and ") + " " + per
}

// ShortMicros writes micros with two to six decimals, as people write money: "1.50", "0.0004".
func ShortMicros(micros int64) string {
	s := FormatMicros(micros)
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return s
}

// Amount is money as the API shows it: a decimal string with six decimals and its currency.
type Amount struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// MoneyOf is micros of currency as an Amount; nil without a currency (unpriced usage).
func MoneyOf(micros int64, currency string) *Amount {
	if currency == "" {
		return nil
	}
	return &Amount{Amount: FormatMicros(micros), Currency: currency}
}
