package schedule

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

var path = field.NewPath("definition", "source", "schedule")

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := Zone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func parse(t *testing.T, typ platformv1.ScheduleType, expr, zone string, anchor time.Time) Schedule {
	t.Helper()
	s, errs := Parse(path, platformv1.TriggerSchedule{Type: typ, Expression: expr, TimeZone: zone}, anchor)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return s
}

// instants are the first n instants of s after from.
func instants(t *testing.T, s Schedule, from time.Time, n int) []time.Time {
	t.Helper()
	out, err := Instants(context.Background(), s, from, n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// formatted are instants as local times of loc with their zone abbreviation.
func formatted(instants []time.Time, loc *time.Location) []string {
	out := make([]string, 0, len(instants))
	for _, t := range instants {
		out = append(out, t.In(loc).Format("2006-01-02 15:04 MST"))
	}
	return out
}

func TestCron(t *testing.T) {
	paris := mustZone(t, "Europe/Paris")
	// A Friday.
	friday := time.Date(2026, 1, 30, 8, 0, 0, 0, paris)
	tests := map[string]struct {
		expr string
		from time.Time
		want []string
	}{
		"weekdays at seven skip the weekend": {expr: "0 7 * * 1-5", from: friday,
			want: []string{"2026-02-02 07:00 CET", "2026-02-03 07:00 CET"}},
		"weekday names work like numbers": {expr: "0 7 * * MON-FRI", from: friday,
			want: []string{"2026-02-02 07:00 CET"}},
		"steps count from the start of the field": {expr: "*/15 * * * *", from: friday,
			want: []string{"2026-01-30 08:15 CET", "2026-01-30 08:30 CET"}},
		"@daily is midnight":  {expr: "@daily", from: friday, want: []string{"2026-01-31 00:00 CET"}},
		"7 is Sunday as 0 is": {expr: "0 0 * * 7", from: friday, want: []string{"2026-02-01 00:00 CET"}},
		"either day field fires when both are restricted": {expr: "0 0 1 * 6", from: friday,
			want: []string{"2026-01-31 00:00 CET", "2026-02-01 00:00 CET", "2026-02-07 00:00 CET"}},
		"the day of week alone decides when the day of month is *": {expr: "0 0 * * 6", from: friday,
			want: []string{"2026-01-31 00:00 CET", "2026-02-07 00:00 CET"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := parse(t, platformv1.CronSchedule, tt.expr, "Europe/Paris", time.Time{})
			g.Expect(formatted(instants(t, s, tt.from, len(tt.want)), paris)).To(Equal(tt.want))
		})
	}
}

// The daylight saving rules, in a zone that has both changes: Europe/Paris springs forward from
// 02:00 CET to 03:00 CEST on 2026-03-29 and falls back from 03:00 CEST to 02:00 CET on
// 2026-10-25; America/New_York does so at 02:00 on 2026-03-08 and 2026-11-01.
func TestDaylightSavingChanges(t *testing.T) {
	paris, newYork := mustZone(t, "Europe/Paris"), mustZone(t, "America/New_York")
	springEve := time.Date(2026, 3, 28, 23, 0, 0, 0, paris)
	fallEve := time.Date(2026, 10, 24, 23, 0, 0, 0, paris)
	tests := map[string]struct {
		expr string
		loc  *time.Location
		from time.Time
		want []string
	}{
		"a skipped local time fires when the gap ends": {expr: "30 2 * * *", loc: paris, from: springEve,
			want: []string{"2026-03-29 03:00 CEST", "2026-03-30 02:30 CEST"}},
		"the skipped local times of one gap fire once": {expr: "*/20 2 * * *", loc: paris, from: springEve,
			want: []string{"2026-03-29 03:00 CEST", "2026-03-30 02:00 CEST"}},
		"a skipped time and the end of its gap fire once": {expr: "0 2,3 * * *", loc: paris, from: springEve,
			want: []string{"2026-03-29 03:00 CEST", "2026-03-30 02:00 CEST"}},
		"hourly firings go on after the gap": {expr: "0 * * * *", loc: paris, from: springEve,
			want: []string{"2026-03-29 00:00 CET", "2026-03-29 01:00 CET", "2026-03-29 03:00 CEST", "2026-03-29 04:00 CEST"}},
		"times outside the gap are unaffected": {expr: "30 1 * * *", loc: paris, from: springEve,
			want: []string{"2026-03-29 01:30 CET", "2026-03-30 01:30 CEST"}},
		"a repeated local time fires once, at its first occurrence": {expr: "30 2 * * *", loc: paris, from: fallEve,
			want: []string{"2026-10-25 02:30 CEST", "2026-10-26 02:30 CET"}},
		"every repeated time fires once": {expr: "*/30 * * * *", loc: paris, from: time.Date(2026, 10, 25, 1, 45, 0, 0, paris),
			want: []string{"2026-10-25 02:00 CEST", "2026-10-25 02:30 CEST", "2026-10-25 03:00 CET"}},
		"New York skips 02:30 in March": {expr: "30 2 * * *", loc: newYork, from: time.Date(2026, 3, 7, 12, 0, 0, 0, newYork),
			want: []string{"2026-03-08 03:00 EDT", "2026-03-09 02:30 EDT"}},
		"New York repeats 01:30 in November": {expr: "30 1 * * *", loc: newYork, from: time.Date(2026, 10, 31, 12, 0, 0, 0, newYork),
			want: []string{"2026-11-01 01:30 EDT", "2026-11-02 01:30 EST"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := parse(t, platformv1.CronSchedule, tt.expr, tt.loc.String(), time.Time{})
			g.Expect(formatted(instants(t, s, tt.from, len(tt.want)), tt.loc)).To(Equal(tt.want))
		})
	}
}

func TestOnce(t *testing.T) {
	paris := mustZone(t, "Europe/Paris")
	tests := map[string]struct {
		expr string
		want string
	}{
		"a local date and time":                         {expr: "2026-01-31T09:00:00", want: "2026-01-31 09:00 CET"},
		"seconds may be left out":                       {expr: "2026-01-31T09:00", want: "2026-01-31 09:00 CET"},
		"a skipped local time fires when the gap ends":  {expr: "2026-03-29T02:30:00", want: "2026-03-29 03:00 CEST"},
		"a repeated local time is its first occurrence": {expr: "2026-10-25T02:30:00", want: "2026-10-25 02:30 CEST"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := parse(t, platformv1.OnceSchedule, tt.expr, "Europe/Paris", time.Time{})
			at, ok := At(s)
			g.Expect(ok).To(BeTrue())
			g.Expect(formatted([]time.Time{at}, paris)).To(Equal([]string{tt.want}))
			g.Expect(s.Next(at.Add(-time.Nanosecond))).To(Equal(at))
			g.Expect(s.Next(at).IsZero()).To(BeTrue(), "a once schedule fires no more after its instant")
		})
	}
}

func TestInterval(t *testing.T) {
	g := NewWithT(t)
	anchor := time.Date(2026, 1, 30, 12, 0, 0, 0, time.UTC)
	s := parse(t, platformv1.IntervalSchedule, "01:30:00", "Europe/Paris", anchor)
	g.Expect(s.Next(anchor.Add(-time.Hour))).To(Equal(anchor.Add(90*time.Minute)), "the first instant is one period after the anchor")
	g.Expect(s.Next(anchor)).To(Equal(anchor.Add(90 * time.Minute)))
	g.Expect(s.Next(anchor.Add(4*time.Hour))).To(Equal(anchor.Add(270*time.Minute)), "whole periods from the anchor: a restart does not shift them")
	g.Expect(s.Next(anchor.Add(270 * time.Minute))).To(Equal(anchor.Add(360 * time.Minute)))

	longest := parse(t, platformv1.IntervalSchedule, "99999.00:00:00", "UTC", anchor)
	far := instants(t, longest, anchor, 40)
	g.Expect(far).To(HaveLen(40))
	g.Expect(far[39]).To(Equal(anchor.AddDate(0, 0, 40*99999)), "whole periods, centuries away, without overflow")

	days := parse(t, platformv1.IntervalSchedule, "1.00:00:00", "Europe/Paris", time.Date(2026, 3, 28, 9, 0, 0, 0, mustZone(t, "Europe/Paris")))
	next := days.Next(time.Date(2026, 3, 28, 10, 0, 0, 0, time.UTC))
	g.Expect(formatted([]time.Time{next}, mustZone(t, "Europe/Paris"))).To(Equal([]string{"2026-03-29 10:00 CEST"}),
		"an interval counts elapsed time: across a daylight saving change its local time moves")
}

func TestParseRefusesWithTheFieldPath(t *testing.T) {
	tests := map[string]struct {
		schedule  platformv1.TriggerSchedule
		wantField string
	}{
		"an unknown zone":          {platformv1.TriggerSchedule{Type: "cron", Expression: "@daily", TimeZone: "Mars/Olympus"}, "definition.source.schedule.timeZone"},
		"Local is no IANA name":    {platformv1.TriggerSchedule{Type: "cron", Expression: "@daily", TimeZone: "Local"}, "definition.source.schedule.timeZone"},
		"a zone in the wrong case": {platformv1.TriggerSchedule{Type: "cron", Expression: "@daily", TimeZone: "europe/paris"}, "definition.source.schedule.timeZone"},
		"an empty zone":            {platformv1.TriggerSchedule{Type: "cron", Expression: "@daily"}, "definition.source.schedule.timeZone"},
		"six fields":               {platformv1.TriggerSchedule{Type: "cron", Expression: "0 0 7 * * 1", TimeZone: "UTC"}, "definition.source.schedule.expression"},
		"an out-of-range minute":   {platformv1.TriggerSchedule{Type: "cron", Expression: "60 * * * *", TimeZone: "UTC"}, "definition.source.schedule.expression"},
		"a misspelt weekday":       {platformv1.TriggerSchedule{Type: "cron", Expression: "0 7 * * mon-fry", TimeZone: "UTC"}, "definition.source.schedule.expression"},
		"@every is an interval":    {platformv1.TriggerSchedule{Type: "cron", Expression: "@every 1h", TimeZone: "UTC"}, "definition.source.schedule.expression"},
		"@reboot is no descriptor": {platformv1.TriggerSchedule{Type: "cron", Expression: "@reboot", TimeZone: "UTC"}, "definition.source.schedule.expression"},
		"a zone in the expression": {platformv1.TriggerSchedule{Type: "cron", Expression: "TZ=UTC 0 7 * *", TimeZone: "UTC"}, "definition.source.schedule.expression"},
		"a Quartz extension":       {platformv1.TriggerSchedule{Type: "cron", Expression: "0 7 L * *", TimeZone: "UTC"}, "definition.source.schedule.expression"},
		"a zero interval":          {platformv1.TriggerSchedule{Type: "interval", Expression: "00:00:00", TimeZone: "UTC"}, "definition.source.schedule.expression"},
		"a Go duration":            {platformv1.TriggerSchedule{Type: "interval", Expression: "5m", TimeZone: "UTC"}, "definition.source.schedule.expression"},
		"a date that does not exist": {platformv1.TriggerSchedule{Type: "once", Expression: "2026-02-30T09:00:00", TimeZone: "UTC"},
			"definition.source.schedule.expression"},
		"a cron day that never comes (31 February)": {platformv1.TriggerSchedule{Type: "cron", Expression: "0 0 31 2 *", TimeZone: "Europe/Paris"},
			"definition.source.schedule.expression"},
		"a cron day that never comes (30 February)": {platformv1.TriggerSchedule{Type: "cron", Expression: "0 0 30 2 *", TimeZone: "UTC"},
			"definition.source.schedule.expression"},
		"a cron day that never comes (31 April)": {platformv1.TriggerSchedule{Type: "cron", Expression: "0 9 31 4 *", TimeZone: "America/New_York"},
			"definition.source.schedule.expression"},
		"an unknown type": {platformv1.TriggerSchedule{Type: "weekly", Expression: "x", TimeZone: "UTC"}, "definition.source.schedule.type"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, errs := Parse(path, tt.schedule, time.Time{})
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].Field).To(Equal(tt.wantField))
		})
	}
}

