package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"platform.dev/platform/apiserver/store"
)

// Principal kinds and statuses.
const (
	KindHuman    = "Human"
	KindWorkload = "Workload"

	StatusActive   = "Active"
	StatusDisabled = "Disabled"
)

// Lockout and session policy. Five wrong passwords in a row lock the account for fifteen minutes
// (the counter restarts after the lockout); a session lasts twelve hours from login and is not
// extended by use.
const (
	DefaultMaxFailedAttempts = 5
	DefaultLockoutDuration   = 15 * time.Minute
	DefaultSessionLifetime   = 12 * time.Hour

	// lastSeenResolution bounds how often Authenticate writes last_seen_at.
	lastSeenResolution = time.Minute
	maxUsernameLength  = 64
)

// indefinitely is the lockout end of a disabled account.
var indefinitely = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Errors of the account API. Callers that answer anonymous requests should not tell
// ErrInvalidCredentials, ErrLockedOut and ErrAccountDisabled apart in what they show.
var (
	ErrInvalidCredentials = errors.New("identity: invalid username or password")
	ErrLockedOut          = errors.New("identity: the account is locked out")
	ErrAccountDisabled    = errors.New("identity: the account is disabled")
	ErrUnauthenticated    = errors.New("identity: no valid session")
	ErrUsernameTaken      = errors.New("identity: the username is taken")
	ErrInvalidUsername    = errors.New("identity: a username is 1 to 64 characters without control characters or surrounding spaces")
	ErrNotFound           = errors.New("identity: no such account")
)

// Principal is an identity that can act: a human or a workload. It holds no credential.
type Principal struct {
	ID          string
	Kind        string
	DisplayName string
	Email       string // empty when none
	Status      string
	CreatedAt   time.Time
}

// LocalAccount is the username-and-password credential of a human Principal.
type LocalAccount struct {
	AccountID   string
	PrincipalID string
	Username    string
	CreatedAt   time.Time
}

// NewLocalAccount is the input of CreateLocalAccount.
type NewLocalAccount struct {
	Username    string
	Password    string
	DisplayName string // the username when empty
	Email       string // optional
}

// Session is a signed-in session. Token is the secret the client presents (the cookie value);
// it is returned once and only its SHA-256 digest is stored.
type Session struct {
	Token       string
	PrincipalID string
	AccountID   string
	ExpiresAt   time.Time
}

// Service is the local-account core of the identity plane: accounts, password verification with
// failed-attempt counting and lockout, security stamps and server-side sessions, each change
// audited in its own transaction.
//
// Who may call what is mostly the caller's concern. Disable and Enable change the account as
// asked; SetLocalAccountStatus, GrantPlatformAdministrator and RevokePlatformAdministrator are
// the administration entry points that also enforce the Platform administrator rules (the caller
// is an active Platform administrator, does not disable or revoke itself, and does not disable or
// revoke the last active administrator) in the transaction of the change.
type Service struct {
	Store *store.Store
	// Clock is the time source; time.Now when nil. Tests inject it.
	Clock func() time.Time
	Audit Audit

	// Zero values select the defaults above.
	MaxFailedAttempts int
	LockoutDuration   time.Duration
	SessionLifetime   time.Duration

	// administration serializes, in this process, the mutations that the Platform administrator
	// rules guard (grant, revoke, account status), as the spec asks; their transactions also take
	// a database lock, for other processes on the same database (see lockFor).
	administration sync.Mutex
	// memberships serializes the membership mutations that the final-Owner rule guards.
	memberships sync.Mutex
	// externalMu serializes the link changes of this process (see UnlinkExternalIdentity).
	externalMu sync.Mutex
	// cache keeps resolved callers under the identity generation (see cache.go).
	cache resolutions
}

// New returns a Service over s with the default policy and its Audit on the same store. A Service
// built by hand needs Audit.Store set for Audit.Latest.
func New(s *store.Store) *Service {
	return &Service{Store: s, Audit: Audit{Store: s}}
}

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

