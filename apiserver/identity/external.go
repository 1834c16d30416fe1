package identity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"platform.dev/platform/apiserver/store"
)

// Bounds of the external identity pair. OIDC Core limits sub to 255 ASCII characters; an issuer
// is a URL, bounded so that a stored pair stays small.
const (
	MaxIssuerLength  = 1024
	MaxSubjectLength = 255
)

// Errors of external identity links. None of them repeats an issuer or a subject: both are
// personal data that stays out of errors, logs and audit records.
var (
	ErrInvalidIssuer = errors.New("identity: an issuer is an absolute http or https URL of printable ASCII, " +
		"at most 1024 characters, without user information, query or fragment")
	ErrInvalidSubject = errors.New("identity: a subject is 1 to 255 bytes of UTF-8 without control characters " +
		"or surrounding whitespace")
	ErrPrincipalNotFound         = errors.New("identity: no such principal")
	ErrPrincipalNotLinkable      = errors.New("identity: only an active human principal can be linked to an external identity")
	ErrExternalIdentityTaken     = errors.New("identity: the external identity is linked to another principal")
	ErrExternalIdentityNotFound  = errors.New("identity: no such external identity of the principal")
	ErrLastAuthenticationMethod  = errors.New("identity: the principal's last authentication method cannot be unlinked")
	ErrNoLinkedPrincipal         = errors.New("identity: the external identity is linked to no active principal")
	errExternalIdentityRetracted = errors.New("identity: the external identity was unlinked meanwhile")
)

// ExternalIdentity is the exact (Issuer, Subject) pair of an OIDC provider's user, linked to one
// Principal. The pair is unique for the instance.
type ExternalIdentity struct {
	ID          string
	Issuer      string
	Subject     string
	PrincipalID string
	LinkedAt    time.Time
}

// ValidateIssuer checks an issuer as the spec defines it: an absolute http or https URL with a
// host and without user information, query or fragment, of printable ASCII (so no control
// characters and no whitespace, surrounding or inner), at most MaxIssuerLength bytes. The scheme
// must be spelled in lowercase: the issuer is compared byte for byte with the iss claim, and
// providers publish it so. The value is never changed: case is preserved.
func ValidateIssuer(issuer string) error {
	if issuer == "" || len(issuer) > MaxIssuerLength {
		return ErrInvalidIssuer
	}
	for i := 0; i < len(issuer); i++ {
		if issuer[i] <= ' ' || issuer[i] >= 0x7f {
			return ErrInvalidIssuer
		}
	}
	if !strings.HasPrefix(issuer, "https://") && !strings.HasPrefix(issuer, "http://") {
		return ErrInvalidIssuer
	}
	// '?' and '#' start a query and a fragment wherever they appear, even empty ones.
	if strings.ContainsAny(issuer, "?#") {
		return ErrInvalidIssuer
	}
	u, err := url.Parse(issuer)
	if err != nil || u.User != nil || u.Opaque != "" || u.Hostname() == "" {
		return ErrInvalidIssuer
	}
	// url.Parse takes the authority up to the first '/', so an '@' there is user information even
	// when it parsed as part of the host.
	if strings.Contains(u.Host, "@") {
		return ErrInvalidIssuer
	}
	return nil
}

// ValidateSubject checks a subject: 1 to MaxSubjectLength bytes of valid UTF-8 without control
// characters or surrounding whitespace. The value is never changed: case is preserved.
func ValidateSubject(subject string) error {
	if subject == "" || len(subject) > MaxSubjectLength || !utf8.ValidString(subject) || strings.TrimSpace(subject) != subject {
		return ErrInvalidSubject
	}
	for _, r := range subject {
		if unicode.IsControl(r) {
			return ErrInvalidSubject
		}
	}
	return nil
}

const externalIdentityColumns = `id, issuer, subject, principal_id, linked_at`

func scanExternalIdentity(row interface{ Scan(...any) error }) (ExternalIdentity, error) {
	var e ExternalIdentity
	err := row.Scan(&e.ID, &e.Issuer, &e.Subject, &e.PrincipalID, &e.LinkedAt)
	return e, err
}

// lockPrincipal fails with ErrPrincipalNotFound when there is no such Principal, and returns its
// kind and status otherwise. On PostgreSQL it locks the Principal's row until tx ends, so
// that link changes of one Principal are serialized across replicas (SQLite serializes every
// writing transaction already).
func (s *Service) lockPrincipal(ctx context.Context, tx *sql.Tx, principalID string) (kind, status string, err error) {
	query := `SELECT kind, status FROM principals WHERE id = ?`
	if s.Store.Dialect() == store.Postgres {
		query += ` FOR UPDATE`
	}
	err = tx.QueryRowContext(ctx, s.q(query), principalID).Scan(&kind, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", ErrPrincipalNotFound
	}
	return kind, status, err
}

