package trigger

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/schedule"
)

// onTimeGrace is how late the latest due instant may fire and still count as on time: beyond it
// (or when a later instant is due too) it was missed, and the misfire policy decides.
const onTimeGrace = time.Minute

// maxDue bounds the due instants one reconcile goes through; a longer backlog (a one-second
// interval after days of downtime) is worked off by the reconciles that follow at once.
const maxDue = 100_000

// plan is what the scheduler does at one moment.
type plan struct {
	// fire are the instants to submit, oldest first.
	fire []time.Time
	// missed counts the due instants the misfire policy does not submit, from missedFirst to
	// missedLatest; they all come before the ones to fire.
	missed                    int
	missedFirst, missedLatest time.Time
	// next is the first instant not yet due; zero when the schedule has no more.
	next time.Time
	// more: the backlog went beyond maxDue; the next reconcile goes on at once.
	more bool
}

// planOccurrences decides the instants after cursor whose firing time (the instant plus its
// jitter) has come by now. The latest of them is on time when it is at most onTimeGrace late;
// the others were missed. A missed instant is eligible while it is at most catchUpWindow late:
// skip fires only an on-time instant, fireOnce the latest eligible one, fireAll the eligible ones
// up to catchUpLimit (the latest). Everything else due is missed.
func planOccurrences(s schedule.Schedule, p schedule.Policies, jitter func(time.Time) time.Duration, cursor, now time.Time) plan {
	var out plan
	fireTime := func(t time.Time) time.Time { return t.Add(jitter(t)) }
	// tail holds the latest due instants: as many as may fire, and the one before them.
	keep := max(p.CatchUpLimit, 1) + 1
	tail := make([]time.Time, 0, keep)
	total := 0
	var first time.Time
	next := s.Next(cursor)
	for !next.IsZero() && !fireTime(next).After(now) {
		if total == 0 {
			first = next
		}
		total++
		if len(tail) == keep {
			tail = append(tail[:0], tail[1:]...)
		}
		tail = append(tail, next)
		if total >= maxDue {
			out.more = true
			next = time.Time{}
			break
		}
		next = s.Next(next)
	}
	out.next = next
	if total == 0 {
		return out
	}
	last := tail[len(tail)-1]
	onTime := !out.more && now.Sub(fireTime(last)) <= onTimeGrace
	eligible := func(t time.Time) bool {
		return (t.Equal(last) && onTime) || now.Sub(fireTime(t)) <= p.CatchUpWindow
	}
	// fired is where, in tail, the instants to fire start.
	fired := len(tail)
	switch p.Misfire {
	case platformv1.SkipMisfire:
		if onTime {
			fired = len(tail) - 1
		}
	case platformv1.FireAllMisfire:
		for fired > 0 && len(tail)-fired < p.CatchUpLimit && eligible(tail[fired-1]) {
			fired--
		}
	default: // fireOnce
		if eligible(last) {
			fired = len(tail) - 1
		}
	}
	out.fire = tail[fired:]
	out.missed = total - len(out.fire)
	if out.missed > 0 {
		out.missedFirst, out.missedLatest = first, tail[fired-1]
	}
	return out
}

// jitterOf is the deterministic delay of an instant of the Trigger uid: from zero up to max,
// the same on every replica and after every restart.
func jitterOf(uid string, max time.Duration) func(time.Time) time.Duration {
	if max <= 0 {
		return func(time.Time) time.Duration { return 0 }
	}
	return func(t time.Time) time.Duration {
		sum := sha256.Sum256([]byte(uid + "/" + t.UTC().Format(time.RFC3339Nano)))
		return time.Duration(binary.BigEndian.Uint64(sum[:8])%uint64(max/time.Millisecond+1)) * time.Millisecond
	}
}