func TestParseTimeSpan(t *testing.T) {
	g := NewWithT(t)
	for in, want := range map[platformv1.TimeSpan]time.Duration{
		"00:00:00": 0, "00:05:00": 5 * time.Minute, "1.02:00:00": 26 * time.Hour, "00:00:01.5": 1500 * time.Millisecond,
	} {
		d, err := ParseTimeSpan(in)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d).To(Equal(want), string(in))
	}
	_, err := ParseTimeSpan("5m")
	g.Expect(err).To(HaveOccurred())
}

func FuzzParseCron(f *testing.F) {
	for _, seed := range []string{"0 7 * * 1-5", "*/15 0-23/2 1,15 JAN-DEC SUN", "@daily", "0 0 30 2 *", "30 2 * * *", "0 0 1 * 6"} {
		f.Add(seed)
	}
	paris, err := Zone("Europe/Paris")
	if err != nil {
		f.Fatal(err)
	}
	from := time.Date(2026, 3, 28, 0, 0, 0, 0, paris)
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := parseCron(expr, paris)
		if err != nil {
			return
		}
		last := from
		for range 5 {
			next := s.Next(last)
			if next.IsZero() {
				return
			}
			if !next.After(last) {
				t.Fatalf("%q: next %s is not after %s", expr, next, last)
			}
			last = next
		}
	})
}