// RecordAudit appends e, in a transaction of its own, to the security audit records.
func (s *Service) RecordAudit(ctx context.Context, e Event) error {
	return s.audit().RecordAlone(ctx, e)
}

// audit returns the Audit of the Service, defaulting its store and clock to the Service's
// without modifying the Service (it is used concurrently).
func (s *Service) audit() *Audit {
	a := s.Audit
	if a.Store == nil {
		a.Store = s.Store
	}
	if a.Clock == nil {
		a.Clock = s.now
	}
	return &a
}

func (s *Service) maxFailed() int {
	if s.MaxFailedAttempts > 0 {
		return s.MaxFailedAttempts
	}
	return DefaultMaxFailedAttempts
}

func (s *Service) lockout() time.Duration {
	if s.LockoutDuration > 0 {
		return s.LockoutDuration
	}
	return DefaultLockoutDuration
}

func (s *Service) lifetime() time.Duration {
	if s.SessionLifetime > 0 {
		return s.SessionLifetime
	}
	return DefaultSessionLifetime
}

func (s *Service) q(query string) string { return s.Store.Rebind(query) }

// NormalizeUsername returns the form in which usernames are compared and stored unique:
// NFC, then Unicode case folding. It rejects empty, over-long, control-character and
// whitespace-padded names.
func NormalizeUsername(username string) (string, error) {
	if username == "" || utf8.RuneCountInString(username) > maxUsernameLength || !utf8.ValidString(username) ||
		strings.TrimSpace(username) != username {
		return "", ErrInvalidUsername
	}
	for _, r := range username {
		if unicode.IsControl(r) {
			return "", ErrInvalidUsername
		}
	}
	return cases.Fold().String(norm.NFC.String(username)), nil
}

func newID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// newToken returns a session token of 256 random bits and the hex SHA-256 digest stored for it.
func newToken() (token, digest string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, tokenDigest(token)
}

func tokenDigest(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

// CreateLocalAccount creates an active human Principal and its local account. actorID is the
// Principal that creates it (empty during bootstrap). The password must meet ValidatePassword.
func (s *Service) CreateLocalAccount(ctx context.Context, actorID string, in NewLocalAccount) (LocalAccount, Principal, error) {
	acct, p, normalized, hash, err := s.newLocalAccount(in)
	if err != nil {
		return LocalAccount{}, Principal{}, err
	}
	err = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.insertLocalAccount(ctx, tx, p, acct, normalized, hash); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionLocalAccountCreated, Outcome: OutcomeSuccess, ActorID: actorID, TargetID: p.ID})
	})
	if err != nil {
		return LocalAccount{}, Principal{}, fmt.Errorf("create local account: %w", err)
	}
	return acct, p, nil
}

// newLocalAccount checks in and prepares the rows of a new account: the account and its active
// human Principal, the normalized username and the password hash.
func (s *Service) newLocalAccount(in NewLocalAccount) (acct LocalAccount, p Principal, normalized, hash string, err error) {
	if normalized, err = NormalizeUsername(in.Username); err != nil {
		return
	}
	if err = ValidatePassword(in.Password); err != nil {
		return
	}
	if hash, err = HashPassword(in.Password); err != nil {
		return
	}
	now := s.now()
	p = Principal{ID: newID(), Kind: KindHuman, DisplayName: in.DisplayName, Email: in.Email, Status: StatusActive, CreatedAt: now}
	if p.DisplayName == "" {
		p.DisplayName = in.Username
	}
	acct = LocalAccount{AccountID: newID(), PrincipalID: p.ID, Username: in.Username, CreatedAt: now}
	return acct, p, normalized, hash, nil
}

// insertLocalAccount stores a new Principal and its local account in tx, refusing a taken
// username.
func (s *Service) insertLocalAccount(ctx context.Context, tx *sql.Tx, p Principal, acct LocalAccount, normalized, hash string) error {
	var taken int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM local_accounts WHERE normalized_username = ?`), normalized).Scan(&taken); err != nil {
		return err
	}
	if taken > 0 {
		return ErrUsernameTaken
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO principals (id, kind, display_name, email, status, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
		p.ID, p.Kind, p.DisplayName, nullString(p.Email), p.Status, p.CreatedAt); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO local_accounts (account_id, principal_id, username, normalized_username,
		password_hash, security_stamp, failed_attempts, lockout_end, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, NULL, ?, ?)`),
		acct.AccountID, p.ID, acct.Username, normalized, hash, newID(), acct.CreatedAt, acct.CreatedAt)
	return err
}