// ListExternalIdentities returns the external identities linked to the Principal, oldest first.
// ErrPrincipalNotFound when there is no such Principal.
func (s *Service) ListExternalIdentities(ctx context.Context, principalID string) ([]ExternalIdentity, error) {
	if _, err := s.Principal(ctx, principalID); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, ErrPrincipalNotFound
		}
		return nil, err
	}
	rows, err := s.Store.DB().QueryContext(ctx, s.q(`SELECT `+externalIdentityColumns+` FROM external_identities
		WHERE principal_id = ? ORDER BY linked_at, id`), principalID)
	if err != nil {
		return nil, fmt.Errorf("list external identities: %w", err)
	}
	defer rows.Close()
	links := []ExternalIdentity{}
	for rows.Next() {
		e, err := scanExternalIdentity(rows)
		if err != nil {
			return nil, fmt.Errorf("list external identities: %w", err)
		}
		links = append(links, e)
	}
	return links, rows.Err()
}

// LinkExternalIdentity links the exact (issuer, subject) pair to the Principal, which must exist
// (ErrPrincipalNotFound), be active and human (ErrPrincipalNotLinkable). Linking a pair that is
// already the Principal's changes nothing and returns the existing link (created false); a pair
// of another Principal is ErrExternalIdentityTaken. actorID is the Platform administrator who
// asks: who may link is the caller's concern. A new link is audited as external-identity.linked,
// a refused one as its failure; neither record holds the issuer or the subject.
func (s *Service) LinkExternalIdentity(ctx context.Context, actorID, principalID, issuer, subject string) (link ExternalIdentity, created bool, err error) {
	if err := ValidateIssuer(issuer); err != nil {
		return ExternalIdentity{}, false, err
	}
	if err := ValidateSubject(subject); err != nil {
		return ExternalIdentity{}, false, err
	}
	s.externalMu.Lock()
	defer s.externalMu.Unlock()
	err = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		link, created = ExternalIdentity{}, false
		kind, status, err := s.lockPrincipal(ctx, tx, principalID)
		if err != nil {
			return err
		}
		if kind != KindHuman || status != StatusActive {
			return ErrPrincipalNotLinkable
		}
		candidate := ExternalIdentity{ID: newID(), Issuer: issuer, Subject: subject, PrincipalID: principalID, LinkedAt: s.now()}
		// ON CONFLICT DO NOTHING waits for a concurrent insert of the same pair and then yields
		// to it, so the pair is read back whoever won.
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO external_identities (`+externalIdentityColumns+`)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (issuer, subject) DO NOTHING`),
			candidate.ID, candidate.Issuer, candidate.Subject, candidate.PrincipalID, candidate.LinkedAt)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			link, created = candidate, true
			return s.audit().Record(ctx, tx, Event{Action: ActionExternalIdentityLinked, Outcome: OutcomeSuccess, ActorID: actorID, TargetID: principalID})
		}
		link, err = scanExternalIdentity(tx.QueryRowContext(ctx, s.q(`SELECT `+externalIdentityColumns+` FROM external_identities
			WHERE issuer = ? AND subject = ?`), issuer, subject))
		if err != nil {
			return err
		}
		if link.PrincipalID != principalID {
			return ErrExternalIdentityTaken
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrExternalIdentityTaken):
		s.recordFailure(ctx, ActionExternalIdentityLinked, actorID, principalID, "identity-taken")
		return ExternalIdentity{}, false, err
	case errors.Is(err, ErrPrincipalNotFound), errors.Is(err, ErrPrincipalNotLinkable):
		return ExternalIdentity{}, false, err
	case err != nil:
		return ExternalIdentity{}, false, fmt.Errorf("link external identity: %w", err)
	}
	return link, created, nil
}

// UnlinkExternalIdentity removes the link identityID of the Principal (ErrExternalIdentityNotFound
// when the Principal has no such link) and ends the sessions opened through it, so the unlink
// takes effect on the next request. The Principal's last authentication method cannot be
// unlinked (ErrLastAuthenticationMethod): a local account counts as one, each link as one.
// Unlinks are serialized, in-process and, on PostgreSQL, by a lock on the Principal, so that two
// concurrent unlinks cannot both see another method left. Audited as external-identity.unlinked.
func (s *Service) UnlinkExternalIdentity(ctx context.Context, actorID, principalID, identityID string) error {
	s.externalMu.Lock()
	defer s.externalMu.Unlock()
	err := s.Store.InTx(ctx, func(tx *sql.Tx) error {
		if _, _, err := s.lockPrincipal(ctx, tx, principalID); err != nil {
			return err
		}
		var owner string
		err := tx.QueryRowContext(ctx, s.q(`SELECT principal_id FROM external_identities WHERE id = ?`), identityID).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != principalID) {
			return ErrExternalIdentityNotFound
		}
		if err != nil {
			return err
		}
		var methods int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT (SELECT COUNT(*) FROM local_accounts WHERE principal_id = ?)
			+ (SELECT COUNT(*) FROM external_identities WHERE principal_id = ?)`), principalID, principalID).Scan(&methods); err != nil {
			return err
		}
		if methods <= 1 {
			return ErrLastAuthenticationMethod
		}
		// The foreign key cascades too; deleting explicitly does not depend on it being enforced.
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE external_identity_id = ?`), identityID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM external_identities WHERE id = ?`), identityID); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionExternalIdentityUnlinked, Outcome: OutcomeSuccess, ActorID: actorID, TargetID: principalID})
	})
	switch {
	case errors.Is(err, ErrLastAuthenticationMethod):
		s.recordFailure(ctx, ActionExternalIdentityUnlinked, actorID, principalID, "last-authentication-method")
		return err
	case errors.Is(err, ErrPrincipalNotFound), errors.Is(err, ErrExternalIdentityNotFound):
		return err
	case err != nil:
		return fmt.Errorf("unlink external identity: %w", err)
	}
	return nil
}

