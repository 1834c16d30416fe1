package sourceregistries

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"platform.dev/platform/apiserver/store"
)

// Bounds of what the store keeps and reads: one observation's documents are bounded by the
// registry v1 contract's byte limits (the fetcher reads no more); these bound the rows.
const (
	// MaxShardsPerObservation is the contract's shard count bound.
	MaxShardsPerObservation = 256
	// MaxHistoryPage is the most refresh records one read returns.
	MaxHistoryPage = 100
	// DefaultRetainedObservations is cachePolicy.retainedObservations when omitted.
	DefaultRetainedObservations = 3
	// MaxRetainedObservations is the kind's maximum of retainedObservations.
	MaxRetainedObservations = 100
	// maxErrorCode and maxCorrelationID bound the free-standing strings of a record.
	maxErrorCode     = 128
	maxCorrelationID = 128
)

// Refresh outcomes and triggers, as the SourceRegistry kind spells them.
const (
	OutcomeSucceeded   = "succeeded"
	OutcomeNotModified = "notModified"
	OutcomeRecovered   = "recovered"
	OutcomeFailed      = "failed"
	TriggerManual      = "manual"
	TriggerScheduled   = "scheduled"
)

// ErrRollback: an index whose serial is lower than the highest seen for the registration, or
// equal with another digest. The last-known-good observation is kept.
var ErrRollback = errors.New("the index's serial is lower than the highest seen, or equal with another digest (rollback refused)")