// accountRow is what the account operations read of an account and its Principal.
type accountRow struct {
	accountID, principalID, passwordHash, stamp, status string
	failedAttempts                                      int
	lockoutEnd                                          sql.NullTime
}

func (r accountRow) disabled() bool {
	return r.status != StatusActive || (r.lockoutEnd.Valid && !r.lockoutEnd.Time.Before(indefinitely))
}

func (r accountRow) lockedAt(now time.Time) bool {
	return r.lockoutEnd.Valid && r.lockoutEnd.Time.After(now)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const accountColumns = `a.account_id, a.principal_id, a.password_hash, a.security_stamp, p.status, a.failed_attempts, a.lockout_end
	FROM local_accounts a JOIN principals p ON p.id = a.principal_id`

func (s *Service) readAccount(ctx context.Context, db queryer, where string, arg any) (accountRow, error) {
	var r accountRow
	err := db.QueryRowContext(ctx, s.q(`SELECT `+accountColumns+` WHERE `+where), arg).
		Scan(&r.accountID, &r.principalID, &r.passwordHash, &r.stamp, &r.status, &r.failedAttempts, &r.lockoutEnd)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	return r, err
}

var (
	dummyHashOnce sync.Once
	dummyHash     string
)

// burnVerification spends the time of a password verification so that an unknown username
// answers as slowly as a wrong password.
func burnVerification(password string) {
	dummyHashOnce.Do(func() { dummyHash, _ = HashPassword("unused-Dummy-0") })
	_, _ = VerifyPassword(dummyHash, password)
}

// Login verifies username and password and opens a session. A wrong password counts a failed
// attempt; the MaxFailedAttempts-th in a row locks the account for LockoutDuration and restarts
// the count. A locked or disabled account is refused without looking at the password. Success
// resets the count and the lockout. Every attempt is audited as local-account.login with
// success or failure; the record names the Principal (never the username), and none for an
// unknown username.
func (s *Service) Login(ctx context.Context, username, password string) (Session, Principal, error) {
	fail := func(targetID, reason string, result error) (Session, Principal, error) {
		err := s.Store.InTx(ctx, func(tx *sql.Tx) error {
			return s.audit().Record(ctx, tx, Event{Action: ActionLocalAccountLogin, Outcome: OutcomeFailure, TargetID: targetID, ReasonCode: reason})
		})
		return Session{}, Principal{}, errors.Join(result, err)
	}
	normalized, err := NormalizeUsername(username)
	if err != nil {
		burnVerification(password)
		return fail("", "invalid-credentials", ErrInvalidCredentials)
	}
	acct, err := s.readAccount(ctx, s.Store.DB(), `a.normalized_username = ?`, normalized)
	if errors.Is(err, ErrNotFound) {
		burnVerification(password)
		return fail("", "invalid-credentials", ErrInvalidCredentials)
	}
	if err != nil {
		return Session{}, Principal{}, err
	}
	// The hash is verified before any refusal, also of a disabled or locked account, so that every
	// refusal costs the same work and its timing tells nothing about the account. It is verified
	// outside the transaction: argon2 takes tens of milliseconds and SQLite would hold its write
	// lock meanwhile. The transaction re-reads the account.
	ok, err := VerifyPassword(acct.passwordHash, password)
	if err != nil {
		return Session{}, Principal{}, err
	}
	if acct.disabled() {
		return fail(acct.principalID, "account-disabled", ErrAccountDisabled)
	}
	if acct.lockedAt(s.now()) {
		return fail(acct.principalID, "locked-out", ErrLockedOut)
	}
	var rehash string
	if ok && NeedsRehash(acct.passwordHash) {
		rehash, _ = HashPassword(password)
	}

	var (
		sess    Session
		outcome error
	)
	err = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		sess, outcome = Session{}, nil
		now := s.now()
		cur, err := s.readAccount(ctx, tx, `a.account_id = ?`, acct.accountID)
		if err != nil {
			return err
		}
		record := func(outcomeName, actor, reason string) error {
			return s.audit().Record(ctx, tx, Event{Action: ActionLocalAccountLogin, Outcome: outcomeName, ActorID: actor, TargetID: cur.principalID, ReasonCode: reason})
		}
		switch {
		case cur.disabled():
			outcome = ErrAccountDisabled
			return record(OutcomeFailure, "", "account-disabled")
		case cur.lockedAt(now):
			outcome = ErrLockedOut
			return record(OutcomeFailure, "", "locked-out")
		case !ok || cur.passwordHash != acct.passwordHash:
			outcome = ErrInvalidCredentials
			var failed int
			if err := tx.QueryRowContext(ctx, s.q(`UPDATE local_accounts SET failed_attempts = failed_attempts + 1, updated_at = ?
				WHERE account_id = ? RETURNING failed_attempts`), now, cur.accountID).Scan(&failed); err != nil {
				return err
			}
			reason := "invalid-credentials"
			if failed >= s.maxFailed() {
				reason = "locked-out"
				if _, err := tx.ExecContext(ctx, s.q(`UPDATE local_accounts SET failed_attempts = 0, lockout_end = ? WHERE account_id = ?`),
					now.Add(s.lockout()), cur.accountID); err != nil {
					return err
				}
			}
			return record(OutcomeFailure, "", reason)
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE local_accounts SET failed_attempts = 0, lockout_end = NULL, updated_at = ? WHERE account_id = ?`),
			now, cur.accountID); err != nil {
			return err
		}
		if rehash != "" {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE local_accounts SET password_hash = ? WHERE account_id = ?`), rehash, cur.accountID); err != nil {
				return err
			}
		}
		if sess, err = s.openSession(ctx, tx, cur, now); err != nil {
			return err
		}
		return record(OutcomeSuccess, cur.principalID, "")
	})
	if err != nil {
		return Session{}, Principal{}, fmt.Errorf("login: %w", err)
	}
	if outcome != nil {
		return Session{}, Principal{}, outcome
	}
	p, err := s.Principal(ctx, acct.principalID)
	return sess, p, err
}

