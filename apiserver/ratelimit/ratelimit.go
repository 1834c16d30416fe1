// Package ratelimit counts requests and started runs per workspace and per personal access token
// in fixed windows kept in the SQL store, so that every replica on one database counts the same,
// and says when a limit is reached and for how long.
package ratelimit

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"platform.dev/platform/apiserver/store"
)

// Limits are what a workspace allows; 0 is no limit.
type Limits struct {
	// RequestsPerSecond bounds the workspace's requests, every caller together.
	RequestsPerSecond int `json:"requestsPerSecond" minimum:"0" doc:"Requests per second of the workspace, every caller together; 0 is no limit"`
	// RunsPerMinute bounds the runs the workspace's requests start.
	RunsPerMinute int `json:"runsPerMinute" minimum:"0" doc:"Runs started per minute in the workspace (Entries opened, follow-ups, WorkItems, Runtime runs, Triggers run now); 0 is no limit"`
	// TokenRequestsPerSecond bounds the requests of each personal access token.
	TokenRequestsPerSecond int `json:"tokenRequestsPerSecond" minimum:"0" doc:"Requests per second of each personal access token; 0 is no limit"`
	// TokenRunsPerMinute bounds the runs each personal access token starts.
	TokenRunsPerMinute int `json:"tokenRunsPerMinute" minimum:"0" doc:"Runs started per minute by each personal access token; 0 is no limit"`
}

// The limits, as the Refusal, the metric and the settings name them.
const (
	WorkspaceRequests = "WorkspaceRequestsPerSecond"
	WorkspaceRuns     = "WorkspaceRunsPerMinute"
	TokenRequests     = "TokenRequestsPerSecond"
	TokenRuns         = "TokenRunsPerMinute"
)

// The annotations of a workspace's namespace that override the instance's limits, each a
// non-negative integer (0 is no limit).
const (
	RequestsPerSecondAnnotation      = "platform/requests-per-second"
	RunsPerMinuteAnnotation          = "platform/runs-per-minute"
	TokenRequestsPerSecondAnnotation = "platform/token-requests-per-second"
	TokenRunsPerMinuteAnnotation     = "platform/token-runs-per-minute"
)

// Annotations lists the limit annotations with the field of Limits each sets.
var Annotations = map[string]func(*Limits) *int{
	RequestsPerSecondAnnotation:      func(l *Limits) *int { return &l.RequestsPerSecond },
	RunsPerMinuteAnnotation:          func(l *Limits) *int { return &l.RunsPerMinute },
	TokenRequestsPerSecondAnnotation: func(l *Limits) *int { return &l.TokenRequestsPerSecond },
	TokenRunsPerMinuteAnnotation:     func(l *Limits) *int { return &l.TokenRunsPerMinute },
}

// ParseLimit reads one limit: a non-negative integer.
func ParseLimit(value string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%q is not a limit: give a whole number from 0 (no limit) up", value)
	}
	return n, nil
}

// Override is defaults with the limits that a workspace's annotations set; an annotation that is
// no limit (admission refuses it) leaves the default.
func Override(defaults Limits, annotations map[string]string) Limits {
	out := defaults
	for key, field := range Annotations {
		if v, ok := annotations[key]; ok {
			if n, err := ParseLimit(v); err == nil {
				*field(&out) = n
			}
		}
	}
	return out
}

// Refusal says which limit a request reached and when to try again.
type Refusal struct {
	// Limit is one of WorkspaceRequests, WorkspaceRuns, TokenRequests, TokenRuns.
	Limit string
	// Allowed is the limit's value.
	Allowed int
	// RetryAfter is when the window that is full ends.
	RetryAfter time.Duration
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up, at least 1: the Retry-After header.
func (r *Refusal) RetryAfterSeconds() int {
	return max(1, int(math.Ceil(r.RetryAfter.Seconds())))
}

// Detail says it for people.
func (r *Refusal) Detail() string {
	what := map[string]string{
		WorkspaceRequests: "requests per second in this workspace",
		WorkspaceRuns:     "runs started per minute in this workspace",
		TokenRequests:     "requests per second with this access token",
		TokenRuns:         "runs started per minute with this access token",
	}[r.Limit]
	return fmt.Sprintf("the limit of %d %s is reached; retry after %d s", r.Allowed, what, r.RetryAfterSeconds())
}

// refused counts the requests answered 429, by limit.
var refused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "platform_rate_limited_requests_total",
	Help: "Requests refused with 429 because a rate limit of their workspace or access token was reached, by limit.",
}, []string{"limit"})