// Store keeps the registry cache, the refresh history and the integrity records in the SQL store.
type Store struct {
	DB *store.Store
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// RefreshRecord is one durable, immutable refresh history record.
type RefreshRecord struct {
	ID              string
	RegistrationUID string
	Trigger         string
	Outcome         string
	StartedAt       time.Time
	FinishedAt      time.Time
	RetryCount      int
	CorrelationID   string
	Digest          string
	ObservationID   string
	ErrorCode       string
}

// Duration is how long the refresh took.
func (r RefreshRecord) Duration() time.Duration { return r.FinishedAt.Sub(r.StartedAt) }

// AppendRefresh appends rec to the history (it is never updated or deleted) and returns it with
// its id.
func (s *Store) AppendRefresh(ctx context.Context, rec RefreshRecord) (RefreshRecord, error) {
	if rec.ID == "" {
		rec.ID = newID()
	}
	if len(rec.ErrorCode) > maxErrorCode {
		rec.ErrorCode = rec.ErrorCode[:maxErrorCode]
	}
	if len(rec.CorrelationID) > maxCorrelationID {
		rec.CorrelationID = rec.CorrelationID[:maxCorrelationID]
	}
	_, err := s.DB.DB().ExecContext(ctx, s.DB.Rebind(`INSERT INTO registry_refreshes
		(id, registration_uid, trigger_kind, outcome, started_at, finished_at, duration_ms, retry_count, correlation_id, digest, observation_id, error_code)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		rec.ID, rec.RegistrationUID, rec.Trigger, rec.Outcome, millis(rec.StartedAt), millis(rec.FinishedAt),
		rec.Duration().Milliseconds(), rec.RetryCount, rec.CorrelationID, rec.Digest, rec.ObservationID, rec.ErrorCode)
	if err != nil {
		return rec, fmt.Errorf("recording a registry refresh: %w", err)
	}
	return rec, nil
}

// Refreshes is a page of a registration's refresh history, newest first; take is at most
// MaxHistoryPage.
func (s *Store) Refreshes(ctx context.Context, registrationUID string, skip, take int) ([]RefreshRecord, error) {
	if take <= 0 || take > MaxHistoryPage {
		take = MaxHistoryPage
	}
	skip = max(skip, 0)
	rows, err := s.DB.DB().QueryContext(ctx, s.DB.Rebind(`SELECT id, registration_uid, trigger_kind, outcome, started_at, finished_at,
		retry_count, correlation_id, digest, observation_id, error_code
		FROM registry_refreshes WHERE registration_uid = ? ORDER BY id DESC LIMIT ? OFFSET ?`), registrationUID, take, skip)
	if err != nil {
		return nil, fmt.Errorf("reading the refresh history: %w", err)
	}
	defer rows.Close()
	var out []RefreshRecord
	for rows.Next() {
		var r RefreshRecord
		var started, finished int64
		if err := rows.Scan(&r.ID, &r.RegistrationUID, &r.Trigger, &r.Outcome, &started, &finished,
			&r.RetryCount, &r.CorrelationID, &r.Digest, &r.ObservationID, &r.ErrorCode); err != nil {
			return nil, err
		}
		r.StartedAt, r.FinishedAt = fromMillis(started), fromMillis(finished)
		out = append(out, r)
	}
	return out, rows.Err()
}

// State is what the store keeps per registration beside its observations.
type State struct {
	CurrentObservation  string
	HighestSerial       int64
	HighestDigest       string
	LastAttemptAt       time.Time
	LastSuccessAt       time.Time
	ConsecutiveFailures int
}

// State reads a registration's state; a registration never refreshed has the zero State with
// HighestSerial -1.
func (s *Store) State(ctx context.Context, registrationUID string) (State, error) {
	return s.state(ctx, s.DB.DB(), registrationUID)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) state(ctx context.Context, q queryer, uid string) (State, error) {
	st := State{HighestSerial: -1}
	var attempt, success int64
	err := q.QueryRowContext(ctx, s.DB.Rebind(`SELECT current_observation, highest_serial, highest_digest, last_attempt_at, last_success_at, consecutive_failures
		FROM registry_states WHERE registration_uid = ?`), uid).
		Scan(&st.CurrentObservation, &st.HighestSerial, &st.HighestDigest, &attempt, &success, &st.ConsecutiveFailures)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading a registry's state: %w", err)
	}
	st.LastAttemptAt, st.LastSuccessAt = fromMillis(attempt), fromMillis(success)
	return st, nil
}

func (s *Store) ensureState(ctx context.Context, tx *sql.Tx, uid string) error {
	_, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO registry_states (registration_uid) VALUES (?) ON CONFLICT (registration_uid) DO NOTHING`), uid)
	return err
}

// RecordFailure counts a failed attempt at time at; the last-known-good observation stays.
func (s *Store) RecordFailure(ctx context.Context, registrationUID string, at time.Time) error {
	return s.recordFailure(ctx, registrationUID, "", at)
}

// recordFailure is RecordFailure by holder of the refresh lock ("" for none).
func (s *Store) recordFailure(ctx context.Context, registrationUID, holder string, at time.Time) error {
	return s.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.ensureState(ctx, tx, registrationUID); err != nil {
			return err
		}
		if err := s.holds(ctx, tx, registrationUID, holder); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE registry_states SET last_attempt_at = ?, consecutive_failures = consecutive_failures + 1
			WHERE registration_uid = ?`), millis(at), registrationUID)
		return err
	})
}

// RecordValidated records a successful validation (HTTP 304) of the current observation.
func (s *Store) RecordValidated(ctx context.Context, registrationUID string, at time.Time) error {
	return s.recordValidated(ctx, registrationUID, "", at)
}

// recordValidated is RecordValidated by holder of the refresh lock ("" for none).
func (s *Store) recordValidated(ctx context.Context, registrationUID, holder string, at time.Time) error {
	return s.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.ensureState(ctx, tx, registrationUID); err != nil {
			return err
		}
		if err := s.holds(ctx, tx, registrationUID, holder); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE registry_states SET last_attempt_at = ?, last_success_at = ?, consecutive_failures = 0
			WHERE registration_uid = ?`), millis(at), millis(at), registrationUID); err != nil {
			return err
		}
		st, err := s.state(ctx, tx, registrationUID)
		if err != nil || st.CurrentObservation == "" {
			return err
		}
		_, err = tx.ExecContext(ctx, s.DB.Rebind(`UPDATE registry_observations SET validated_at = ? WHERE id = ?`), millis(at), st.CurrentObservation)
		return err
	})
}