// openSession stores a new session for the account at its current security stamp, and drops the
// account's expired sessions.
func (s *Service) openSession(ctx context.Context, tx *sql.Tx, acct accountRow, now time.Time) (Session, error) {
	// SQLite keeps times as RFC 3339 text with trailing fractional zeros trimmed, which orders
	// correctly as text only across whole seconds: the cutoff is a whole second, one before now.
	cutoff := now.Truncate(time.Second).Add(-time.Second)
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE account_id = ? AND expires_at <= ?`), acct.accountID, cutoff); err != nil {
		return Session{}, err
	}
	token, digest := newToken()
	sess := Session{Token: token, PrincipalID: acct.principalID, AccountID: acct.accountID, ExpiresAt: now.Add(s.lifetime())}
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO sessions (id, principal_id, account_id, security_stamp, created_at, expires_at, last_seen_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`), digest, acct.principalID, acct.accountID, acct.stamp, now, sess.ExpiresAt, now)
	return sess, err
}

// Principal reads a Principal by id.
func (s *Service) Principal(ctx context.Context, id string) (Principal, error) {
	return s.readPrincipal(ctx, s.Store.DB(), id)
}

func (s *Service) readPrincipal(ctx context.Context, db queryer, id string) (Principal, error) {
	var (
		p     Principal
		email sql.NullString
	)
	err := db.QueryRowContext(ctx, s.q(`SELECT id, kind, display_name, email, status, created_at FROM principals WHERE id = ?`), id).
		Scan(&p.ID, &p.Kind, &p.DisplayName, &email, &p.Status, &p.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return p, ErrNotFound
	}
	p.Email = email.String
	return p, err
}