// refusedBy are refused's counters, resolved once: a refusal costs no label lookup.
var refusedBy = map[string]prometheus.Counter{
	WorkspaceRequests: refused.WithLabelValues(WorkspaceRequests),
	WorkspaceRuns:     refused.WithLabelValues(WorkspaceRuns),
	TokenRequests:     refused.WithLabelValues(TokenRequests),
	TokenRuns:         refused.WithLabelValues(TokenRuns),
}

// takeDuration is what counting costs a request that has limits.
var takeDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "platform_rate_limit_check_seconds",
	Help:    "Time to lease a share of a limit's window from the store.",
	Buckets: prometheus.ExponentialBuckets(0.0001, 4, 8),
})

func init() { ctrlmetrics.Registry.MustRegister(refused, takeDuration) }

// How long the rows of a window are kept after it ended: counters only while they may still be
// read, the refusals of a workspace for the Console's recent window.
const (
	counterRetention = time.Minute
	refusalRetention = time.Hour
	// RecentWindow is the window of Recent: the refusals of the last hour, a minute at a time.
	RecentWindow = time.Hour
	sweepEvery   = 15 * time.Second
)

// DefaultMaxKeys bounds the counters (and the access tokens' digests) a replica remembers when
// Counter.MaxKeys is 0: a counter it cannot remember is counted in the store request by request.
const DefaultMaxKeys = 100_000

// leaseShare is the largest share of a limit one replica leases from the store at once: a limit
// under 2*leaseShare is counted one request at a time (exactly), a bigger one in leases of up to
// limit/leaseShare.
const leaseShare = 10

// bearerMemory is how long a replica remembers the access token of a refused request, so that
// the token's later refusals are answered before its authentication.
const bearerMemory = time.Minute

// Counter counts in the store, and in front of it: a replica leases a counter's window from the
// store in batches (one upsert adds a batch to the window's count and answers how much of it is
// under the limit) and admits requests from its lease without touching the store, leasing the
// next batch in the background once half of one is used; a replica that saw the store's count
// reach the limit refuses the rest of the window from memory. Across replicas a window never
// admits more than its limit; a replica holds at most one and a half leases of up to
// limit/leaseShare units it has not used yet, so with R replicas a window admits at least the
// limit minus times 3*limit/(2*leaseShare) (one replica, or a limit under 2*leaseShare,
// whose leases are of one unit and never taken ahead: exactly the limit).
type Counter struct {
	DB *store.Store
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// MaxKeys bounds the counters and access tokens remembered; DefaultMaxKeys when 0.
	MaxKeys int

	lastSweep atomic.Int64

	// mu guards the maps; a request's lookups share it (RLock), only a new counter or token and
	// the sweep take it alone, so a flood's refusals never make another workspace's request wait.
	mu      sync.RWMutex
	buckets map[string]*bucket
	bearers map[[32]byte]bearer
	// bearerCount is len(bearers), read without mu.
	bearerCount atomic.Int64
	// swept is when mu's maps were last swept of the windows that ended.
	swept time.Time

	// refusedHere are the refusals not yet added to the store's count of refusals, by
	// workspace; flushed flushEvery after the first of them, in one upsert per workspace.
	refusedMu     sync.Mutex
	refusedHere   map[string]int64
	refusedMinute time.Time
	// flushing are the refusals being written to the store, still counted by Recent.
	flushing map[string]int64
}