// recordFailure audits a refused change in its own transaction (the change's rolled back). A
// failure to record does not change the answer: the refusal stands either way.
func (s *Service) recordFailure(ctx context.Context, action, actorID, targetID, reason string) {
	_ = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		return s.audit().Record(ctx, tx, Event{Action: action, Outcome: OutcomeFailure, ActorID: actorID, TargetID: targetID, ReasonCode: reason})
	})
}

// PrincipalByExternalIdentity resolves the Principal linked to the exact, case-sensitive pair.
// ErrNoLinkedPrincipal when the pair is linked to nobody or to a Principal that is not active:
// email addresses and display names never take part.
func (s *Service) PrincipalByExternalIdentity(ctx context.Context, issuer, subject string) (Principal, error) {
	p, _, err := s.principalByExternalIdentity(ctx, s.Store.DB(), issuer, subject)
	return p, err
}

func (s *Service) principalByExternalIdentity(ctx context.Context, db queryer, issuer, subject string) (Principal, string, error) {
	// Values that could never have been linked are not looked up.
	if ValidateIssuer(issuer) != nil || ValidateSubject(subject) != nil {
		return Principal{}, "", ErrNoLinkedPrincipal
	}
	var (
		p      Principal
		email  sql.NullString
		linkID string
	)
	err := db.QueryRowContext(ctx, s.q(`SELECT p.id, p.kind, p.display_name, p.email, p.status, p.created_at, e.id
		FROM external_identities e JOIN principals p ON p.id = e.principal_id WHERE e.issuer = ? AND e.subject = ?`), issuer, subject).
		Scan(&p.ID, &p.Kind, &p.DisplayName, &email, &p.Status, &p.CreatedAt, &linkID)
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, "", ErrNoLinkedPrincipal
	}
	if err != nil {
		return Principal{}, "", err
	}
	if p.Status != StatusActive {
		return Principal{}, "", ErrNoLinkedPrincipal
	}
	p.Email = email.String
	return p, linkID, nil
}

// OpenExternalSession opens a server-side session for the Principal linked to the exact pair
// (ErrNoLinkedPrincipal when there is none, or it is not active), after the caller verified the
// pair through the provider's ID token. The session ends when it expires, when the link is
// removed, and fails while the Principal is disabled. The spec names no audit action for an
// external sign-in, so none is recorded.
func (s *Service) OpenExternalSession(ctx context.Context, issuer, subject string) (Session, Principal, error) {
	var (
		sess Session
		p    Principal
	)
	err := s.Store.InTx(ctx, func(tx *sql.Tx) error {
		var (
			linkID string
			err    error
		)
		if p, linkID, err = s.principalByExternalIdentity(ctx, tx, issuer, subject); err != nil {
			return err
		}
		now := s.now()
		// See openSession for the whole-second cutoff.
		cutoff := now.Truncate(time.Second).Add(-time.Second)
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE external_identity_id = ? AND expires_at <= ?`), linkID, cutoff); err != nil {
			return err
		}
		token, digest := newToken()
		sess = Session{Token: token, PrincipalID: p.ID, ExpiresAt: now.Add(s.lifetime())}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO sessions (id, principal_id, account_id, external_identity_id, security_stamp, created_at, expires_at, last_seen_at)
			SELECT ?, ?, NULL, id, '', ?, ?, ? FROM external_identities WHERE id = ? AND principal_id = ?`),
			digest, p.ID, now, sess.ExpiresAt, now, linkID, p.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return errExternalIdentityRetracted
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrNoLinkedPrincipal):
		return Session{}, Principal{}, err
	case errors.Is(err, errExternalIdentityRetracted):
		return Session{}, Principal{}, ErrNoLinkedPrincipal
	case err != nil:
		return Session{}, Principal{}, fmt.Errorf("open external session: %w", err)
	}
	return sess, p, nil
}