// Observation is one complete cached index of a registration.
type Observation struct {
	ID              string
	RegistrationUID string
	IndexURL        string
	Serial          int64
	IndexDigest     string
	Index           []byte
	ETag            string
	LastModified    string
	FetchedAt       time.Time
	ValidatedAt     time.Time
}

// Shard is one cached shard document of an observation.
type Shard struct {
	Name     string
	Digest   string
	Document []byte
}

// Listing is one publisher/Source/version an observation lists, for the first-seen record.
type Listing struct {
	Publisher, Source, Version, ManifestDigest string
}

// Conflict is a listing whose manifest digest differs from the first one seen for it.
type Conflict struct {
	Listing
	FirstSeen FirstSeen
}

// FirstSeen is the append-only first-seen record of a publisher/Source/version.
type FirstSeen struct {
	ManifestDigest  string
	RegistrationUID string
	ObservationID   string
	At              time.Time
}

// SaveObservation stores a complete observation and makes it the registration's current one, in
// one transaction: it refuses a rollback (ErrRollback: a serial lower than the highest seen, or
// equal with another digest), records the first digest seen of every listing (kept forever) and
// returns the listings whose digest differs from their first seen one. A conflict is blocking
// for imports, not for the observation: both stay visible.
func (s *Store) SaveObservation(ctx context.Context, obs Observation, shards []Shard, listings []Listing) (Observation, []Conflict, error) {
	return s.saveObservation(ctx, "", obs, shards, listings)
}

// saveObservation is SaveObservation by holder of the refresh lock ("" for none).
func (s *Store) saveObservation(ctx context.Context, holder string, obs Observation, shards []Shard, listings []Listing) (Observation, []Conflict, error) {
	if len(shards) > MaxShardsPerObservation {
		return obs, nil, fmt.Errorf("an observation holds at most %d shards", MaxShardsPerObservation)
	}
	if obs.ID == "" {
		obs.ID = newID()
	}
	now := s.now()
	if obs.FetchedAt.IsZero() {
		obs.FetchedAt = now
	}
	if obs.ValidatedAt.IsZero() {
		obs.ValidatedAt = obs.FetchedAt
	}
	var conflicts []Conflict
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		conflicts = nil
		if err := s.ensureState(ctx, tx, obs.RegistrationUID); err != nil {
			return err
		}
		if err := s.holds(ctx, tx, obs.RegistrationUID, holder); err != nil {
			return err
		}
		st, err := s.state(ctx, tx, obs.RegistrationUID)
		if err != nil {
			return err
		}
		if obs.Serial < st.HighestSerial || (obs.Serial == st.HighestSerial && obs.IndexDigest != st.HighestDigest) {
			return ErrRollback
		}
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO registry_observations
			(id, registration_uid, index_url, serial, index_digest, index_document, etag, last_modified, fetched_at, validated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			obs.ID, obs.RegistrationUID, obs.IndexURL, obs.Serial, obs.IndexDigest, obs.Index, obs.ETag, obs.LastModified,
			millis(obs.FetchedAt), millis(obs.ValidatedAt)); err != nil {
			return err
		}
		for _, sh := range shards {
			if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO registry_observation_shards (observation_id, name, digest, document) VALUES (?, ?, ?, ?)`),
				obs.ID, sh.Name, sh.Digest, sh.Document); err != nil {
				return err
			}
		}
		for _, l := range listings {
			if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO registry_first_seen
				(publisher, source, version, manifest_digest, registration_uid, observation_id, first_seen_at)
				VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (publisher, source, version) DO NOTHING`),
				l.Publisher, l.Source, l.Version, l.ManifestDigest, obs.RegistrationUID, obs.ID, millis(now)); err != nil {
				return err
			}
			first, err := s.firstSeen(ctx, tx, l.Publisher, l.Source, l.Version)
			if err != nil {
				return err
			}
			if first.ManifestDigest != l.ManifestDigest {
				conflicts = append(conflicts, Conflict{Listing: l, FirstSeen: first})
			}
		}
		_, err = tx.ExecContext(ctx, s.DB.Rebind(`UPDATE registry_states SET current_observation = ?, highest_serial = ?, highest_digest = ?,
			last_attempt_at = ?, last_success_at = ?, consecutive_failures = 0 WHERE registration_uid = ?`),
			obs.ID, obs.Serial, obs.IndexDigest, millis(now), millis(obs.ValidatedAt), obs.RegistrationUID)
		return err
	})
	return obs, conflicts, err
}