// bucket is what a replica knows of one counter's current window.
type bucket struct {
	mu sync.Mutex
	// start and ends bound the window; left is the lease not yet used, taken what this replica
	// admitted in the window, batch the size of its next lease.
	start, ends time.Time
	left, taken int
	batch       int
	// full: the store's count reached the limit; once left is used, the window is refused.
	full bool
	// refusal is the refusal of the full window.
	refusal Refusal
	// refilling is closed when the lease under way is in; nil when none is.
	refilling chan struct{}
}

// bearer is the workspace and token of an access token (by the digest of what its caller sends)
// that was refused, until when it is remembered, with the names of its counters: a refusal from
// memory builds none.
type bearer struct {
	workspaceID, tokenID string
	until                time.Time
	// requests and runs are the counters of the token and of its workspace.
	requests, runs [2]string
}

// flushEvery bounds how late the store learns the refusals a replica answered.
const flushEvery = time.Second

func (c *Counter) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Counter) maxKeys() int {
	if c.MaxKeys > 0 {
		return c.MaxKeys
	}
	return DefaultMaxKeys
}

type hit struct {
	counter string
	limit   string
	allowed int
	window  time.Duration
}

// Take counts one request of workspaceID (tokenID: its personal access token, "" for another
// credential) against limits, and one started run when startsRun, and answers the first limit the
// request goes past, or nil. A request is admitted from this replica's lease when it holds one
// and refused from memory once the window is full: only a lease touches the store. Nothing is
// counted, and the store is not touched, when no limit applies.
func (c *Counter) Take(ctx context.Context, workspaceID, tokenID string, limits Limits, startsRun bool) (*Refusal, error) {
	var (
		buf  [4]hit
		hits = buf[:0]
	)
	add := func(allowed int, kind, owner, limit string, window time.Duration) {
		if allowed > 0 {
			hits = append(hits, hit{counter: kind + owner, limit: limit, allowed: allowed, window: window})
		}
	}
	add(limits.RequestsPerSecond, "requests/workspace/", workspaceID, WorkspaceRequests, time.Second)
	if tokenID != "" {
		add(limits.TokenRequestsPerSecond, "requests/token/", tokenID, TokenRequests, time.Second)
	}
	if startsRun {
		add(limits.RunsPerMinute, "runs/workspace/", workspaceID, WorkspaceRuns, time.Minute)
		if tokenID != "" {
			add(limits.TokenRunsPerMinute, "runs/token/", tokenID, TokenRuns, time.Minute)
		}
	}
	for _, h := range hits {
		r, err := c.take(ctx, h)
		if err != nil {
			return nil, err
		}
		if r != nil {
			refusedBy[r.Limit].Inc()
			c.noteRefusal(workspaceID)
			return r, nil
		}
	}
	return nil, nil
}

// take admits one request against h from the lease of its counter's window, leasing more from
// the store when the lease is used up; the refusal when the window is full.
func (c *Counter) take(ctx context.Context, h hit) (*Refusal, error) {
	b := c.bucket(h.counter)
	if b == nil {
		// Too many counters to remember: this one is counted in the store, one request at a time.
		now := c.now()
		start := now.Truncate(h.window)
		granted, err := c.lease(ctx, h, start, 1)
		if err != nil || granted > 0 {
			return nil, err
		}
		return &Refusal{Limit: h.limit, Allowed: h.allowed, RetryAfter: start.Add(h.window).Sub(now)}, nil
	}
	b.mu.Lock()
	for {
		now := c.now()
		if start := now.Truncate(h.window); start.After(b.start) {
			// A new window: the lease of the last one is void. The next lease is sized after
			// what the last window admitted here, so a busy counter needs few of them.
			b.batch = min(max(1, b.taken/4), maxBatch(h.allowed))
			b.start, b.ends, b.left, b.taken, b.full = start, start.Add(h.window), 0, 0, false
		}
		if b.left > 0 {
			b.left--
			b.taken++
			c.refillAhead(b, h)
			b.mu.Unlock()
			return nil, nil
		}
		if b.full {
			r := b.refusal
			r.RetryAfter = b.ends.Sub(now)
			b.mu.Unlock()
			return &r, nil
		}
		if ch := b.refilling; ch != nil {
			// One lease at a time per counter: the others wait for it, then take from it.
			b.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			b.mu.Lock()
			continue
		}
		ch, start, n := make(chan struct{}), b.start, max(1, b.batch)
		b.refilling = ch
		b.mu.Unlock()
		if err := c.refill(ctx, b, h, start, n, ch); err != nil {
			return nil, err
		}
		c.sweepStore(now)
		b.mu.Lock()
	}
}