// A schedule's instants are found in bounded time, however rarely it fires and whatever the
// zone's daylight saving rules: these once never answered (in a leap year served by the zone's
// TZ footer rule, 2040, the search of a daylight saving gap stood still).
func TestRareSchedulesAnswerPromptlyWithTheirInstants(t *testing.T) {
	from := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	yearly := func(zone string) []string {
		var out []string
		for y := 2027; y < 2057; y++ {
			out = append(out, time.Date(y, 1, 1, 0, 0, 0, 0, mustZone(t, zone)).Format("2006-01-02 15:04 MST"))
		}
		return out
	}
	tests := map[string]struct {
		expr, zone string
		from       time.Time
		want       []string
	}{
		"29 February fires in leap years, in Paris": {expr: "0 0 29 2 *", zone: "Europe/Paris", from: from,
			want: []string{"2028-02-29 00:00 CET", "2032-02-29 00:00 CET", "2036-02-29 00:00 CET", "2040-02-29 00:00 CET", "2044-02-29 00:00 CET"}},
		"29 February waits eight years across 2100, which is no leap year": {expr: "0 0 29 2 *", zone: "UTC", from: time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC),
			want: []string{"2104-02-29 00:00 UTC", "2108-02-29 00:00 UTC"}},
		"@yearly in Paris, thirty years":    {expr: "@yearly", zone: "Europe/Paris", from: from, want: yearly("Europe/Paris")},
		"@yearly in New York, thirty years": {expr: "@yearly", zone: "America/New_York", from: from, want: yearly("America/New_York")},
		"a skipped local time after the end of 2040 fires when its gap ends": {expr: "30 2 31 3 *", zone: "Europe/Paris", from: time.Date(2040, 6, 1, 0, 0, 0, 0, time.UTC),
			want: []string{"2041-03-31 03:00 CEST", "2042-03-31 02:30 CEST"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := parse(t, platformv1.CronSchedule, tt.expr, tt.zone, time.Time{})
			done := make(chan []time.Time, 1)
			go func() { done <- instants(t, s, tt.from, len(tt.want)) }()
			select {
			case got := <-done:
				g.Expect(formatted(got, mustZone(t, tt.zone))).To(Equal(tt.want))
			case <-time.After(time.Second):
				t.Fatalf("%q in %s: no answer within a second", tt.expr, tt.zone)
			}
		})
	}
}

