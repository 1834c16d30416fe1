package sourceregistries

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/schedule"
)

// Service defaults of refreshPolicy, for what a registration omits (the Console shows the same).
const (
	DefaultInterval        = time.Hour
	DefaultTimeout         = 30 * time.Second
	DefaultInitialBackoff  = 30 * time.Second
	DefaultMaximumBackoff  = time.Hour
	DefaultJitter          = 30 * time.Second
	DefaultStaleAfter      = 24 * time.Hour
	DefaultMaximumAttempts = 5
	// WorkerInterval is how often the periodic worker looks at the registrations (spec Limits).
	WorkerInterval = 30 * time.Second
)

// Policy is a registration's refreshPolicy with the defaults applied.
type Policy struct {
	PeriodicEnabled                                                       bool
	Interval, Timeout, InitialBackoff, MaximumBackoff, Jitter, StaleAfter time.Duration
	MaximumAttempts                                                       int
}

// PolicyOf reads def's refreshPolicy; an omitted or unreadable duration takes the default.
func PolicyOf(def platformv1.SourceRegistryDefinition) Policy {
	p := Policy{Interval: DefaultInterval, Timeout: DefaultTimeout, InitialBackoff: DefaultInitialBackoff,
		MaximumBackoff: DefaultMaximumBackoff, Jitter: DefaultJitter, StaleAfter: DefaultStaleAfter, MaximumAttempts: DefaultMaximumAttempts}
	rp := def.RefreshPolicy
	if rp == nil {
		return p
	}
	p.PeriodicEnabled = rp.PeriodicEnabled
	for _, f := range []struct {
		in  platformv1.TimeSpan
		out *time.Duration
	}{{rp.Interval, &p.Interval}, {rp.Timeout, &p.Timeout}, {rp.InitialBackoff, &p.InitialBackoff}, {rp.MaximumBackoff, &p.MaximumBackoff}, {rp.Jitter, &p.Jitter}, {rp.StaleAfter, &p.StaleAfter}} {
		if f.in == "" {
			continue
		}
		if d, err := schedule.ParseTimeSpan(f.in); err == nil && d >= 0 {
			*f.out = d
		}
	}
	if p.Timeout <= 0 {
		// Every attempt has a finite timeout.
		p.Timeout = DefaultTimeout
	}
	if rp.MaximumAttempts != nil && *rp.MaximumAttempts > 0 {
		p.MaximumAttempts = int(*rp.MaximumAttempts)
	}
	return p
}

// JitterOf is the deterministic delay of a registration's attempt: a pure function of its UID
// and the attempt number, in [0, limit]. Registrations spread out; one registration's schedule
// is the same on every replica and after a restart.
func JitterOf(uid string, attempt int, limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	sum := sha256.Sum256([]byte(uid + "\x00" + strconv.Itoa(attempt)))
	return time.Duration(binary.BigEndian.Uint64(sum[:8]) % (uint64(limit) + 1))
}

// Backoff is the wait before retry number failures (1 is the first retry): InitialBackoff
// doubled per failure, capped at MaximumBackoff, without jitter.
func (p Policy) Backoff(failures int) time.Duration {
	d := p.InitialBackoff
	for i := 1; i < failures && d < p.MaximumBackoff; i++ {
		d *= 2
	}
	return min(d, p.MaximumBackoff)
}

// NextAttempt is when a registration is due again after its last attempt, with failures
// consecutive failures since its last success: the backoff (with jitter) while failures is at
// most MaximumAttempts, otherwise — after a success or once the retries are spent — the normal
// interval (with jitter).
func (p Policy) NextAttempt(uid string, lastAttempt time.Time, failures int) time.Time {
	if failures > 0 && failures <= p.MaximumAttempts {
		return lastAttempt.Add(p.Backoff(failures) + JitterOf(uid, failures, p.Jitter))
	}
	return lastAttempt.Add(p.Interval + JitterOf(uid, 0, p.Jitter))
}