// refill leases n more of counter h's window that starts at start for b, whose refilling is ch,
// and closes ch.
func (c *Counter) refill(ctx context.Context, b *bucket, h hit, start time.Time, n int, ch chan struct{}) error {
	timer := prometheus.NewTimer(takeDuration)
	granted, err := c.lease(ctx, h, start, n)
	timer.ObserveDuration()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refilling = nil
	close(ch)
	if err != nil {
		return err
	}
	if b.start.Equal(start) {
		b.left += granted
		b.batch = min(max(b.batch, 2*n), maxBatch(h.allowed))
		if granted < n {
			b.full = true
			b.refusal = Refusal{Limit: h.limit, Allowed: h.allowed}
		}
	}
	return nil
}

// refillAhead starts the counter's next lease in the background once half of its lease is used
// (b.mu held), so that a steady caller's requests are admitted from memory without waiting for
// the store's write, and no workspace's request waits behind another's counting: the replica
// then holds at most half a lease and the next one unused. A limit whose lease is one unit (under
// 2*leaseShare) is not leased ahead: it stays exact across replicas.
func (c *Counter) refillAhead(b *bucket, h hit) {
	if maxBatch(h.allowed) < 2 || b.full || b.refilling != nil || b.left > b.batch/2 {
		return
	}
	ch, start, n := make(chan struct{}), b.start, b.batch
	b.refilling = ch
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
		defer cancel()
		// A failed lease ahead is not retried here: the request that finds the lease used up
		// leases itself and answers the error.
		_ = c.refill(ctx, b, h, start, n, ch)
		c.sweepStore(c.now())
	}()
}

// leaseTimeout bounds a lease taken ahead of the requests.
const leaseTimeout = 10 * time.Second

// maxBatch is the largest lease of a limit of allowed.
func maxBatch(allowed int) int { return max(1, allowed/leaseShare) }

// bucket is the bucket of counter, nil when the replica remembers as many as it may and none of
// them is over.
func (c *Counter) bucket(counter string) *bucket {
	c.mu.RLock()
	b, ok := c.buckets[counter]
	c.mu.RUnlock()
	if ok {
		return b
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.buckets[counter]; ok {
		return b
	}
	if c.buckets == nil {
		c.buckets = map[string]*bucket{}
	}
	if len(c.buckets) >= c.maxKeys() {
		c.sweepLocked(c.now(), true)
		if len(c.buckets) >= c.maxKeys() {
			return nil
		}
	} else {
		c.sweepLocked(c.now(), false)
	}
	b = &bucket{batch: 1}
	c.buckets[counter] = b
	return b
}

// sweepLocked forgets the windows that ended and the tokens no longer remembered, at most every
// sweepEvery unless forced: the memory holds only the counters and tokens in use.
func (c *Counter) sweepLocked(now time.Time, force bool) {
	if !force && now.Sub(c.swept) < sweepEvery {
		return
	}
	c.swept = now
	for k, b := range c.buckets {
		// A bucket another request holds is left alone; its window has not ended for it.
		if b.mu.TryLock() {
			if !now.Before(b.ends) && b.refilling == nil {
				delete(c.buckets, k)
			}
			b.mu.Unlock()
		}
	}
	for k, e := range c.bearers {
		if !now.Before(e.until) {
			delete(c.bearers, k)
		}
	}
	c.bearerCount.Store(int64(len(c.bearers)))
}

// Remembered is how many counters and access tokens the replica remembers now.
func (c *Counter) Remembered() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.buckets) + len(c.bearers)
}