// FirstSeenOf is the first-seen record of a publisher/Source/version; ok is false when none.
func (s *Store) FirstSeenOf(ctx context.Context, publisher, source, version string) (FirstSeen, bool, error) {
	f, err := s.firstSeen(ctx, s.DB.DB(), publisher, source, version)
	if errors.Is(err, sql.ErrNoRows) {
		return f, false, nil
	}
	return f, err == nil, err
}

func (s *Store) firstSeen(ctx context.Context, q queryer, publisher, source, version string) (FirstSeen, error) {
	var f FirstSeen
	var at int64
	err := q.QueryRowContext(ctx, s.DB.Rebind(`SELECT manifest_digest, registration_uid, observation_id, first_seen_at
		FROM registry_first_seen WHERE publisher = ? AND source = ? AND version = ?`), publisher, source, version).
		Scan(&f.ManifestDigest, &f.RegistrationUID, &f.ObservationID, &at)
	f.At = fromMillis(at)
	return f, err
}

// ObservationByID reads one observation; ok is false when it is missing or was evicted.
func (s *Store) ObservationByID(ctx context.Context, id string) (Observation, bool, error) {
	var o Observation
	var fetched, validated int64
	err := s.DB.DB().QueryRowContext(ctx, s.DB.Rebind(`SELECT id, registration_uid, index_url, serial, index_digest, index_document, etag, last_modified, fetched_at, validated_at
		FROM registry_observations WHERE id = ?`), id).
		Scan(&o.ID, &o.RegistrationUID, &o.IndexURL, &o.Serial, &o.IndexDigest, &o.Index, &o.ETag, &o.LastModified, &fetched, &validated)
	if errors.Is(err, sql.ErrNoRows) {
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("reading an observation: %w", err)
	}
	o.FetchedAt, o.ValidatedAt = fromMillis(fetched), fromMillis(validated)
	return o, true, nil
}

// Shards are the shards of an observation, by name.
func (s *Store) Shards(ctx context.Context, observationID string) ([]Shard, error) {
	rows, err := s.DB.DB().QueryContext(ctx, s.DB.Rebind(`SELECT name, digest, document FROM registry_observation_shards
		WHERE observation_id = ? ORDER BY name LIMIT ?`), observationID, MaxShardsPerObservation)
	if err != nil {
		return nil, fmt.Errorf("reading an observation's shards: %w", err)
	}
	defer rows.Close()
	var out []Shard
	for rows.Next() {
		var sh Shard
		if err := rows.Scan(&sh.Name, &sh.Digest, &sh.Document); err != nil {
			return nil, err
		}
		out = append(out, sh)
	}
	return out, rows.Err()
}

// Cleanup deletes the registration's oldest observations beyond retain (bounded to 1..100),
// never the current one; the refresh history is never deleted. It returns how many it deleted.
func (s *Store) Cleanup(ctx context.Context, registrationUID string, retain int) (int, error) {
	retain = min(max(retain, 1), MaxRetainedObservations)
	deleted := 0
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		deleted = 0
		st, err := s.state(ctx, tx, registrationUID)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, s.DB.Rebind(`SELECT id FROM registry_observations WHERE registration_uid = ? AND id <> ?
			ORDER BY fetched_at DESC, id DESC LIMIT ? OFFSET ?`), registrationUID, st.CurrentObservation, 1000, retain-1)
		if err != nil {
			return err
		}
		ids, err := store.Strings(rows)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, s.DB.Rebind(`DELETE FROM registry_observation_shards WHERE observation_id = ?`), id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.DB.Rebind(`DELETE FROM registry_observations WHERE id = ?`), id); err != nil {
				return err
			}
			deleted++
		}
		return nil
	})
	return deleted, err
}

