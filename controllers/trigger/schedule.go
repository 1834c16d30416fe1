package trigger

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The module graph has no cron library (github.com/netresearch/go-cron and
// github.com/robfig/cron/v3 are absent), so this file parses the documented five-field form
// itself, strictly: minute hour day-of-month month day-of-week, each `*`, a number, a range
// `a-b`, a step `*/n` or `a-b/n`, or a comma list of those; months and weekdays also by their
// three-letter English names; weekday 7 is Sunday as 0 is. Descriptors: @yearly (@annually),
// @monthly, @weekly, @daily (@midnight), @hourly. As in Vixie cron, when both day fields are
// restricted a day matching either fires.

// cronSchedule is a parsed cron expression: the allowed values of each field.
type cronSchedule struct {
	minute, hour, dom, month, dow uint64
	// domStar and dowStar say the day fields were `*` (unrestricted).
	domStar, dowStar bool
}

var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

var (
	monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
	dayNames   = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
)

// parseCron parses a five-field cron expression or a descriptor.
func parseCron(expr string) (*cronSchedule, error) {
	if d, ok := descriptors[expr]; ok {
		expr = d
	} else if strings.HasPrefix(expr, "@") {
		return nil, fmt.Errorf("unknown descriptor %s", expr)
	}
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return nil, fmt.Errorf("a cron expression has five fields (minute hour day-of-month month day-of-week), not %d", len(fields))
	}
	s := &cronSchedule{domStar: fields[2] == "*", dowStar: fields[4] == "*"}
	specs := []struct {
		name     string
		min, max int
		names    map[string]int
		into     *uint64
	}{
		{"minute", 0, 59, nil, &s.minute},
		{"hour", 0, 23, nil, &s.hour},
		{"day-of-month", 1, 31, nil, &s.dom},
		{"month", 1, 12, monthNames, &s.month},
		{"day-of-week", 0, 7, dayNames, &s.dow},
	}
	for i, spec := range specs {
		bits, err := parseField(fields[i], spec.min, spec.max, spec.names)
		if err != nil {
			return nil, fmt.Errorf("%s field %q: %w", spec.name, fields[i], err)
		}
		*spec.into = bits
	}
	if s.dow&(1<<7) != 0 {
		s.dow |= 1
	}
	return s, nil
}

// parseField parses one field into a bit set of its allowed values.
func parseField(field string, min, max int, names map[string]int) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(field, ",") {
		rangePart, step := part, 1
		if i := strings.IndexByte(part, '/'); i >= 0 {
			n, err := strconv.Atoi(part[i+1:])
			if err != nil || n < 1 || n > max {
				return 0, fmt.Errorf("step %q is not a number from 1 to %d", part[i+1:], max)
			}
			rangePart, step = part[:i], n
		}
		lo, hi := min, max
		switch {
		case rangePart == "*":
		case strings.Contains(rangePart, "-"):
			bounds := strings.SplitN(rangePart, "-", 2)
			var err error
			if lo, err = value(bounds[0], min, max, names); err != nil {
				return 0, err
			}
			if hi, err = value(bounds[1], min, max, names); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("range %s runs backwards", rangePart)
			}
		default:
			v, err := value(rangePart, min, max, names)
			if err != nil {
				return 0, err
			}
			lo, hi = v, v
			if step > 1 {
				hi = max
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, nil
}

var number = regexp.MustCompile(`^[0-9]{1,2}$`)

// value parses one number or name of a field.
func value(s string, min, max int, names map[string]int) (int, error) {
	if v, ok := names[strings.ToLower(s)]; ok {
		return v, nil
	}
	if !number.MatchString(s) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	v, _ := strconv.Atoi(s)
	if v < min || v > max {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, min, max)
	}
	return v, nil
}

// searchYears bounds the search for the next instant (a schedule such as `0 0 30 2 *` never
// fires).
const searchYears = 5

// next is the first instant strictly after t, in t's location, that the schedule fires at; the
// zero time when there is none within searchYears. Local times skipped by a daylight saving
// change do not fire.
func (s *cronSchedule) next(t time.Time) time.Time {
	loc := t.Location()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	for i := 0; i < searchYears*366; i++ {
		y, m, d := day.Date()
		if s.month&(1<<uint(m)) != 0 && s.dayMatches(d, int(day.Weekday())) {
			for h := 0; h < 24; h++ {
				if s.hour&(1<<uint(h)) == 0 {
					continue
				}
				for min := 0; min < 60; min++ {
					if s.minute&(1<<uint(min)) == 0 {
						continue
					}
					at := time.Date(y, m, d, h, min, 0, 0, loc)
					if at.Hour() != h || at.Minute() != min || !at.After(t) {
						continue
					}
					return at
				}
			}
		}
		day = time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	}
	return time.Time{}
}

func (s *cronSchedule) dayMatches(dom, dow int) bool {
	domOK, dowOK := s.dom&(1<<uint(dom)) != 0, s.dow&(1<<uint(dow)) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// parseInterval parses the documented interval form [days.]hh:mm:ss.
func parseInterval(expr string) (time.Duration, error) {
	m := regexp.MustCompile(`^(?:([0-9]{1,5})\.)?([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])$`).FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("an interval is [days.]hh:mm:ss such as 01:00:00")
	}
	var days int
	if m[1] != "" {
		days, _ = strconv.Atoi(m[1])
	}
	h, _ := strconv.Atoi(m[2])
	mi, _ := strconv.Atoi(m[3])
	sec, _ := strconv.Atoi(m[4])
	d := time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(sec)*time.Second
	if d <= 0 {
		return 0, fmt.Errorf("an interval is longer than zero")
	}
	return d, nil
}

// parseOnce parses the documented once form, a local date and time, in loc.
func parseOnce(expr string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, expr, loc); err == nil {
			if t.Format(layout) != expr {
				return time.Time{}, fmt.Errorf("%s does not exist in %s", expr, loc)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("a once schedule is a local date and time such as 2026-01-31T09:00:00")
}
