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

// takeDuration is what counting costs a request that has limits.
var takeDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "platform_rate_limit_check_seconds",
	Help:    "Time to count one request against its limits in the store.",
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

// Counter counts in the store.
type Counter struct {
	DB *store.Store
	// Now is the clock; time.Now when nil.
	Now       func() time.Time
	lastSweep atomic.Int64

	// full remembers the counters whose current window this replica saw past its limit, until
	// the window ends (counter -> *fullWindow): counts only grow within a window, so every later
	// request of it is refused without a write, and a flood costs the store nothing more.
	full sync.Map
	// refusedHere are the refusals answered from full not yet added to the store's count of
	// refusals, by workspace; flushed flushEvery after the first of them.
	mu          sync.Mutex
	refusedHere map[string]int64
}

// fullWindow is a full window of a counter: its refusal, until the window ends.
type fullWindow struct {
	refusal Refusal
	ends    time.Time
}

// flushEvery bounds how late the store learns the refusals a replica answered from memory.
const flushEvery = time.Second

func (c *Counter) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

type hit struct {
	counter string
	limit   string
	allowed int
	window  time.Duration
}

// Take counts one request of workspaceID (tokenID: its personal access token, "" for another
// credential) against limits, and one started run when startsRun, and answers the first limit the
// request goes past, or nil. Every attempt counts, refused ones too: a caller that keeps trying
// past its limit stays refused until it waits the Retry-After. Nothing is counted, and the store
// is not touched, when no limit applies.
func (c *Counter) Take(ctx context.Context, workspaceID, tokenID string, limits Limits, startsRun bool) (*Refusal, error) {
	hits := make([]hit, 0, 4)
	add := func(allowed int, counter, limit string, window time.Duration) {
		if allowed > 0 {
			hits = append(hits, hit{counter: counter, limit: limit, allowed: allowed, window: window})
		}
	}
	add(limits.RequestsPerSecond, "requests/workspace/"+workspaceID, WorkspaceRequests, time.Second)
	if tokenID != "" {
		add(limits.TokenRequestsPerSecond, "requests/token/"+tokenID, TokenRequests, time.Second)
	}
	if startsRun {
		add(limits.RunsPerMinute, "runs/workspace/"+workspaceID, WorkspaceRuns, time.Minute)
		if tokenID != "" {
			add(limits.TokenRunsPerMinute, "runs/token/"+tokenID, TokenRuns, time.Minute)
		}
	}
	if len(hits) == 0 {
		return nil, nil
	}
	now := c.now()
	for _, h := range hits {
		if r := c.fromMemory(now, workspaceID, h.counter); r != nil {
			return r, nil
		}
	}
	defer prometheus.NewTimer(takeDuration).ObserveDuration()
	counts, err := c.count(ctx, now, hits)
	if err != nil {
		return nil, err
	}
	c.sweep(now)
	for i, h := range hits {
		if counts[i] > int64(h.allowed) {
			start := now.Truncate(h.window)
			r := &Refusal{Limit: h.limit, Allowed: h.allowed, RetryAfter: start.Add(h.window).Sub(now)}
			c.full.Store(h.counter, &fullWindow{refusal: *r, ends: start.Add(h.window)})
			refused.WithLabelValues(h.limit).Inc()
			// The Console's count of refusals is news, not the answer: a failure to record it
			// does not change the 429.
			_, _ = c.count(ctx, now, []hit{{counter: "refused/workspace/" + workspaceID, window: time.Minute}})
			return r, nil
		}
	}
	return nil, nil
}

// fromMemory is the refusal of counter when this replica saw its current window full, else nil.
func (c *Counter) fromMemory(now time.Time, workspaceID, counter string) *Refusal {
	f, ok := c.full.Load(counter)
	if !ok {
		return nil
	}
	w := f.(*fullWindow)
	if !now.Before(w.ends) {
		c.full.CompareAndDelete(counter, f)
		return nil
	}
	r := w.refusal
	r.RetryAfter = w.ends.Sub(now)
	refused.WithLabelValues(r.Limit).Inc()
	c.refusedFromMemory(now, workspaceID)
	return &r
}

