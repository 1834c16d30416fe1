package sourceregistries

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/config"
)

// Bounds of the periodic worker.
const (
	// WorkerConcurrency is how many share groups refresh at once; the due ones beyond it wait for
	// the next evaluation.
	WorkerConcurrency = 4
	// workerListPage is the page size of the registrations list.
	workerListPage = 500
)

// Worker is the periodic refresh: every Interval (the spec's 30 seconds) it looks at the
// registrations that are enabled with refreshPolicy.periodicEnabled, decides from the persisted
// last attempt and failure count (Policy.NextAttempt) which are due, and refreshes those with
// trigger scheduled through the Refresher, so one refresh per registration runs at a time across
// replicas. Registrations that share an index URL (ShareKey) are refreshed one after the other
// and share one fetch. Every replica runs a Worker; the store's lock keeps them from doubling
// work.
type Worker struct {
	// Kube lists the registrations and writes their status.
	Kube      client.Client
	Config    *config.Config
	Refresher *Refresher
	Fetchers  func(context.Context, *platformv1.SourceRegistry) (Fetcher, error)
	// Interval between evaluations (WorkerInterval when zero; tests set it short).
	Interval time.Duration
	// Concurrency bounds the groups refreshing at once (WorkerConcurrency when zero).
	Concurrency int
	Log         logr.Logger

	mu    sync.Mutex
	busy  map[string]bool // share keys whose group is refreshing
	slots chan struct{}
	wg    sync.WaitGroup
}

// WorkerIntervalSetting is the worker's evaluation interval in seconds, 30 by default (the
// spec's); a shorter one is for tests and try-outs.
const WorkerIntervalSetting = "Platform:Sources:Registries:WorkerIntervalSeconds"