// The end of a zone period always lies ahead, also where time.Time.ZoneBounds answers one at
// or before the instant (the last UTC day of 2040 in Europe/Paris, golang/go#81583), and the
// walk from period to period finds the real daylight saving changes.
func TestZonePeriodsAlwaysEndAhead(t *testing.T) {
	g := NewWithT(t)
	paris := mustZone(t, "Europe/Paris")
	for _, at := range []time.Time{
		time.Date(2040, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2040, 12, 31, 1, 0, 0, 0, paris),
		time.Date(2040, 12, 31, 12, 0, 0, 0, time.UTC), time.Date(2040, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2044, 12, 31, 6, 0, 0, 0, time.UTC),
	} {
		g.Expect(zoneEnd(at.In(paris)).After(at)).To(BeTrue(), "the period of %s ends after it", at)
	}
	var changes []string
	cursor := time.Date(2040, 6, 1, 0, 0, 0, 0, paris)
	for range 20 {
		end := zoneEnd(cursor)
		if _, before := end.Add(-time.Second).Zone(); func() bool { _, after := end.Zone(); return after != before }() {
			changes = append(changes, end.In(paris).Format("2006-01-02 15:04 MST"))
		}
		if end.Year() > 2042 {
			break
		}
		cursor = end
	}
	g.Expect(changes).To(Equal([]string{"2040-10-28 02:00 CET", "2041-03-31 03:00 CEST", "2041-10-27 02:00 CET", "2042-03-30 03:00 CEST",
		"2042-10-26 02:00 CET"}))
}

// countingSchedule fires every minute and cancels its context at its nth call.
type countingSchedule struct {
	calls, cancelAt int
	cancel          context.CancelFunc
}

func (c *countingSchedule) Next(t time.Time) time.Time {
	c.calls++
	if c.calls == c.cancelAt {
		c.cancel()
	}
	return t.Add(time.Minute)
}

// The computation of instants stops when the request that asked for them ends.
func TestInstantsStopWhenTheContextEnds(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	s := &countingSchedule{cancelAt: 3, cancel: cancel}
	got, err := Instants(ctx, s, time.Now(), 1000)
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(got).To(BeEmpty())
	g.Expect(s.calls).To(Equal(3), "no instant is computed after the context ended")

	_, err = Instants(ctx, parse(t, platformv1.CronSchedule, "@daily", "UTC", time.Time{}), time.Now(), 10)
	g.Expect(err).To(MatchError(context.Canceled), "an ended context computes nothing")
}