// sessionRow is a stored session with its credential: a local account or an external identity.
type sessionRow struct {
	digest, stamp       string
	expiresAt, lastSeen time.Time
	principalID         string
	principalStatus     string
	// local is set for the session of a local account, acct is that account.
	local bool
	acct  accountRow
	// external is set for the session of an external identity still linked to the Principal.
	external bool
}

func (s *Service) readSession(ctx context.Context, db queryer, token string) (sessionRow, error) {
	var r sessionRow
	if token == "" {
		return r, ErrUnauthenticated
	}
	r.digest = tokenDigest(token)
	var (
		accountID, passwordHash, accountStamp, externalID sql.NullString
		failedAttempts                                    sql.NullInt64
	)
	err := db.QueryRowContext(ctx, s.q(`SELECT s.security_stamp, s.expires_at, s.last_seen_at, s.principal_id, p.status,
		a.account_id, a.password_hash, a.security_stamp, a.failed_attempts, a.lockout_end, e.id
		FROM sessions s JOIN principals p ON p.id = s.principal_id
		LEFT JOIN local_accounts a ON a.account_id = s.account_id AND a.principal_id = s.principal_id
		LEFT JOIN external_identities e ON e.id = s.external_identity_id AND e.principal_id = s.principal_id
		WHERE s.id = ?`), r.digest).
		Scan(&r.stamp, &r.expiresAt, &r.lastSeen, &r.principalID, &r.principalStatus,
			&accountID, &passwordHash, &accountStamp, &failedAttempts, &r.acct.lockoutEnd, &externalID)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrUnauthenticated
	}
	r.local = accountID.Valid
	if r.local {
		r.acct.accountID, r.acct.principalID, r.acct.status = accountID.String, r.principalID, r.principalStatus
		r.acct.passwordHash, r.acct.stamp, r.acct.failedAttempts = passwordHash.String, accountStamp.String, int(failedAttempts.Int64)
	}
	r.external = externalID.Valid
	return r, err
}

// valid reports whether the session may be used at now: not expired, and for a local account the
// account not disabled and the security stamp unchanged since the session was issued; for an
// external identity the link still in place and the Principal active. A temporary lockout after
// failed attempts does not end existing sessions: otherwise anyone who knows a username could
// sign its owner out by typing wrong passwords.
func (r sessionRow) valid(now time.Time) bool {
	if !now.Before(r.expiresAt) {
		return false
	}
	switch {
	case r.local:
		return !r.acct.disabled() && r.stamp == r.acct.stamp
	case r.external:
		return r.principalStatus == StatusActive
	}
	return false
}

// ended reports whether the session can never become valid again (a disabled Principal may be
// enabled again; an expired session, a rotated stamp or a removed link are final).
func (r sessionRow) ended(now time.Time) bool {
	return !now.Before(r.expiresAt) || (r.local && r.stamp != r.acct.stamp) || (!r.local && !r.external)
}

// Authenticate returns the Principal of the session whose token the client presented. It fails
// with ErrUnauthenticated when there is no such session, it expired, the account is disabled, or
// the security stamp was rotated since the session was issued.
func (s *Service) Authenticate(ctx context.Context, token string) (Principal, error) {
	if token == "" {
		return Principal{}, ErrUnauthenticated
	}
	generation, err := s.generation(ctx)
	if err != nil {
		return Principal{}, err
	}
	now, key := s.now(), cachedSessionKey+tokenDigest(token)
	if v, ok := s.cache.get(generation, key); ok {
		if c := v.(cachedSession); now.Before(c.expiresAt) {
			return c.principal, s.sessionSeen(ctx, generation, key, c, now)
		}
	}
	r, err := s.readSession(ctx, s.Store.DB(), token)
	if err != nil {
		return Principal{}, err
	}
	if !r.valid(now) {
		if r.ended(now) {
			_, _ = s.Store.DB().ExecContext(ctx, s.q(`DELETE FROM sessions WHERE id = ?`), r.digest)
		}
		return Principal{}, ErrUnauthenticated
	}
	p, err := s.Principal(ctx, r.principalID)
	if err != nil {
		return Principal{}, err
	}
	return p, s.sessionSeen(ctx, generation, key, cachedSession{principal: p, expiresAt: r.expiresAt, lastSeen: r.lastSeen}, now)
}

