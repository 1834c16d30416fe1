package trigger

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/schedule"
)

func noJitter(time.Time) time.Duration { return 0 }

func everyMinute(t *testing.T, anchor time.Time) schedule.Schedule {
	return every(t, "00:01:00", anchor)
}

func every(t *testing.T, period string, anchor time.Time) schedule.Schedule {
	t.Helper()
	s, errs := schedule.Parse(field.NewPath("schedule"), platformv1.TriggerSchedule{Type: "interval", Expression: period, TimeZone: "UTC"}, anchor)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return s
}

func TestPlanOccurrences(t *testing.T) {
	anchor := time.Date(2026, 1, 30, 12, 0, 0, 0, time.UTC)
	minute := func(n int) time.Time { return anchor.Add(time.Duration(n) * time.Minute) }
	policies := func(m platformv1.MisfirePolicy) schedule.Policies {
		return schedule.Policies{Misfire: m, CatchUpWindow: 5 * time.Minute, CatchUpLimit: 3}
	}
	tests := map[string]struct {
		// period of the interval schedule; a minute when empty.
		period   string
		policies schedule.Policies
		cursor   time.Time
		now      time.Time
		fire     []time.Time
		missed   int
		latest   time.Time
		next     time.Time
	}{
		"nothing is due before the first instant": {
			policies: policies(platformv1.FireOnceMisfire), cursor: anchor, now: minute(1).Add(-time.Second), next: minute(1),
		},
		"the instant that came fires on time": {
			policies: policies(platformv1.SkipMisfire), cursor: anchor, now: minute(1).Add(200 * time.Millisecond),
			fire: []time.Time{minute(1)}, next: minute(2),
		},
		"the next instant comes after the cursor, not after now": {
			policies: policies(platformv1.FireOnceMisfire), cursor: minute(1), now: minute(1).Add(30 * time.Second), next: minute(2),
		},
		"fireOnce after downtime submits the latest missed instant once": {
			period: "00:05:00", policies: policies(platformv1.FireOnceMisfire), cursor: anchor, now: minute(17),
			fire: []time.Time{minute(15)}, missed: 2, latest: minute(10), next: minute(20),
		},
		"fireOnce submits nothing older than the catch-up window": {
			period: "00:05:00", policies: schedule.Policies{Misfire: platformv1.FireOnceMisfire, CatchUpWindow: 3 * time.Minute, CatchUpLimit: 3},
			cursor: anchor, now: minute(24), missed: 4, latest: minute(20), next: minute(25),
		},
		"skip submits no missed instant": {
			period: "00:05:00", policies: policies(platformv1.SkipMisfire), cursor: anchor, now: minute(17),
			missed: 3, latest: minute(15), next: minute(20),
		},
		"skip fires an on-time instant after missed ones": {
			period: "00:05:00", policies: policies(platformv1.SkipMisfire), cursor: anchor, now: minute(15).Add(time.Second),
			fire: []time.Time{minute(15)}, missed: 2, latest: minute(10), next: minute(20),
		},
		"a later instant makes the earlier ones missed": {
			policies: policies(platformv1.FireOnceMisfire), cursor: anchor, now: minute(3).Add(time.Second),
			fire: []time.Time{minute(3)}, missed: 2, latest: minute(2), next: minute(4),
		},
		"fireAll submits every missed instant within the window": {
			policies: policies(platformv1.FireAllMisfire), cursor: minute(1), now: minute(3).Add(time.Second),
			fire: []time.Time{minute(2), minute(3)}, next: minute(4),
		},
		"fireAll submits at most catchUpLimit, the latest": {
			policies: policies(platformv1.FireAllMisfire), cursor: anchor, now: minute(5).Add(time.Second),
			fire: []time.Time{minute(3), minute(4), minute(5)}, missed: 2, latest: minute(2), next: minute(6),
		},
		"fireAll leaves instants beyond the window missed": {
			policies: schedule.Policies{Misfire: platformv1.FireAllMisfire, CatchUpWindow: 90 * time.Second, CatchUpLimit: 10},
			cursor:   anchor, now: minute(5).Add(time.Second),
			fire: []time.Time{minute(4), minute(5)}, missed: 3, latest: minute(3), next: minute(6),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			period := tt.period
			if period == "" {
				period = "00:01:00"
			}
			p := planOccurrences(every(t, period, anchor), tt.policies, noJitter, tt.cursor, tt.now)
			if tt.fire == nil {
				g.Expect(p.fire).To(BeEmpty())
			} else {
				g.Expect(p.fire).To(Equal(tt.fire))
			}
			g.Expect(p.missed).To(Equal(tt.missed))
			g.Expect(p.missedLatest).To(Equal(tt.latest))
			g.Expect(p.next).To(Equal(tt.next))
			if tt.missed > 0 {
				g.Expect(p.missedFirst).To(Equal(every(t, period, anchor).Next(tt.cursor)), "missed instants start after the cursor")
			}
		})
	}
}

func TestJitterIsDeterministicAndBounded(t *testing.T) {
	g := NewWithT(t)
	instant := time.Date(2026, 1, 30, 12, 0, 0, 0, time.UTC)
	jitter := jitterOf("uid-1", 10*time.Second)
	g.Expect(jitter(instant)).To(Equal(jitterOf("uid-1", 10*time.Second)(instant)), "the same on every replica and after a restart")
	spread := map[time.Duration]bool{}
	for i := range 50 {
		d := jitter(instant.Add(time.Duration(i) * time.Minute))
		g.Expect(d).To(BeNumerically(">=", 0))
		g.Expect(d).To(BeNumerically("<=", 10*time.Second))
		spread[d] = true
	}
	g.Expect(len(spread)).To(BeNumerically(">", 10), "instants get different delays")
	g.Expect(jitterOf("uid-1", 0)(instant)).To(BeZero())

	// A jittered instant is due only once its delay has passed, and the next waits for it.
	s := everyMinute(t, instant)
	delayed := func(time.Time) time.Duration { return 20 * time.Second }
	p := planOccurrences(s, schedule.Policies{Misfire: platformv1.FireOnceMisfire, CatchUpWindow: time.Hour, CatchUpLimit: 1}, delayed,
		instant, instant.Add(70*time.Second))
	g.Expect(p.fire).To(BeEmpty())
	g.Expect(p.next).To(Equal(instant.Add(time.Minute)))
}
