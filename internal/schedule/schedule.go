// Package schedule computes the instants of a Trigger's schedule: once (a local date and time),
// interval (a period of elapsed time counted from an anchor) and cron (five fields, parsed and
// stepped by github.com/netresearch/go-cron v0.15.0), each in a strict IANA time zone whose rules
// come from the zone database embedded in the binary (time/tzdata).
//
// The rules, for every schedule that names local times (once and cron):
//
//   - Day of month and day of week: as in Vixie cron and POSIX crontab, when both fields are
//     restricted a day matching either fires (`0 9 1 * MON` fires on the 1st and on Mondays);
//     when one of them is `*`, the other one decides.
//   - A local time skipped by a daylight saving change (02:30 in Europe/Paris on the last Sunday
//     of March, when clocks jump from 02:00 to 03:00) fires at the first instant after the gap
//     (03:00 CEST); the skipped local times of one gap fire once, together.
//   - A local time repeated by a daylight saving change (02:30 in Europe/Paris on the last Sunday
//     of October, when clocks fall back from 03:00 to 02:00) fires once, at its first occurrence
//     (02:30 CEST, the earlier instant), as RFC 5545 reads such a time.
//
// An interval counts elapsed time from its anchor, unaffected by daylight saving changes: its
// local time moves with them. A cron schedule is for a fixed local time.
package schedule

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	// The zone database is embedded so that zones resolve alike on every machine, with or
	// without tzdata installed.
	_ "time/tzdata"

	cron "github.com/netresearch/go-cron"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Schedule yields the instants of a schedule.
type Schedule interface {
	// Next is the first instant strictly after t; the zero time when there is none within
	// HorizonYears of t. It returns in bounded time.
	Next(t time.Time) time.Time
}

// HorizonYears bounds the search for a schedule's next instant: eight years, the longest wait
// between two 29 Februaries (2096 to 2104). The dates five cron fields name recur within every
// such span, so a cron schedule with no instant within it has none at all (`0 0 31 2 *`).
const HorizonYears = 8

// Parse checks a schedule and returns it: the time zone is a strict IANA name and the
// expression parses for its type. anchor is where an interval counts from (the Trigger's
// creation); other types ignore it. Errors carry the field paths under path (the schedule).
func Parse(path *field.Path, s platformv1.TriggerSchedule, anchor time.Time) (Schedule, field.ErrorList) {
	loc, err := Zone(s.TimeZone)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path.Child("timeZone"), s.TimeZone, err.Error())}
	}
	expression := path.Child("expression")
	switch s.Type {
	case platformv1.OnceSchedule:
		at, err := parseOnce(s.Expression, loc)
		if err != nil {
			return nil, field.ErrorList{field.Invalid(expression, s.Expression, err.Error())}
		}
		return once{at: at}, nil
	case platformv1.IntervalSchedule:
		period, err := ParseInterval(s.Expression)
		if err != nil {
			return nil, field.ErrorList{field.Invalid(expression, s.Expression, err.Error())}
		}
		return interval{anchor: anchor, period: period}, nil
	case platformv1.CronSchedule:
		c, err := parseCron(s.Expression, loc)
		if err != nil {
			return nil, field.ErrorList{field.Invalid(expression, s.Expression, err.Error())}
		}
		if c.Next(anchor).IsZero() {
			return nil, field.ErrorList{field.Invalid(expression, s.Expression, fmt.Sprintf(
				"the schedule never fires: no date matches its day of month, month and day of week within %d years", HorizonYears))}
		}
		return c, nil
	}
	return nil, field.ErrorList{field.NotSupported(path.Child("type"), s.Type,
		[]string{string(platformv1.OnceSchedule), string(platformv1.IntervalSchedule), string(platformv1.CronSchedule)})}
}

// Zone loads a strict IANA time zone name: `Europe/Paris`, `UTC`; never "" or `Local` (the
// machine's zone, which differs between replicas).
func Zone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("not an IANA time zone name such as Europe/Paris or UTC")
	}
	loc, err := time.LoadLocation(name)
	if err != nil || loc.String() != name {
		return nil, fmt.Errorf("not an IANA time zone name such as Europe/Paris or UTC")
	}
	return loc, nil
}

// Instants are the first n instants of s strictly after t (fewer when s ends); the error of ctx
// when it ends first.
func Instants(ctx context.Context, s Schedule, t time.Time, n int) ([]time.Time, error) {
	var out []time.Time
	for len(out) < n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next := s.Next(t)
		if next.IsZero() {
			break
		}
		out = append(out, next)
		t = next
	}
	return out, nil
}

// once fires at one instant.
type once struct{ at time.Time }

func (o once) Next(t time.Time) time.Time {
	if o.at.After(t) {
		return o.at
	}
	return time.Time{}
}