// WorkerIntervalFromConfig reads WorkerIntervalSetting: 1 to 3600 seconds.
func WorkerIntervalFromConfig(cfg *config.Config) (time.Duration, error) {
	v := strings.TrimSpace(cfg.Get(WorkerIntervalSetting))
	if v == "" {
		return WorkerInterval, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 3600 {
		return 0, fmt.Errorf("%s=%q: must be a number of seconds from 1 to 3600", WorkerIntervalSetting, v)
	}
	return time.Duration(n) * time.Second, nil
}

func (w *Worker) interval() time.Duration {
	if w.Interval > 0 {
		return w.Interval
	}
	return WorkerInterval
}

// Run evaluates at once and then every Interval until ctx ends; then it waits for the refreshes
// it started, which ctx's end cancels (an attempt canceled that way is not recorded).
func (w *Worker) Run(ctx context.Context) {
	defer w.wg.Wait()
	ticker := time.NewTicker(w.interval())
	defer ticker.Stop()
	for {
		if _, err := w.Evaluate(ctx, w.Refresher.Store.now()); err != nil && ctx.Err() == nil {
			w.Log.Error(err, "evaluating the Source registries for periodic refresh")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Wait waits for the refreshes Evaluate started.
func (w *Worker) Wait() { w.wg.Wait() }

// Evaluate starts the scheduled refreshes due at now and returns how many registrations it
// started refreshing (in the background: Wait waits for them).
func (w *Worker) Evaluate(ctx context.Context, now time.Time) (int, error) {
	regs, err := w.periodic(ctx)
	if err != nil {
		return 0, err
	}
	groups := map[string][]*platformv1.SourceRegistry{}
	var keys []string
	for _, reg := range regs {
		key := ShareKey(reg.Definition)
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], reg)
	}
	started := 0
	for _, key := range keys {
		var due []scheduled
		for _, reg := range groups[key] {
			st, err := w.Refresher.Store.State(ctx, string(reg.UID))
			if err != nil {
				return started, err
			}
			policy := PolicyOf(reg.Definition)
			if st.LastAttemptAt.IsZero() || !now.Before(policy.NextAttempt(string(reg.UID), st.LastAttemptAt, st.ConsecutiveFailures)) {
				due = append(due, scheduled{reg: reg, seen: st.LastAttemptAt})
			}
		}
		if len(due) == 0 {
			continue
		}
		var share *Share
		if len(groups[key]) > 1 {
			// Only a URL several registrations refresh is worth keeping documents for.
			share = &Share{Key: key, EvaluatedAt: now, Window: w.interval()}
		}
		if !w.start(ctx, key, due, share) {
			break // every slot is taken: the rest waits for the next evaluation
		}
		started += len(due)
	}
	return started, nil
}

type scheduled struct {
	reg  *platformv1.SourceRegistry
	seen time.Time // the last attempt the evaluation saw
}

// periodic lists the enabled registrations with periodic refresh on, by name.
func (w *Worker) periodic(ctx context.Context) ([]*platformv1.SourceRegistry, error) {
	var out []*platformv1.SourceRegistry
	token := ""
	for {
		var list platformv1.SourceRegistryList
		if err := w.Kube.List(ctx, &list, client.Limit(workerListPage), client.Continue(token)); err != nil {
			return nil, err
		}
		for i := range list.Items {
			reg := &list.Items[i]
			if Enabled(reg) && PolicyOf(reg.Definition).PeriodicEnabled && reg.DeletionTimestamp == nil {
				out = append(out, reg)
			}
		}
		if token = list.Continue; token == "" {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// start refreshes one share group's due registrations one after the other, in the background;
// false when every slot is taken. A group still refreshing from an earlier evaluation is left
// alone (true).
func (w *Worker) start(ctx context.Context, key string, due []scheduled, share *Share) bool {
	w.mu.Lock()
	if w.busy == nil {
		w.busy = map[string]bool{}
	}
	if w.slots == nil {
		n := w.Concurrency
		if n <= 0 {
			n = WorkerConcurrency
		}
		w.slots = make(chan struct{}, n)
	}
	if w.busy[key] {
		w.mu.Unlock()
		return true
	}
	select {
	case w.slots <- struct{}{}:
	default:
		w.mu.Unlock()
		return false
	}
	w.busy[key] = true
	w.wg.Add(1)
	w.mu.Unlock()
	go func() {
		defer func() {
			w.mu.Lock()
			delete(w.busy, key)
			<-w.slots
			w.mu.Unlock()
			w.wg.Done()
		}()
		for _, s := range due {
			if ctx.Err() != nil {
				return
			}
			w.refresh(ctx, s, share)
		}
	}()
	return true
}

func (w *Worker) refresh(ctx context.Context, s scheduled, share *Share) {
	log := w.Log.WithValues("registration", s.reg.Name, "uid", s.reg.UID)
	fetcher, err := w.Fetchers(ctx, s.reg)
	if err != nil {
		// The registration cannot make requests at all (a URL the client refuses): recorded like
		// any failed attempt, so that it backs off.
		fetcher = failingFetcher{err}
	}
	in := RefreshOf(s.reg, TriggerScheduled, fetcher)
	in.ScheduledAfter, in.Share = s.seen, share
	rec, _, err := w.Refresher.Run(ctx, in)
	switch {
	case errors.Is(err, ErrSuperseded), errors.Is(err, ErrRefreshInProgress):
		log.V(1).Info("scheduled refresh not needed", "reason", err.Error())
		return
	case err != nil:
		if ctx.Err() == nil {
			log.Error(err, "scheduled refresh")
		}
		return
	}
	log.V(1).Info("scheduled refresh", "outcome", rec.Outcome, "errorCode", rec.ErrorCode, "correlationId", rec.CorrelationID)
	if rec.Outcome == OutcomeFailed {
		log.Info("scheduled refresh failed; the last-known-good observation stays", "errorCode", rec.ErrorCode, "correlationId", rec.CorrelationID)
	}
	if err := WriteStatus(ctx, w.Kube, w.Config, w.Refresher.Store, s.reg, rec); err != nil && ctx.Err() == nil {
		log.Error(err, "writing the registration's status")
	}
}

// failingFetcher fails every request with err.
type failingFetcher struct{ err error }

func (f failingFetcher) FetchIndex(context.Context, string, string) (*IndexFetch, error) {
	return nil, f.err
}
func (f failingFetcher) FetchShard(context.Context, ShardRef) (*FetchedShard, error) {
	return nil, f.err
}
