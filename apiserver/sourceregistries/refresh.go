package sourceregistries

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The refresh's view of the registry v1 client (internal/registry): the index fetched
// conditionally, and shards by reference. Refresher adapts the guarded client to it, so that
// every request keeps its HTTPS, address, redirect, size and rate rules.

// IndexFetch is one index answer: a 304 (NotModified, nothing transferred) or the index.
type IndexFetch struct {
	NotModified  bool
	ETag         string
	LastModified string
	Serial       int64
	Digest       string
	Document     []byte
	Shards       []ShardRef
}

// ShardRef is a shard the index names, with its digest.
type ShardRef struct{ Name, Location, Digest string }

// FetchedShard is a shard document, checked against its digest, with what it lists.
type FetchedShard struct {
	Document []byte
	Listings []Listing
}

// Fetcher makes one registration's registry requests.
type Fetcher interface {
	FetchIndex(ctx context.Context, etag, lastModified string) (*IndexFetch, error)
	FetchShard(ctx context.Context, ref ShardRef) (*FetchedShard, error)
}

// Error codes of refreshes the service decides itself (the client's codes pass through).
const (
	CodeRollback    = "RegistryRollback"
	CodeTimeout     = "RegistryTimeout"
	CodeUnavailable = "RegistryUnavailable"
)

// Refresh is what a refresh asks for.
type Refresh struct {
	RegistrationUID string
	IndexURL        string
	Trigger         string
	Policy          Policy
	Retain          int
	CorrelationID   string
	// Fetcher makes the registration's requests.
	Fetcher Fetcher
	// ScheduledAfter, for a scheduled refresh, is the last attempt the worker saw: when the state
	// shows a newer one once the lock is held (a manual refresh ran in between), the scheduled
	// run does nothing.
	ScheduledAfter time.Time
	// Share, for a scheduled refresh, lets registrations with the same index URL (and the same
	// endpoint policy and credential) share one fetch per worker interval.
	Share *Share
}

// Share is how a scheduled refresh shares its fetch: Key groups the registrations whose
// requests are the same (ShareKey), EvaluatedAt is the worker's evaluation that found it due and
// Window the worker's interval. A complete fetch of one evaluation is reused by the
// registrations of the same key found due in that evaluation or the next (within 1.5 windows),
// instead of fetched again: "one fetch per interval".
type Share struct {
	Key         string
	EvaluatedAt time.Time
	Window      time.Duration
}

// Defaults of the refresh lock.
const (
	// LockLease is how long the store's refresh lock lasts without renewal; a running refresh
	// renews it every third of it, so a killed replica's lock lapses within one lease.
	LockLease = 30 * time.Second
	// ManualLockWait is how long a manual refresh waits for a running refresh of the same
	// registration (here or on another replica) before it is answered ErrRefreshInProgress.
	ManualLockWait = 5 * time.Second
	// lockPoll is how often a waiting manual refresh tries the store's lock again.
	lockPoll = 100 * time.Millisecond
	// maxSharedBytes bounds the documents kept for sharing, all keys together.
	maxSharedBytes = 64 << 20
)

// Refresher runs refreshes, one at a time per registration: in this process through a
// semaphore per registration, across replicas through a lease in the store (lock_holder,
// lock_until) that a running refresh renews and that lapses when its replica dies.
type Refresher struct {
	Store *Store
	// ErrorCode is the stable code of a fetch error; the registry client's (ErrorCode) when nil,
	// CodeUnavailable when it has none.
	ErrorCode func(error) string
	// Holder names this replica in the store's lock; a random id when empty.
	Holder string
	// Lease is the store lock's lease (LockLease when zero).
	Lease time.Duration
	// LockWait is how long a manual refresh waits for the lock (ManualLockWait when zero).
	LockWait time.Duration

	mu          sync.Mutex
	locks       map[string]chan struct{}
	shared      map[string]*sharedFetch
	sharedBytes int
}

// ErrSuperseded: a scheduled refresh found, once it held the lock, that a newer attempt ran or
// that the registration is not due any more (a manual refresh made it fresh).
var ErrSuperseded = errors.New("a newer refresh ran meanwhile")

// ErrRefreshInProgress: another refresh of the registration runs, in this process or on another
// replica, and did not end within the wait.
var ErrRefreshInProgress = errors.New("a refresh of this registration is already running")

func (r *Refresher) holder() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Holder == "" {
		r.Holder = newID()
	}
	return r.Holder
}

func (r *Refresher) lease() time.Duration {
	if r.Lease > 0 {
		return r.Lease
	}
	return LockLease
}

func (r *Refresher) semaphore(uid string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.locks == nil {
		r.locks = map[string]chan struct{}{}
	}
	l, ok := r.locks[uid]
	if !ok {
		l = make(chan struct{}, 1)
		r.locks[uid] = l
	}
	return l
}