// At is the instant of a once schedule, for the check that it lies ahead.
func At(s Schedule) (time.Time, bool) {
	o, ok := s.(once)
	return o.at, ok
}

// onceLayouts are the accepted forms of a once schedule: a local date and time, with or without
// seconds.
var onceLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04"}

// parseOnce reads a local date and time in loc, with the daylight saving rules of the package.
func parseOnce(expr string, loc *time.Location) (time.Time, error) {
	for _, layout := range onceLayouts {
		civil, err := time.Parse(layout, expr)
		if err != nil {
			continue
		}
		at := time.Date(civil.Year(), civil.Month(), civil.Day(), civil.Hour(), civil.Minute(), civil.Second(), 0, loc)
		if !sameWall(at, civil) {
			// A skipped local time: time.Date moved it past the gap; it fires when the gap ends.
			start, _ := at.ZoneBounds()
			return start, nil
		}
		if earlier, ok := firstOccurrence(at); ok {
			return earlier, nil
		}
		return at, nil
	}
	return time.Time{}, fmt.Errorf("a once schedule is a local date and time such as 2026-01-31T09:00:00")
}

// interval fires every period after anchor: anchor+period, anchor+2*period, ...
type interval struct {
	anchor time.Time
	period time.Duration
}

// Next counts whole periods in seconds (a period is whole seconds), so that instants centuries
// after the anchor do not overflow a time.Duration.
func (i interval) Next(t time.Time) time.Time {
	if t.Before(i.anchor) {
		return i.anchor.Add(i.period)
	}
	period := int64(i.period / time.Second)
	elapsed := t.Unix() - i.anchor.Unix()
	if t.Nanosecond() < i.anchor.Nanosecond() {
		elapsed--
	}
	k := elapsed/period + 1
	return time.Unix(i.anchor.Unix()+k*period, int64(i.anchor.Nanosecond())).In(i.anchor.Location())
}

// Period is the period of an interval schedule.
func Period(s Schedule) (time.Duration, bool) {
	i, ok := s.(interval)
	return i.period, ok
}

var intervalForm = regexp.MustCompile(`^(?:([0-9]{1,5})\.)?([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])$`)

// ParseInterval reads the period of an interval schedule, [days.]hh:mm:ss, at least a second.
func ParseInterval(expr string) (time.Duration, error) {
	m := intervalForm.FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("an interval is [days.]hh:mm:ss such as 01:00:00")
	}
	d := clockDuration(m[1], m[2], m[3], m[4])
	if d <= 0 {
		return 0, fmt.Errorf("an interval is at least one second")
	}
	return d, nil
}

var timeSpanForm = regexp.MustCompile(`^(?:([0-9]{1,5})\.)?([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]{1,7}))?$`)

// ParseTimeSpan reads a TimeSpan, [days.]hh:mm:ss[.fffffff].
func ParseTimeSpan(s platformv1.TimeSpan) (time.Duration, error) {
	m := timeSpanForm.FindStringSubmatch(string(s))
	if m == nil {
		return 0, fmt.Errorf("a duration is [days.]hh:mm:ss such as 00:05:00")
	}
	d := clockDuration(m[1], m[2], m[3], m[4])
	if m[5] != "" {
		fraction, _ := strconv.Atoi((m[5] + "000000000")[:9])
		d += time.Duration(fraction)
	}
	return d, nil
}

func clockDuration(days, hours, minutes, seconds string) time.Duration {
	n := func(s string) time.Duration {
		v, _ := strconv.Atoi(s)
		return time.Duration(v)
	}
	return n(days)*24*time.Hour + n(hours)*time.Hour + n(minutes)*time.Minute + n(seconds)*time.Second
}

// cronParser reads the five standard fields (minute hour day-of-month month day-of-week) and the
// descriptors, with the Vixie rule for the two day fields (DowOrDom). No seconds, years, hashes
// or Quartz extensions.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor | cron.DowOrDom)

// cronSchedule steps go-cron's schedule and applies the daylight saving rules on top of it.
type cronSchedule struct {
	spec *cron.SpecSchedule
	loc  *time.Location
}

func parseCron(expr string, loc *time.Location) (*cronSchedule, error) {
	trimmed := strings.TrimSpace(expr)
	switch {
	case trimmed != expr:
		return nil, fmt.Errorf("a cron expression has no surrounding spaces")
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return nil, fmt.Errorf("the time zone is timeZone, not part of the expression")
	case strings.HasPrefix(expr, "@every"):
		return nil, fmt.Errorf("@every is an interval schedule (type interval, [days.]hh:mm:ss)")
	case strings.HasPrefix(expr, "@"):
		switch expr {
		case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
		default:
			return nil, fmt.Errorf("unknown descriptor %s: @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly", expr)
		}
	case len(strings.Fields(expr)) != 5:
		return nil, fmt.Errorf("a cron expression has five fields (minute hour day-of-month month day-of-week), not %d", len(strings.Fields(expr)))
	}
	parsed, err := cronParser.WithMaxSearchYears(HorizonYears).Parse(expr)
	if err != nil {
		return nil, err
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("unsupported cron expression")
	}
	spec.Location = loc
	return &cronSchedule{spec: spec, loc: loc}, nil
}

