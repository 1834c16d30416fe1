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
}

// Refresher runs refreshes, one at a time per registration.
type Refresher struct {
	Store *Store
	// ErrorCode is the stable code of a fetch error (registry.CodeOf); CodeUnavailable when nil
	// or empty.
	ErrorCode func(error) string

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (r *Refresher) lock(uid string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.locks == nil {
		r.locks = map[string]*sync.Mutex{}
	}
	l, ok := r.locks[uid]
	if !ok {
		l = &sync.Mutex{}
		r.locks[uid] = l
	}
	return l
}

// ErrSuperseded: a scheduled refresh found a newer attempt once it held the lock.
var ErrSuperseded = errors.New("a newer refresh ran meanwhile")

// Run refreshes one registration and records the outcome in the durable history. A failure
// keeps the last-known-good observation and counts toward the backoff; a success after failures
// is recovered; a 304 is a successful validation with no body transferred; a shard whose digest
// did not change is copied from the current observation, not fetched.
func (r *Refresher) Run(ctx context.Context, in Refresh) (RefreshRecord, []Conflict, error) {
	l := r.lock(in.RegistrationUID)
	l.Lock()
	defer l.Unlock()
	st, err := r.Store.State(ctx, in.RegistrationUID)
	if err != nil {
		return RefreshRecord{}, nil, err
	}
	if in.Trigger == TriggerScheduled && st.LastAttemptAt.After(in.ScheduledAfter) {
		return RefreshRecord{}, nil, ErrSuperseded
	}
	rec := RefreshRecord{RegistrationUID: in.RegistrationUID, Trigger: in.Trigger, CorrelationID: in.CorrelationID,
		StartedAt: r.Store.now(), RetryCount: st.ConsecutiveFailures}
	attemptCtx, cancel := context.WithTimeout(ctx, in.Policy.Timeout)
	defer cancel()
	obs, conflicts, notModified, err := r.fetch(attemptCtx, in, st)
	rec.FinishedAt = r.Store.now()
	switch {
	case err != nil:
		rec.Outcome, rec.ErrorCode = OutcomeFailed, r.codeOf(attemptCtx, err)
		if ferr := r.Store.RecordFailure(ctx, in.RegistrationUID, rec.FinishedAt); ferr != nil {
			return rec, nil, ferr
		}
	case notModified:
		rec.Outcome, rec.ObservationID, rec.Digest = OutcomeNotModified, st.CurrentObservation, st.HighestDigest
		if err := r.Store.RecordValidated(ctx, in.RegistrationUID, rec.FinishedAt); err != nil {
			return rec, nil, err
		}
	default:
		rec.Outcome, rec.ObservationID, rec.Digest = OutcomeSucceeded, obs.ID, obs.IndexDigest
		if _, err := r.Store.Cleanup(ctx, in.RegistrationUID, in.Retain); err != nil {
			return rec, conflicts, err
		}
	}
	if err == nil && st.ConsecutiveFailures > 0 {
		rec.Outcome = OutcomeRecovered
	}
	rec, aerr := r.Store.AppendRefresh(ctx, rec)
	return rec, conflicts, aerr
}

func (r *Refresher) codeOf(ctx context.Context, err error) string {
	if errors.Is(err, ErrRollback) {
		return CodeRollback
	}
	if r.ErrorCode != nil {
		if code := r.ErrorCode(err); code != "" {
			return code
		}
	}
	if ctx.Err() != nil {
		return CodeTimeout
	}
	return CodeUnavailable
}

func (r *Refresher) fetch(ctx context.Context, in Refresh, st State) (Observation, []Conflict, bool, error) {
	var current *Observation
	var currentShards map[string]Shard
	if st.CurrentObservation != "" {
		o, ok, err := r.Store.ObservationByID(ctx, st.CurrentObservation)
		if err != nil {
			return Observation{}, nil, false, err
		}
		if ok {
			current = &o
			shards, err := r.Store.Shards(ctx, o.ID)
			if err != nil {
				return Observation{}, nil, false, err
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
	idx, err := in.Fetcher.FetchIndex(ctx, etag, lastModified)
	if err != nil {
		return Observation{}, nil, false, err
	}
	if idx.NotModified {
		if current == nil {
			return Observation{}, nil, false, errors.New("a 304 answered an unconditional request")
		}
		return *current, nil, true, nil
	}
	// Refuse a rollback before fetching any shard.
	if idx.Serial < st.HighestSerial || (idx.Serial == st.HighestSerial && idx.Digest != st.HighestDigest) {
		return Observation{}, nil, false, ErrRollback
	}
	if len(idx.Shards) > MaxShardsPerObservation {
		return Observation{}, nil, false, errors.New("the index names too many shards")
	}
	var shards []Shard
	var listings []Listing
	for _, ref := range idx.Shards {
		if prev, ok := currentShards[ref.Name]; ok && prev.Digest == ref.Digest {
			shards = append(shards, prev)
			l, err := ListingsOf(prev.Document)
			if err != nil {
				return Observation{}, nil, false, err
			}
			listings = append(listings, l...)
			continue
		}
		fs, err := in.Fetcher.FetchShard(ctx, ref)
		if err != nil {
			return Observation{}, nil, false, err
		}
		shards = append(shards, Shard{Name: ref.Name, Digest: ref.Digest, Document: fs.Document})
		listings = append(listings, fs.Listings...)
	}
	obs, conflicts, err := r.Store.SaveObservation(ctx, Observation{
		RegistrationUID: in.RegistrationUID, IndexURL: in.IndexURL, Serial: idx.Serial, IndexDigest: idx.Digest,
		Index: idx.Document, ETag: idx.ETag, LastModified: idx.LastModified,
	}, shards, listings)
	return obs, conflicts, false, err
}