// acquire takes the registration's lock in this process, then in the store: a scheduled
// refresh does not wait (another refresh does its work), a manual one waits up to LockWait.
func (r *Refresher) acquire(ctx context.Context, in Refresh) (release func(), err error) {
	wait := time.Duration(0)
	if in.Trigger != TriggerScheduled {
		if wait = r.LockWait; wait <= 0 {
			wait = ManualLockWait
		}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	sem := r.semaphore(in.RegistrationUID)
	select {
	case sem <- struct{}{}:
	default:
		if wait == 0 {
			return nil, ErrRefreshInProgress
		}
		select {
		case sem <- struct{}{}:
		case <-timer.C:
			return nil, ErrRefreshInProgress
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	holder, lease := r.holder(), r.lease()
	for {
		ok, err := r.Store.TryLock(ctx, in.RegistrationUID, holder, lease)
		if err != nil {
			<-sem
			return nil, err
		}
		if ok {
			break
		}
		if wait == 0 {
			<-sem
			return nil, ErrRefreshInProgress
		}
		select {
		case <-time.After(lockPoll):
		case <-timer.C:
			<-sem
			return nil, ErrRefreshInProgress
		case <-ctx.Done():
			<-sem
			return nil, ctx.Err()
		}
	}
	return func() {
		// Released even when ctx ended (a stop): otherwise the lock would only lapse.
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = r.Store.Unlock(unlockCtx, in.RegistrationUID, holder)
		<-sem
	}, nil
}

// renew keeps the store lock while the attempt runs; when it is lost (this replica stalled
// longer than a lease and another took over) the attempt is canceled with ErrLeaseLost.
func (r *Refresher) renew(ctx context.Context, cancel context.CancelCauseFunc, uid string) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(r.lease() / 3)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
				if err := r.Store.RenewLock(ctx, uid, r.holder(), r.lease()); errors.Is(err, ErrLeaseLost) {
					cancel(ErrLeaseLost)
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// Run refreshes one registration and records the outcome in the durable history. A failure
// keeps the last-known-good observation and counts toward the backoff; a success after failures
// is recovered; a 304 is a successful validation with no body transferred; a shard whose digest
// did not change is copied from the current observation, not fetched. A scheduled refresh that
// finds another one running, or finds under the lock that it is not due any more, does nothing
// (ErrRefreshInProgress, ErrSuperseded); a manual one waits briefly, then ErrRefreshInProgress.
// An attempt that ctx ends (the service stops) is not recorded: it is no failure of the registry.
func (r *Refresher) Run(ctx context.Context, in Refresh) (RefreshRecord, []Conflict, error) {
	release, err := r.acquire(ctx, in)
	if err != nil {
		return RefreshRecord{}, nil, err
	}
	defer release()
	st, err := r.Store.State(ctx, in.RegistrationUID)
	if err != nil {
		return RefreshRecord{}, nil, err
	}
	if in.Trigger == TriggerScheduled {
		if st.LastAttemptAt.After(in.ScheduledAfter) {
			return RefreshRecord{}, nil, ErrSuperseded
		}
		if !st.LastAttemptAt.IsZero() && r.Store.now().Before(in.Policy.NextAttempt(in.RegistrationUID, st.LastAttemptAt, st.ConsecutiveFailures)) {
			return RefreshRecord{}, nil, ErrSuperseded
		}
	}
	holder := r.holder()
	rec := RefreshRecord{RegistrationUID: in.RegistrationUID, Trigger: in.Trigger, CorrelationID: in.CorrelationID,
		StartedAt: r.Store.now(), RetryCount: st.ConsecutiveFailures}
	leaseCtx, cancelLease := context.WithCancelCause(ctx)
	defer cancelLease(nil)
	stopRenewing := r.renew(leaseCtx, cancelLease, in.RegistrationUID)
	attemptCtx, cancel := context.WithTimeout(leaseCtx, in.Policy.Timeout)
	defer cancel()
	res, err := r.fetch(attemptCtx, in, st, holder, true)
	stopRenewing()
	if errors.Is(err, ErrLeaseLost) || errors.Is(context.Cause(leaseCtx), ErrLeaseLost) {
		return RefreshRecord{}, nil, ErrLeaseLost
	}
	if err != nil && ctx.Err() != nil {
		return RefreshRecord{}, nil, ctx.Err()
	}
	rec.FinishedAt = r.Store.now()
	switch {
	case err != nil:
		rec.Outcome, rec.ErrorCode = OutcomeFailed, r.codeOf(attemptCtx, err)
		if ferr := r.Store.recordFailure(ctx, in.RegistrationUID, holder, rec.FinishedAt); ferr != nil {
			return rec, nil, ferr
		}
	case res.notModified:
		rec.Outcome, rec.ObservationID, rec.Digest = OutcomeNotModified, st.CurrentObservation, st.HighestDigest
		if err := r.Store.recordValidated(ctx, in.RegistrationUID, holder, rec.FinishedAt); err != nil {
			return rec, nil, err
		}
	default:
		rec.Outcome, rec.ObservationID, rec.Digest = OutcomeSucceeded, res.obs.ID, res.obs.IndexDigest
		if _, err := r.Store.Cleanup(ctx, in.RegistrationUID, in.Retain); err != nil {
			return rec, res.conflicts, err
		}
	}
	if err == nil {
		r.remember(in.Share, res.share)
		if st.ConsecutiveFailures > 0 {
			rec.Outcome = OutcomeRecovered
		}
	}
	rec, aerr := r.Store.AppendRefresh(ctx, rec)
	return rec, res.conflicts, aerr
}

func (r *Refresher) codeOf(ctx context.Context, err error) string {
	if errors.Is(err, ErrRollback) {
		return CodeRollback
	}
	codeOf := r.ErrorCode
	if codeOf == nil {
		codeOf = ErrorCode
	}
	if code := codeOf(err); code != "" {
		return code
	}
	if ctx.Err() != nil {
		return CodeTimeout
	}
	return CodeUnavailable
}

// fetched is what one attempt got: a new observation, or a validation of the current one; and
// the complete documents it saw, for other registrations of the same share key.
type fetched struct {
	obs         Observation
	conflicts   []Conflict
	notModified bool
	share       *sharedFetch
}

func (r *Refresher) fetch(ctx context.Context, in Refresh, st State, holder string, mayShare bool) (fetched, error) {
	var current *Observation
	var currentShards map[string]Shard
	if st.CurrentObservation != "" {
		o, ok, err := r.Store.ObservationByID(ctx, st.CurrentObservation)
		if err != nil {
			return fetched{}, err
		}
		if ok {
			current = &o
			shards, err := r.Store.Shards(ctx, o.ID)
			if err != nil {
				return fetched{}, err
			}
			currentShards = map[string]Shard{}
			for _, sh := range shards {
				currentShards[sh.Name] = sh
			}
		}
	}
	var etag, lastModified string
	if current != nil && current.IndexURL == in.IndexURL {
		etag, lastModified = current.ETag, current.LastModified
	}
	var idx *IndexFetch
	var sharedShards map[string][]byte
	if s := r.sharedFor(in.Share); s != nil && mayShare {
		idx, sharedShards = s.index, s.shards
		if current != nil && current.IndexURL == in.IndexURL && current.IndexDigest == idx.Digest {
			// The shared fetch saw the index this registration has: a validation, nothing new.
			return fetched{obs: *current, notModified: true}, nil
		}
	} else {
		var err error
		if idx, err = in.Fetcher.FetchIndex(ctx, etag, lastModified); err != nil {
			return fetched{}, err
		}
	}
	if idx.NotModified {
		if current == nil {
			return fetched{}, errors.New("a 304 answered an unconditional request")
		}
		return fetched{obs: *current, notModified: true, share: shareOf(current, currentShards)}, nil
	}
	// Refuse a rollback before fetching any shard.
	if idx.Serial < st.HighestSerial || (idx.Serial == st.HighestSerial && idx.Digest != st.HighestDigest) {
		return fetched{}, ErrRollback
	}
	if len(idx.Shards) > MaxShardsPerObservation {
		return fetched{}, errors.New("the index names too many shards")
	}
	var shards []Shard
	var listings []Listing
	for _, ref := range idx.Shards {
		var doc []byte
		if prev, ok := currentShards[ref.Name]; ok && prev.Digest == ref.Digest {
			doc = prev.Document
		} else if sharedShards != nil {
			if doc = sharedShards[ref.Name+"\x00"+ref.Digest]; doc == nil {
				// Not in what was shared (it cannot be: only complete fetches are): fetch it all.
				return r.fetch(ctx, in, st, holder, false)
			}
		}
		if doc != nil {
			shards = append(shards, Shard{Name: ref.Name, Digest: ref.Digest, Document: doc})
			l, err := ListingsOf(doc)
			if err != nil {
				return fetched{}, err
			}
			listings = append(listings, l...)
			continue
		}
		fs, err := in.Fetcher.FetchShard(ctx, ref)
		if err != nil {
			return fetched{}, err
		}
		shards = append(shards, Shard{Name: ref.Name, Digest: ref.Digest, Document: fs.Document})
		listings = append(listings, fs.Listings...)
	}
	obs, conflicts, err := r.Store.saveObservation(ctx, holder, Observation{
		RegistrationUID: in.RegistrationUID, IndexURL: in.IndexURL, Serial: idx.Serial, IndexDigest: idx.Digest,
		Index: idx.Document, ETag: idx.ETag, LastModified: idx.LastModified,
	}, shards, listings)
	if err != nil {
		return fetched{}, err
	}
	if sharedShards != nil {
		// Reused, not fetched: offering it again would keep an old fetch alive past its window.
		return fetched{obs: obs, conflicts: conflicts}, nil
	}
	share := &sharedFetch{index: idx, shards: map[string][]byte{}}
	for _, sh := range shards {
		share.shards[sh.Name+"\x00"+sh.Digest] = sh.Document
	}
	return fetched{obs: obs, conflicts: conflicts, share: share}, nil
}