// ErrLeaseLost: the refresh lock of a registration lapsed and another holder took it, so what
// this holder fetched is not written.
var ErrLeaseLost = errors.New("the registration's refresh lock was lost to another replica")

// TryLock takes the refresh lock of a registration for holder until now+lease, unless another
// holder has it and its lease has not expired (a killed replica's lock lapses that way). It
// reports whether holder has the lock. The lock lives in the store, so it serializes the
// refreshes of every replica that shares it.
func (s *Store) TryLock(ctx context.Context, registrationUID, holder string, lease time.Duration) (bool, error) {
	now := s.now()
	var taken bool
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.ensureState(ctx, tx, registrationUID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE registry_states SET lock_holder = ?, lock_until = ?
			WHERE registration_uid = ? AND (lock_holder = '' OR lock_holder = ? OR lock_until < ?)`),
			holder, millis(now.Add(lease)), registrationUID, holder, millis(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		taken = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("taking a registry's refresh lock: %w", err)
	}
	return taken, nil
}

// RenewLock extends holder's lock to now+lease; ErrLeaseLost when holder no longer has it.
func (s *Store) RenewLock(ctx context.Context, registrationUID, holder string, lease time.Duration) error {
	now := s.now()
	res, err := s.DB.DB().ExecContext(ctx, s.DB.Rebind(`UPDATE registry_states SET lock_until = ?
		WHERE registration_uid = ? AND lock_holder = ? AND lock_until >= ?`), millis(now.Add(lease)), registrationUID, holder, millis(now))
	if err != nil {
		return fmt.Errorf("renewing a registry's refresh lock: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(ErrLeaseLost, err)
	}
	return nil
}

// Unlock releases holder's lock; a lock another holder took meanwhile stays.
func (s *Store) Unlock(ctx context.Context, registrationUID, holder string) error {
	_, err := s.DB.DB().ExecContext(ctx, s.DB.Rebind(`UPDATE registry_states SET lock_holder = '', lock_until = 0
		WHERE registration_uid = ? AND lock_holder = ?`), registrationUID, holder)
	if err != nil {
		return fmt.Errorf("releasing a registry's refresh lock: %w", err)
	}
	return nil
}

// LockHolder is who holds a registration's refresh lock and until when; "" when nobody does or
// the lease expired.
func (s *Store) LockHolder(ctx context.Context, registrationUID string) (string, time.Time, error) {
	var holder string
	var until int64
	err := s.DB.DB().QueryRowContext(ctx, s.DB.Rebind(`SELECT lock_holder, lock_until FROM registry_states WHERE registration_uid = ?`), registrationUID).
		Scan(&holder, &until)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (holder == "" || until < millis(s.now()))) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("reading a registry's refresh lock: %w", err)
	}
	return holder, fromMillis(until), nil
}

// holds checks, inside a write's transaction, that holder still has the registration's lock:
// a replica whose lease lapsed (it stalled, and another took over) must not write its result.
// It is an UPDATE so that it locks the row (PostgreSQL): a TryLock of another replica waits for
// this write's commit instead of slipping in between.
func (s *Store) holds(ctx context.Context, tx *sql.Tx, registrationUID, holder string) error {
	if holder == "" {
		return nil
	}
	res, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE registry_states SET lock_holder = lock_holder WHERE registration_uid = ? AND lock_holder = ?`),
		registrationUID, holder)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(ErrLeaseLost, err)
	}
	return nil
}