// lease adds n to counter h's window that starts at start, in the store, and answers how many of
// those n are under the limit.
func (c *Counter) lease(ctx context.Context, h hit, start time.Time, n int) (int, error) {
	count, err := c.count(ctx, h.counter, start, start.Add(h.window+counterRetention), n)
	if err != nil {
		return 0, err
	}
	return min(n, max(0, h.allowed-int(count-int64(n)))), nil
}

// TokenRefused is the refusal of a request of a personal access token (of workspace workspaceID)
// whose window this replica already saw full, answered from memory; nil when the request must
// be counted (Take).
func (c *Counter) TokenRefused(workspaceID, tokenID string, startsRun bool) *Refusal {
	if r, ok := c.refusedFromMemory(newBearer(workspaceID, tokenID, time.Time{}), startsRun); ok {
		return &r
	}
	return nil
}

func newBearer(workspaceID, tokenID string, until time.Time) bearer {
	return bearer{workspaceID: workspaceID, tokenID: tokenID, until: until,
		requests: [2]string{"requests/token/" + tokenID, "requests/workspace/" + workspaceID},
		runs:     [2]string{"runs/token/" + tokenID, "runs/workspace/" + workspaceID}}
}

// refusedFromMemory is the refusal of e's request when a window of its counters is full here
// (and the refusal is counted); ok is false when the request must be counted (Take). It neither
// allocates nor takes a lock that another counter's request waits for.
func (c *Counter) refusedFromMemory(e bearer, startsRun bool) (Refusal, bool) {
	r, ok := c.fullNow(e.requests)
	if !ok && startsRun {
		r, ok = c.fullNow(e.runs)
	}
	if ok {
		refusedBy[r.Limit].Inc()
		c.noteRefusal(e.workspaceID)
	}
	return r, ok
}

// fullNow is the refusal of the first of counters whose current window is full here and whose
// lease is used up; ok is false when there is none.
func (c *Counter) fullNow(counters [2]string) (Refusal, bool) {
	now := c.now()
	for _, counter := range counters {
		c.mu.RLock()
		b := c.buckets[counter]
		c.mu.RUnlock()
		if b == nil {
			continue
		}
		b.mu.Lock()
		if b.full && b.left == 0 && now.Before(b.ends) && !now.Before(b.start) {
			r := b.refusal
			r.RetryAfter = b.ends.Sub(now)
			b.mu.Unlock()
			return r, true
		}
		b.mu.Unlock()
	}
	return Refusal{}, false
}

// RememberBearer notes that a request of personal access token tokenID (of workspace
// workspaceID), sent as the credential whose SHA-256 digest is digest, was refused: the
// token's requests are then refused by BearerRefused, before their authentication, while its
// windows stay full. It is forgotten bearerMemory after its last refusal.
func (c *Counter) RememberBearer(digest [32]byte, workspaceID, tokenID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bearers == nil {
		c.bearers = map[[32]byte]bearer{}
	}
	now := c.now()
	if _, ok := c.bearers[digest]; !ok && len(c.bearers) >= c.maxKeys() {
		c.sweepLocked(now, true)
		if len(c.bearers) >= c.maxKeys() {
			return
		}
	}
	c.bearers[digest] = newBearer(workspaceID, tokenID, now.Add(bearerMemory))
	c.bearerCount.Store(int64(len(c.bearers)))
}

// RemembersBearers reports whether any access token is remembered: while none is, a request
// need not compute its credential's digest for BearerRefused.
func (c *Counter) RemembersBearers() bool { return c.bearerCount.Load() > 0 }

// BearerRefused is the refusal of a request whose credential has the SHA-256 digest digest,
// when it is a remembered access token (RememberBearer) with a window full now; nil otherwise,
// and the request goes on to be authenticated. A token revoked meanwhile is answered 429 rather
// than 401 until that window ends.
func (c *Counter) BearerRefused(digest [32]byte, startsRun bool) *Refusal {
	if r, ok := c.BearerRefusal(digest, startsRun); ok {
		return &r
	}
	return nil
}