// sessionSeen records the use of a valid session, at most once per lastSeenResolution, and keeps
// it for the next request.
func (s *Service) sessionSeen(ctx context.Context, generation int64, key string, c cachedSession, now time.Time) error {
	if now.Sub(c.lastSeen) < lastSeenResolution {
		s.cache.put(generation, key, c)
		return nil
	}
	if _, err := s.Store.DB().ExecContext(ctx, s.q(`UPDATE sessions SET last_seen_at = ? WHERE id = ?`), now, key[len(cachedSessionKey):]); err != nil {
		return err
	}
	c.lastSeen = now
	s.cache.put(generation, key, c)
	return nil
}

// Logout ends the session of token. Ending an unknown or already ended session is no error and
// records nothing; neither does ending the session of an external identity, for which the spec
// names no audit action.
func (s *Service) Logout(ctx context.Context, token string) error {
	return s.Store.InTx(ctx, func(tx *sql.Tx) error {
		r, err := s.readSession(ctx, tx, token)
		if errors.Is(err, ErrUnauthenticated) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE id = ?`), r.digest); err != nil {
			return err
		}
		if !r.local {
			return nil
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionLocalAccountLogout, Outcome: OutcomeSuccess, ActorID: r.principalID, TargetID: r.principalID})
	})
}

// rotateStamp gives the account a new security stamp, which invalidates every session issued
// before, and returns the account as it now is.
func (s *Service) rotateStamp(ctx context.Context, tx *sql.Tx, acct accountRow, now time.Time) (accountRow, error) {
	acct.stamp = newID()
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE local_accounts SET security_stamp = ?, updated_at = ? WHERE account_id = ?`),
		acct.stamp, now, acct.accountID); err != nil {
		return acct, err
	}
	_, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE account_id = ?`), acct.accountID)
	return acct, err
}

// ChangePassword replaces the password of the account after checking the current one, rotates
// the security stamp (every other session of the account is signed out) and returns a fresh
// session for the caller. A wrong current password is ErrInvalidCredentials; it does not count
// toward the lockout, since the caller is already signed in. A disabled account cannot change
// its password.
func (s *Service) ChangePassword(ctx context.Context, accountID, current, next string) (Session, error) {
	if err := ValidatePassword(next); err != nil {
		return Session{}, err
	}
	acct, err := s.readAccount(ctx, s.Store.DB(), `a.account_id = ?`, accountID)
	if err != nil {
		return Session{}, err
	}
	if acct.disabled() {
		return Session{}, ErrAccountDisabled
	}
	ok, err := VerifyPassword(acct.passwordHash, current)
	if err != nil {
		return Session{}, err
	}
	if !ok {
		return Session{}, ErrInvalidCredentials
	}
	hash, err := HashPassword(next)
	if err != nil {
		return Session{}, err
	}
	var sess Session
	err = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		cur, err := s.readAccount(ctx, tx, `a.account_id = ?`, accountID)
		if err != nil {
			return err
		}
		if cur.disabled() {
			return ErrAccountDisabled
		}
		if cur.passwordHash != acct.passwordHash {
			return ErrInvalidCredentials // changed meanwhile
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE local_accounts SET password_hash = ? WHERE account_id = ?`), hash, accountID); err != nil {
			return err
		}
		if cur, err = s.rotateStamp(ctx, tx, cur, now); err != nil {
			return err
		}
		if sess, err = s.openSession(ctx, tx, cur, now); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionLocalAccountPasswordChanged, Outcome: OutcomeSuccess, ActorID: cur.principalID, TargetID: cur.principalID})
	})
	if err != nil {
		return Session{}, fmt.Errorf("change password: %w", err)
	}
	return sess, nil
}

