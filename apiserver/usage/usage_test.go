package usage_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/usage"
)

func TestMoneyIsExactInMicrosAndACallsCostIsRoundedOnce(t *testing.T) {
	for rule, tc := range map[string]struct {
		in, out int64
		price   usage.Price
		want    int64
	}{
		"a price per million tokens is micros per token": {in: 120, out: 80, price: usage.Price{InputPerMillionMicros: 2_500_000, OutputPerMillionMicros: 10_000_000}, want: 1100},
		"half a micro rounds up":                         {in: 1, price: usage.Price{InputPerMillionMicros: 500_000}, want: 1},
		"less than half a micro rounds down":             {in: 1, price: usage.Price{InputPerMillionMicros: 499_999}, want: 0},
		"a product past int64 is still exact":            {in: 4_000_000_000, price: usage.Price{InputPerMillionMicros: 100_000_000_000}, want: 400_000_000_000_000},
	} {
		g := NewWithT(t)
		g.Expect(tc.price.Cost(tc.in, tc.out)).To(Equal(tc.want), rule)
	}
	g := NewWithT(t)
	for text, micros := range map[string]int64{"0": 0, "2.50": 2_500_000, "0.000001": 1, "12.3": 12_300_000} {
		got, err := usage.ParseMicros(text)
		g.Expect(err).NotTo(HaveOccurred(), text)
		g.Expect(got).To(Equal(micros), text)
	}
	for _, bad := range []string{"", "1.", ".5", "1.0000001", "-1", "1e3", "1,5", "2.5.1"} {
		_, err := usage.ParseMicros(bad)
		g.Expect(err).To(HaveOccurred(), bad)
	}
	g.Expect(usage.FormatMicros(400)).To(Equal("0.000400"))
	g.Expect(usage.ShortMicros(1_500_000)).To(Equal("1.50"))
}

func TestABudgetPeriodStartsAtMidnightUTCOnItsDayItsMondayOrTheFirstOfItsMonth(t *testing.T) {
	g := NewWithT(t)
	// A Friday evening in New York is Saturday in UTC.
	at := time.Date(2026, 11, 27, 22, 30, 0, 0, time.FixedZone("EST", -5*3600))
	g.Expect(usage.PeriodStart(platformv1.DayBudget, at).Format(time.DateOnly)).To(Equal("2026-11-28"))
	g.Expect(usage.PeriodStart(platformv1.WeekBudget, at).Format(time.DateOnly)).To(Equal("2026-11-23"))
	g.Expect(usage.PeriodStart(platformv1.WeekBudget, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)).Format(time.DateOnly)).To(Equal("2026-11-23"))
	g.Expect(usage.PeriodStart(platformv1.MonthBudget, at).Format(time.DateOnly)).To(Equal("2026-11-01"))
}

func TestAWorkspacesBudgetAnnotationsOverrideTheInstancesDefaults(t *testing.T) {
	g := NewWithT(t)
	settings := mapGetter{"Platform:Budgets:TokensPerDay": "1000", "Platform:Budgets:CostPerMonth": "5.00 USD"}
	limits := usage.WorkspaceBudgets("default", settings, map[string]string{"platform/budget-tokens-per-day": "0",
		"platform/budget-cost-per-week": "1.50 EUR"})
	g.Expect(limits).To(ConsistOf(
		usage.Limit{Scope: usage.ScopeWorkspace, Name: "default", Period: platformv1.WeekBudget, CostMicros: 1_500_000, Currency: "EUR"},
		usage.Limit{Scope: usage.ScopeWorkspace, Name: "default", Period: platformv1.MonthBudget, CostMicros: 5_000_000, Currency: "USD"},
	), "0 removes the default day budget")
	g.Expect(usage.CheckSettings(mapGetter{"Platform:Budgets:CostPerDay": "5 dollars"})).To(MatchError(ContainSubstring("Platform:Budgets:CostPerDay")))
}

type mapGetter map[string]string

func (m mapGetter) Get(key string) string { return m[key] }