// BearerRefusal is BearerRefused for the path of a flood: it neither allocates nor waits for a
// lock that another workspace's requests hold; ok is false when the request goes on.
func (c *Counter) BearerRefusal(digest [32]byte, startsRun bool) (Refusal, bool) {
	if c.bearerCount.Load() == 0 {
		return Refusal{}, false
	}
	c.mu.RLock()
	e, ok := c.bearers[digest]
	c.mu.RUnlock()
	if !ok {
		return Refusal{}, false
	}
	return c.refusedFromMemory(e, startsRun)
}

// noteRefusal notes a refusal; the ones noted are added to the store's count of the
// workspace's refusals flushEvery later, in one upsert per workspace, so that a refusal costs the
// request no write.
func (c *Counter) noteRefusal(workspaceID string) {
	c.refusedMu.Lock()
	defer c.refusedMu.Unlock()
	if c.refusedHere == nil {
		c.refusedHere = map[string]int64{}
		minute := c.now().Truncate(time.Minute)
		c.refusedMinute = minute
		time.AfterFunc(flushEvery, func() { c.flushRefusals(minute) })
	}
	c.refusedHere[workspaceID]++
}

func (c *Counter) flushRefusals(minute time.Time) {
	c.refusedMu.Lock()
	pending := c.refusedHere
	c.refusedHere, c.flushing = nil, pending
	c.refusedMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ws, n := range pending {
		_, _ = c.count(ctx, "refused/workspace/"+ws, minute, minute.Add(time.Minute+refusalRetention), int(n))
		c.refusedMu.Lock()
		delete(c.flushing, ws)
		c.refusedMu.Unlock()
	}
}

// count adds n to the counter's window that starts at start in one upsert and answers the
// window's count. On SQLite the upserts of concurrent requests share a commit (GroupInTx): one
// fsync for many; on PostgreSQL it is one statement, committed on its own, whose row lock is the
// counter's only: another workspace's counters never wait for it.
func (c *Counter) count(ctx context.Context, counter string, start, expires time.Time, n int) (int64, error) {
	query := c.DB.Rebind(`INSERT INTO rate_counters (counter, window_start, hits, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (counter, window_start) DO UPDATE SET hits = rate_counters.hits + ? RETURNING hits`)
	args := []any{counter, start.UnixMilli(), n, expires.UnixMilli(), n}
	var count int64
	if c.DB.Dialect() != store.SQLite {
		return count, c.DB.DB().QueryRowContext(ctx, query, args...).Scan(&count)
	}
	err := c.DB.GroupInTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, query, args...).Scan(&count)
	})
	return count, err
}

// sweepStore deletes the rows whose windows are long over, at most every sweepEvery per replica,
// in the background: the table holds only the recent windows of the active workspaces and tokens.
func (c *Counter) sweepStore(now time.Time) {
	last := c.lastSweep.Load()
	if now.UnixMilli()-last < sweepEvery.Milliseconds() || !c.lastSweep.CompareAndSwap(last, now.UnixMilli()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.DB.DB().ExecContext(ctx, c.DB.Rebind(`DELETE FROM rate_counters WHERE expires_at < ?`), now.UnixMilli())
	}()
}

// Recent is how many requests of the workspace were refused with 429 in the last RecentWindow,
// and when the last one was (zero when none was): the store's count, with this replica's
// refusals not yet flushed to it (another replica's are counted up to flushEvery later).
func (c *Counter) Recent(ctx context.Context, workspaceID string) (count int64, last time.Time, err error) {
	var lastStart sql.NullInt64
	err = c.DB.DB().QueryRowContext(ctx, c.DB.Rebind(`SELECT COALESCE(SUM(hits), 0), MAX(window_start) FROM rate_counters
		WHERE counter = ? AND window_start >= ?`), "refused/workspace/"+workspaceID, c.now().Add(-RecentWindow).UnixMilli()).Scan(&count, &lastStart)
	if lastStart.Valid {
		last = time.UnixMilli(lastStart.Int64).UTC()
	}
	c.refusedMu.Lock()
	if n := c.refusedHere[workspaceID] + c.flushing[workspaceID]; n > 0 {
		count += n
		if c.refusedMinute.After(last) {
			last = c.refusedMinute.UTC()
		}
	}
	c.refusedMu.Unlock()
	return count, last, err
}
