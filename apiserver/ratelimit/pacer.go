package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPaceFor is how long a token stays paced after its requests were last refused.
const DefaultPaceFor = 10 * time.Second

// maxPaceWait bounds how long one request waits for its turn: a schedule further ahead (a limit
// raised meanwhile, a clock jump) is not waited for.
const maxPaceWait = 2 * time.Second

// Pacer spreads the admitted requests of an access token that was refused lately over its
// window, one every 1/limit of a second, instead of letting them run all at once when a window
// opens. A flooding token has its limit's worth admitted in the first moments of every window
// (the rest is refused from memory), and those requests, run together, would take every core
// from the other workspaces' requests for that moment; paced, they cost the service the same
// work spread evenly. A token that keeps within its limit is never refused, so never paced: a
// client may burst up to its limit. Only per-second request limits pace; runs per minute do not.
type Pacer struct {
	// For is how long a token stays paced after its last refusal (DefaultPaceFor when 0).
	For time.Duration
	// MaxKeys bounds the tokens paced at once (DefaultMaxKeys when 0): past it, a newly refused
	// token is not paced.
	MaxKeys int
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu     sync.Mutex
	tokens map[string]*paced
	// size is len(tokens), read without the lock: while no token is paced, which is nearly
	// always, an admitted request takes no lock here.
	size atomic.Int64
}

type paced struct {
	interval time.Duration
	// until is when the token stops being paced; next is the earliest start of its next request.
	until, next time.Time
}

func (p *Pacer) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Refused records that tokenID was refused by refusal: a token past a per-second request limit
// is paced at that limit for the next For.
func (p *Pacer) Refused(tokenID string, refusal *Refusal) {
	if p == nil || tokenID == "" || refusal == nil || refusal.Allowed <= 0 ||
		(refusal.Limit != TokenRequests && refusal.Limit != WorkspaceRequests) {
		return
	}
	now := p.now()
	hold := p.For
	if hold <= 0 {
		hold = DefaultPaceFor
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tokens == nil {
		p.tokens = map[string]*paced{}
	}
	t, ok := p.tokens[tokenID]
	if !ok {
		maxKeys := p.MaxKeys
		if maxKeys <= 0 {
			maxKeys = DefaultMaxKeys
		}
		if len(p.tokens) >= maxKeys {
			p.sweepLocked(now)
			if len(p.tokens) >= maxKeys {
				return
			}
		}
		t = &paced{}
		p.tokens[tokenID] = t
		p.size.Store(int64(len(p.tokens)))
	}
	t.interval = time.Second / time.Duration(refusal.Allowed)
	t.until = now.Add(hold)
}

// sweepLocked forgets the tokens no longer paced.
func (p *Pacer) sweepLocked(now time.Time) {
	for id, t := range p.tokens {
		if now.After(t.until) && now.After(t.next) {
			delete(p.tokens, id)
		}
	}
	p.size.Store(int64(len(p.tokens)))
}

// Wait holds an admitted request of tokenID until its turn when the token is paced; at once
// otherwise. It returns the context's error when the caller went away while waiting.
func (p *Pacer) Wait(ctx context.Context, tokenID string) error {
	if p == nil || tokenID == "" || p.size.Load() == 0 {
		return nil
	}
	now := p.now()
	p.mu.Lock()
	t, ok := p.tokens[tokenID]
	if !ok || now.After(t.until) {
		if ok && now.After(t.next) {
			delete(p.tokens, tokenID)
			p.size.Store(int64(len(p.tokens)))
		}
		p.mu.Unlock()
		return nil
	}
	start := t.next
	if start.Before(now) || start.Sub(now) > maxPaceWait {
		start = now
	}
	t.next = start.Add(t.interval)
	p.mu.Unlock()
	wait := start.Sub(now)
	if wait <= 0 {
		return nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Paced is how many tokens are remembered as paced (for tests of its bound).
func (p *Pacer) Paced() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tokens)
}