// TokenRefused is the refusal of a request of a personal access token (of workspace workspaceID)
// whose window this replica already saw full, answered from memory before the request's
// workspace and permissions are resolved; nil when the request must be counted (Take).
func (c *Counter) TokenRefused(workspaceID, tokenID string, startsRun bool) *Refusal {
	now := c.now()
	if r := c.fromMemory(now, workspaceID, "requests/token/"+tokenID); r != nil {
		return r
	}
	if startsRun {
		return c.fromMemory(now, workspaceID, "runs/token/"+tokenID)
	}
	return nil
}

// refusedFromMemory notes a refusal answered without the store; the ones noted are added to the
// store's count of the workspace's refusals flushEvery later, in one upsert per workspace.
func (c *Counter) refusedFromMemory(now time.Time, workspaceID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refusedHere == nil {
		c.refusedHere = map[string]int64{}
		minute := now.Truncate(time.Minute)
		time.AfterFunc(flushEvery, func() { c.flushRefusals(minute) })
	}
	c.refusedHere[workspaceID]++
}

func (c *Counter) flushRefusals(minute time.Time) {
	c.mu.Lock()
	pending := c.refusedHere
	c.refusedHere = nil
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ws, n := range pending {
		_, _ = c.DB.DB().ExecContext(ctx, c.DB.Rebind(`INSERT INTO rate_counters (counter, window_start, hits, expires_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (counter, window_start) DO UPDATE SET hits = rate_counters.hits + ?`),
			"refused/workspace/"+ws, minute.UnixMilli(), n, minute.Add(time.Minute+refusalRetention).UnixMilli(), n)
	}
}

// count adds one to each counter's current window in one upsert and answers the counts, in the
// order of hits. On SQLite the upserts of concurrent requests share a commit (GroupInTx): one
// fsync for many; on PostgreSQL it is one statement, committed on its own, whose row lock is the
// counter's only: another workspace's counters never wait for it.
func (c *Counter) count(ctx context.Context, now time.Time, hits []hit) ([]int64, error) {
	var (
		b    strings.Builder
		args = make([]any, 0, 4*len(hits))
	)
	b.WriteString(`INSERT INTO rate_counters (counter, window_start, hits, expires_at) VALUES `)
	for i, h := range hits {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, 1, ?)")
		start := now.Truncate(h.window)
		retention := counterRetention
		if strings.HasPrefix(h.counter, "refused/") {
			retention = refusalRetention
		}
		args = append(args, h.counter, start.UnixMilli(), start.Add(h.window+retention).UnixMilli())
	}
	b.WriteString(` ON CONFLICT (counter, window_start) DO UPDATE SET hits = rate_counters.hits + 1 RETURNING counter, hits`)
	query := c.DB.Rebind(b.String())
	counts := make([]int64, len(hits))
	read := func(rows *sql.Rows) error {
		defer rows.Close()
		byCounter := make(map[string]int64, len(hits))
		for rows.Next() {
			var (
				counter string
				n       int64
			)
			if err := rows.Scan(&counter, &n); err != nil {
				return err
			}
			byCounter[counter] = n
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for i, h := range hits {
			counts[i] = byCounter[h.counter]
		}
		return nil
	}
	if c.DB.Dialect() != store.SQLite {
		rows, err := c.DB.DB().QueryContext(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		return counts, read(rows)
	}
	err := c.DB.GroupInTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		return read(rows)
	})
	return counts, err
}

// sweep deletes the rows whose windows are long over, at most every sweepEvery per replica, in
// the background: the table holds only the recent windows of the active workspaces and tokens.
func (c *Counter) sweep(now time.Time) {
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
// and when the last one was (zero when none was). The refusals a replica answered from memory
// are counted up to flushEvery later.
func (c *Counter) Recent(ctx context.Context, workspaceID string) (count int64, last time.Time, err error) {
	var lastStart sql.NullInt64
	err = c.DB.DB().QueryRowContext(ctx, c.DB.Rebind(`SELECT COALESCE(SUM(hits), 0), MAX(window_start) FROM rate_counters
		WHERE counter = ? AND window_start >= ?`), "refused/workspace/"+workspaceID, c.now().Add(-RecentWindow).UnixMilli()).Scan(&count, &lastStart)
	if lastStart.Valid {
		last = time.UnixMilli(lastStart.Int64).UTC()
	}
	return count, last, err
}