// maxRepeats bounds the repeated local times Next steps over: a fall-back change repeats at most
// a few hours.
const maxRepeats = 24 * 60

func (c *cronSchedule) Next(after time.Time) time.Time {
	from := after
	for range maxRepeats {
		t := c.spec.Next(from)
		if t.IsZero() {
			return t
		}
		if end, ok := c.matchingGap(after, t); ok {
			return end
		}
		if _, repeated := firstOccurrence(t.In(c.loc)); repeated {
			from = t
			continue
		}
		return t
	}
	return time.Time{}
}

// matchingGap finds the first spring-forward gap that ends in (after, t] and skips a local time
// the schedule names; it returns the gap's end, where those local times fire.
func (c *cronSchedule) matchingGap(after, t time.Time) (time.Time, bool) {
	cursor := after.In(c.loc)
	for {
		end := zoneEnd(cursor)
		if end.IsZero() || end.After(t) {
			return time.Time{}, false
		}
		_, before := end.Add(-time.Second).Zone()
		_, afterOffset := end.Zone()
		if gap := time.Duration(afterOffset-before) * time.Second; gap > 0 {
			// The skipped local times are [wall, wall+gap), read with the offset before the change.
			wall := end.In(time.FixedZone("", before))
			for m := time.Duration(0); m < gap; m += time.Minute {
				if c.matchesWall(wall.Add(m)) {
					return end, true
				}
			}
		}
		cursor = end
	}
}

// zoneEnd is the end of the zone period that holds t (the next offset or abbreviation change),
// always after t; zero when none follows. time.Time.ZoneBounds answers an end at or before t in
// the last UTC day of a leap year served by the zone's TZ footer rule (after 2037 in the embedded
// database: 2040-12-31 in Europe/Paris, golang/go#81583), which held the walk of matchingGap on
// one instant forever. There the period is followed hour by hour to the end of that day, where
// the lookup is right again; an offset change within it is found to the second.
func zoneEnd(t time.Time) time.Time {
	_, end := t.ZoneBounds()
	if end.IsZero() || end.After(t) {
		return end
	}
	name, offset := t.Zone()
	prev := t
	// The wrong answers cover one UTC day; 48 hours is a bound, not an expectation.
	for step := t.Truncate(time.Hour).Add(time.Hour); step.Sub(t) <= 48*time.Hour; step = step.Add(time.Hour) {
		if n, o := step.Zone(); n != name || o != offset {
			// The change lies in (prev, step]: find its first second.
			lo, hi := prev, step
			for hi.Sub(lo) > time.Second {
				mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
				if mid.Equal(lo) {
					break
				}
				if n, o := mid.Zone(); n != name || o != offset {
					hi = mid
				} else {
					lo = mid
				}
			}
			return hi
		}
		if _, e := step.ZoneBounds(); e.IsZero() || e.After(step) {
			return step // past the wrong answers: a boundary without a change, from which the walk goes on
		}
		prev = step
	}
	return t.Add(48 * time.Hour)
}

// starBit marks a field go-cron parsed from `*` (its unexported starBit).
const starBit = 1 << 63

// matchesWall reports whether the schedule names the local time of w (whose zone only supplies
// the wall clock).
func (c *cronSchedule) matchesWall(w time.Time) bool {
	s := c.spec
	has := func(bits uint64, v int) bool { return bits&(1<<uint(v)) != 0 }
	if w.Second() != 0 || !has(s.Minute, w.Minute()) || !has(s.Hour, w.Hour()) || !has(s.Month, int(w.Month())) {
		return false
	}
	dom, dow := has(s.Dom, w.Day()), has(s.Dow, int(w.Weekday()))
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// firstOccurrence: when a fall-back change repeats the local time of t and t is its second
// occurrence, the first one.
func firstOccurrence(t time.Time) (time.Time, bool) {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return time.Time{}, false
	}
	_, before := start.Add(-time.Second).Zone()
	_, offset := t.Zone()
	repeat := time.Duration(before-offset) * time.Second
	if repeat <= 0 || t.Sub(start) >= repeat {
		return time.Time{}, false
	}
	return t.Add(-repeat), true
}

// sameWall reports whether at reads, in its zone, the wall clock of civil (a UTC time holding a
// local date and time).
func sameWall(at, civil time.Time) bool {
	y, mo, d := at.Date()
	cy, cmo, cd := civil.Date()
	return y == cy && mo == cmo && d == cd && at.Hour() == civil.Hour() && at.Minute() == civil.Minute() && at.Second() == civil.Second()
}