// RevokeOtherSessions rotates the security stamp of the account, which signs out every session
// of it, and returns a fresh session for the caller.
func (s *Service) RevokeOtherSessions(ctx context.Context, accountID string) (Session, error) {
	var sess Session
	err := s.Store.InTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		cur, err := s.readAccount(ctx, tx, `a.account_id = ?`, accountID)
		if err != nil {
			return err
		}
		if cur.disabled() {
			return ErrAccountDisabled
		}
		if cur, err = s.rotateStamp(ctx, tx, cur, now); err != nil {
			return err
		}
		if sess, err = s.openSession(ctx, tx, cur, now); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionLocalAccountSessionsRevoked, Outcome: OutcomeSuccess, ActorID: cur.principalID, TargetID: cur.principalID})
	})
	if err != nil {
		return Session{}, fmt.Errorf("revoke other sessions: %w", err)
	}
	return sess, nil
}

// Disable locks the account indefinitely, rotates its security stamp (its sessions fail at once)
// and marks its Principal Disabled. actorID is the Platform administrator who asks; the caller
// has checked that it may (see Service; SetLocalAccountStatus checks it).
func (s *Service) Disable(ctx context.Context, actorID, accountID string) error {
	err := s.Store.InTx(ctx, func(tx *sql.Tx) error {
		cur, err := s.readAccount(ctx, tx, `a.account_id = ?`, accountID)
		if err != nil {
			return err
		}
		return s.disableInTx(ctx, tx, actorID, cur)
	})
	if err != nil {
		return fmt.Errorf("disable account: %w", err)
	}
	return nil
}

func (s *Service) disableInTx(ctx context.Context, tx *sql.Tx, actorID string, cur accountRow) error {
	now := s.now()
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE local_accounts SET lockout_end = ?, failed_attempts = 0 WHERE account_id = ?`),
		indefinitely, cur.accountID); err != nil {
		return err
	}
	if _, err := s.rotateStamp(ctx, tx, cur, now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE principals SET status = ? WHERE id = ?`), StatusDisabled, cur.principalID); err != nil {
		return err
	}
	return s.audit().Record(ctx, tx, Event{Action: ActionLocalAccountDisabled, Outcome: OutcomeSuccess, ActorID: actorID, TargetID: cur.principalID})
}

// Enable clears the lockout and the failed-attempt count of the account and marks its Principal
// Active. Sessions ended by Disable stay ended.
func (s *Service) Enable(ctx context.Context, actorID, accountID string) error {
	err := s.Store.InTx(ctx, func(tx *sql.Tx) error {
		cur, err := s.readAccount(ctx, tx, `a.account_id = ?`, accountID)
		if err != nil {
			return err
		}
		return s.enableInTx(ctx, tx, actorID, cur)
	})
	if err != nil {
		return fmt.Errorf("enable account: %w", err)
	}
	return nil
}

func (s *Service) enableInTx(ctx context.Context, tx *sql.Tx, actorID string, cur accountRow) error {
	now := s.now()
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE local_accounts SET lockout_end = NULL, failed_attempts = 0, updated_at = ? WHERE account_id = ?`),
		now, cur.accountID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE principals SET status = ? WHERE id = ?`), StatusActive, cur.principalID); err != nil {
		return err
	}
	return s.audit().Record(ctx, tx, Event{Action: ActionLocalAccountEnabled, Outcome: OutcomeSuccess, ActorID: actorID, TargetID: cur.principalID})
}

// LocalAccountOf returns the local account of a Principal, for callers that hold the Principal
// of a session (Authenticate) and act on its account (ChangePassword, RevokeOtherSessions).
func (s *Service) LocalAccountOf(ctx context.Context, principalID string) (LocalAccount, error) {
	var a LocalAccount
	err := s.Store.DB().QueryRowContext(ctx, s.q(`SELECT account_id, principal_id, username, created_at FROM local_accounts WHERE principal_id = ?`), principalID).
		Scan(&a.AccountID, &a.PrincipalID, &a.Username, &a.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return a, ErrNotFound
	}
	return a, err
}
