package identity

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Personal access token format: PATPrefix followed by the unpadded base64url encoding of
// patSecretBytes random bytes. The fixed prefix lets the server (and secret scanners) tell a
// PAT from other bearer tokens without a lookup.
const (
	PATPrefix = "platform_pat_"

	patSecretBytes = 32
	// patEncodedLength is the length of the base64url part.
	patEncodedLength = (patSecretBytes*8 + 5) / 6
	// patShownLength is how many characters of the base64url part the stored prefix keeps: 48 of
	// the 256 random bits, enough to tell one's tokens apart, leaving 208 bits secret.
	patShownLength = 8

	// MaxPATLifetime is the spec's limit on the expiry of a personal access token.
	MaxPATLifetime = 365 * 24 * time.Hour
	// MaxPATNameLength bounds the name a user gives a token.
	MaxPATNameLength = 100

	// lastUsedResolution bounds how often AuthenticatePAT writes last_used_at.
	lastUsedResolution = time.Minute
)

// PATAllowed are the permissions a personal access token may carry: work inside one workspace,
// never tenant, workspace or authorization administration.
var PATAllowed = PermissionsOf(
	PermWorkspacesRead,
	PermResourcesRead, PermResourcesWrite, PermResourcesDelete,
	PermRunsRead, PermRunsExecute, PermRunsDelete,
)

// Statuses of a personal access token, as ListPATs reports them.
const (
	PATStatusActive  = "Active"
	PATStatusExpired = "Expired"
	PATStatusRevoked = "Revoked"
)

// Errors of personal access tokens.
var (
	ErrMalformedPAT         = errors.New("identity: not a personal access token")
	ErrPATNotFound          = errors.New("identity: no such personal access token")
	ErrPATPrincipal         = errors.New("identity: personal access tokens are only for active human principals")
	ErrInvalidPATName       = fmt.Errorf("identity: a token name is 1 to %d characters without control characters or surrounding spaces", MaxPATNameLength)
	ErrInvalidPATExpiry     = errors.New("identity: a personal access token needs an expiry in the future and at most 365 days away")
	ErrInvalidPATPermission = errors.New("identity: a personal access token allows one or more of " + PATAllowed.String() + " and nothing else")
)

// PATSecret is a parsed personal access token value. Its String and GoString show only the
// non-secret prefix, so that formatting one by mistake does not leak it; Encode gives the value.
type PATSecret struct {
	random [patSecretBytes]byte
}

// ParsePAT checks that raw is exactly a personal access token: PATPrefix, then the canonical
// unpadded base64url encoding of 32 bytes. Anything else is ErrMalformedPAT.
func ParsePAT(raw string) (PATSecret, error) {
	var t PATSecret
	encoded, ok := strings.CutPrefix(raw, PATPrefix)
	if !ok || len(encoded) != patEncodedLength {
		return t, ErrMalformedPAT
	}
	// Strict refuses non-zero padding bits, so that exactly one string encodes each token.
	n, err := base64.RawURLEncoding.Strict().Decode(t.random[:], []byte(encoded))
	if err != nil || n != patSecretBytes {
		return PATSecret{}, ErrMalformedPAT
	}
	return t, nil
}

// newPATSecret returns a token of 256 random bits.
func newPATSecret() PATSecret {
	var t PATSecret
	if _, err := rand.Read(t.random[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return t
}

// Encode is the token as the client presents it.
func (t PATSecret) Encode() string {
	return PATPrefix + base64.RawURLEncoding.EncodeToString(t.random[:])
}

// Prefix is the non-secret beginning of the token that listings show.
func (t PATSecret) Prefix() string {
	return t.Encode()[:len(PATPrefix)+patShownLength]
}

// Digest is the hex SHA-256 digest of the whole token, the only form in which it is stored.
func (t PATSecret) Digest() string { return tokenDigest(t.Encode()) }

// String shows the prefix only.
func (t PATSecret) String() string { return t.Prefix() + "..." }

// GoString shows the prefix only, for %#v.
func (t PATSecret) GoString() string { return "identity.PATSecret(" + t.String() + ")" }

// PersonalAccessToken is the metadata of a personal access token; it never holds the token or
// its digest.
type PersonalAccessToken struct {
	ID          string
	PrincipalID string
	WorkspaceID string
	// WorkspaceName is the route name of the workspace.
	WorkspaceName string
	Name          string
	// Prefix is the non-secret beginning of the token, to recognize it.
	Prefix      string
	Permissions Permissions
	CreatedAt   time.Time
	ExpiresAt   time.Time
	// RevokedAt and LastUsedAt are zero when the token was never revoked or used.
	RevokedAt  time.Time
	LastUsedAt time.Time
}

// Status is Active, Expired or Revoked at now.
func (t PersonalAccessToken) Status(now time.Time) string {
	switch {
	case !t.RevokedAt.IsZero():
		return PATStatusRevoked
	case !now.Before(t.ExpiresAt):
		return PATStatusExpired
	}
	return PATStatusActive
}

// NewPAT is the input of CreatePAT. WorkspaceID is the workspace's id or route name.
type NewPAT struct {
	PrincipalID string
	WorkspaceID string
	Name        string
	Permissions Permissions
	ExpiresAt   time.Time
}

func validatePATName(name string) error {
	if name == "" || strings.TrimSpace(name) != name || !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxPATNameLength {
		return ErrInvalidPATName
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return ErrInvalidPATName
		}
	}
	return nil
}

// CreatePAT creates a personal access token for an active human Principal in a workspace it can
// access (a member, or a Platform administrator, who needs no membership), with a non-empty
// allow-list from PATAllowed and an expiry in the future and at most MaxPATLifetime away. It
// returns the metadata and the token, which is never available again. The allow-list is not
// limited to the Principal's current rights: those are intersected on every request, so a
// token follows later role changes both ways.
func (s *Service) CreatePAT(ctx context.Context, actorID string, in NewPAT) (PersonalAccessToken, string, error) {
	fail := func(err error) (PersonalAccessToken, string, error) { return PersonalAccessToken{}, "", err }
	if err := validatePATName(in.Name); err != nil {
		return fail(err)
	}
	if in.Permissions == 0 || in.Permissions&^PATAllowed != 0 {
		return fail(ErrInvalidPATPermission)
	}
	now := s.now()
	expiresAt := in.ExpiresAt.UTC().Truncate(time.Microsecond)
	if !expiresAt.After(now) || expiresAt.After(now.Add(MaxPATLifetime)) {
		return fail(ErrInvalidPATExpiry)
	}
	p, err := s.Principal(ctx, in.PrincipalID)
	if errors.Is(err, ErrNotFound) || (err == nil && (p.Kind != KindHuman || p.Status != StatusActive)) {
		return fail(ErrPATPrincipal)
	}
	if err != nil {
		return fail(err)
	}
	access, err := s.Access(ctx, in.PrincipalID, in.WorkspaceID)
	if err != nil {
		return fail(err)
	}
	secret := newPATSecret()
	t := PersonalAccessToken{
		ID: newID(), PrincipalID: p.ID, WorkspaceID: access.Workspace.ID, WorkspaceName: access.Workspace.RouteName,
		Name: in.Name, Prefix: secret.Prefix(), Permissions: in.Permissions, CreatedAt: now, ExpiresAt: expiresAt,
	}
	err = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		// Access was read outside the transaction; the principal may have been disabled since.
		var status string
		if err := tx.QueryRowContext(ctx, s.q(`SELECT status FROM principals WHERE id = ?`), p.ID).Scan(&status); err != nil {
			return err
		}
		if status != StatusActive {
			return ErrPATPrincipal
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO personal_access_tokens (id, principal_id, workspace_id, name, prefix, digest,
			permissions, created_at, expires_at, revoked_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)`),
			t.ID, t.PrincipalID, t.WorkspaceID, t.Name, t.Prefix, secret.Digest(), formatPermissions(t.Permissions), t.CreatedAt, t.ExpiresAt); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionPersonalAccessTokenCreated, Outcome: OutcomeSuccess,
			ActorID: actorID, TargetID: p.ID, TenantID: access.Workspace.TenantID, WorkspaceID: t.WorkspaceID})
	})
	if err != nil {
		return fail(fmt.Errorf("create personal access token: %w", err))
	}
	return t, secret.Encode(), nil
}

// formatPermissions stores an allow-list as catalog names.
func formatPermissions(p Permissions) string { return p.String() }

// parsePermissions reads a stored allow-list. A name this binary does not know grants nothing.
func parsePermissions(stored string) Permissions {
	var set Permissions
	for name := range strings.SplitSeq(stored, ",") {
		if p, err := ParsePermission(name); err == nil {
			set |= PermissionsOf(p)
		}
	}
	return set & PATAllowed
}

// patColumns are what scanPAT reads; patTables are where from.
const (
	patColumns = `t.id, t.principal_id, t.workspace_id, w.route_name, t.name, t.prefix, t.permissions,
	t.created_at, t.expires_at, t.revoked_at, t.last_used_at`
	patTables = ` FROM personal_access_tokens t JOIN workspaces w ON w.id = t.workspace_id`
)

type scanner interface {
	Scan(dest ...any) error
}

func scanPAT(row scanner, extra ...any) (PersonalAccessToken, error) {
	var (
		t                   PersonalAccessToken
		permissions         string
		revokedAt, lastUsed sql.NullTime
	)
	dest := append([]any{&t.ID, &t.PrincipalID, &t.WorkspaceID, &t.WorkspaceName, &t.Name, &t.Prefix, &permissions,
		&t.CreatedAt, &t.ExpiresAt, &revokedAt, &lastUsed}, extra...)
	if err := row.Scan(dest...); err != nil {
		return t, err
	}
	t.Permissions = parsePermissions(permissions)
	t.RevokedAt, t.LastUsedAt = revokedAt.Time, lastUsed.Time
	t.CreatedAt, t.ExpiresAt = t.CreatedAt.UTC(), t.ExpiresAt.UTC()
	if !t.RevokedAt.IsZero() {
		t.RevokedAt = t.RevokedAt.UTC()
	}
	if !t.LastUsedAt.IsZero() {
		t.LastUsedAt = t.LastUsedAt.UTC()
	}
	return t, nil
}

// ListPATs returns the metadata of the Principal's tokens, revoked and expired ones included,
// newest first. ErrPrincipalNotFound when there is no such Principal.
func (s *Service) ListPATs(ctx context.Context, principalID string) ([]PersonalAccessToken, error) {
	if err := s.principalExists(ctx, principalID); err != nil {
		return nil, err
	}
	rows, err := s.Store.DB().QueryContext(ctx, s.q(`SELECT `+patColumns+patTables+` WHERE t.principal_id = ? ORDER BY t.created_at DESC, t.id`), principalID)
	if err != nil {
		return nil, fmt.Errorf("list personal access tokens: %w", err)
	}
	defer rows.Close()
	tokens := []PersonalAccessToken{}
	for rows.Next() {
		t, err := scanPAT(rows)
		if err != nil {
			return nil, fmt.Errorf("list personal access tokens: %w", err)
		}
		tokens = append(tokens, t)
	}
	return tokens, rows.Err()
}

func (s *Service) principalExists(ctx context.Context, principalID string) error {
	_, err := s.Principal(ctx, principalID)
	if errors.Is(err, ErrNotFound) {
		return ErrPrincipalNotFound
	}
	return err
}

// RevokePAT revokes the Principal's token tokenID; it fails at once. actorID is the owner or a
// Platform administrator (the caller checks which may). A token of another Principal is
// ErrPATNotFound. Revoking a revoked token changes and records nothing.
func (s *Service) RevokePAT(ctx context.Context, actorID, principalID, tokenID string) error {
	err := s.Store.InTx(ctx, func(tx *sql.Tx) error {
		var workspaceID, tenantID string
		err := tx.QueryRowContext(ctx, s.q(`SELECT t.workspace_id, w.tenant_id FROM personal_access_tokens t
			JOIN workspaces w ON w.id = t.workspace_id WHERE t.id = ? AND t.principal_id = ?`), tokenID, principalID).
			Scan(&workspaceID, &tenantID)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrPATNotFound
		}
		if err != nil {
			return err
		}
		// The condition, not the read above, decides who revokes: of concurrent revocations
		// exactly one changes the row and records it.
		res, err := tx.ExecContext(ctx, s.q(`UPDATE personal_access_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`), s.now(), tokenID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionPersonalAccessTokenRevoked, Outcome: OutcomeSuccess,
			ActorID: actorID, TargetID: principalID, TenantID: tenantID, WorkspaceID: workspaceID})
	})
	if err != nil {
		return fmt.Errorf("revoke personal access token: %w", err)
	}
	return nil
}

// RevokeAllPATs revokes every token of the Principal that is not revoked yet and returns how
// many it revoked. ErrPrincipalNotFound when there is no such Principal.
func (s *Service) RevokeAllPATs(ctx context.Context, actorID, principalID string) (int, error) {
	if err := s.principalExists(ctx, principalID); err != nil {
		return 0, err
	}
	var revoked int64
	err := s.Store.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE personal_access_tokens SET revoked_at = ? WHERE principal_id = ? AND revoked_at IS NULL`),
			s.now(), principalID)
		if err != nil {
			return err
		}
		if revoked, err = res.RowsAffected(); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionPersonalAccessTokenRevokedAll, Outcome: OutcomeSuccess,
			ActorID: actorID, TargetID: principalID})
	})
	if err != nil {
		return 0, fmt.Errorf("revoke personal access tokens: %w", err)
	}
	return int(revoked), nil
}

// AuthenticatePAT returns the token that raw is, if it may be used now: well formed, known, not
// revoked, not expired, its Principal an active human, its workspace and tenant active, and the
// Principal still a member of the workspace or a Platform administrator. Any failure is
// ErrUnauthenticated, whatever the reason, so that a caller learns nothing about other tokens.
// The token's rights are the caller's to intersect with the live ones (see Access).
func (s *Service) AuthenticatePAT(ctx context.Context, raw string) (PersonalAccessToken, error) {
	secret, err := ParsePAT(raw)
	if err != nil {
		return PersonalAccessToken{}, ErrUnauthenticated
	}
	digest := secret.Digest()
	generation, err := s.generation(ctx)
	if err != nil {
		return PersonalAccessToken{}, fmt.Errorf("authenticate personal access token: %w", err)
	}
	now, key := s.now(), cachedPAT+digest
	if v, ok := s.cache.get(generation, key); ok {
		// Everything but the time was checked under this generation.
		if t := v.(PersonalAccessToken); t.Status(now) == PATStatusActive {
			return s.patUsed(ctx, generation, key, t, now)
		}
		return PersonalAccessToken{}, ErrUnauthenticated
	}
	var stored, kind, status string
	t, err := scanPAT(s.Store.DB().QueryRowContext(ctx, s.q(`SELECT `+patColumns+`, t.digest, p.kind, p.status`+patTables+`
		JOIN principals p ON p.id = t.principal_id WHERE t.digest = ?`), digest), &stored, &kind, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return PersonalAccessToken{}, ErrUnauthenticated
	}
	if err != nil {
		return PersonalAccessToken{}, fmt.Errorf("authenticate personal access token: %w", err)
	}
	// The lookup went through an index; the constant-time comparison keeps the final decision
	// free of timing that depends on the stored value.
	if subtle.ConstantTimeCompare([]byte(stored), []byte(digest)) != 1 {
		return PersonalAccessToken{}, ErrUnauthenticated
	}
	if t.Status(now) != PATStatusActive || kind != KindHuman || status != StatusActive {
		return PersonalAccessToken{}, ErrUnauthenticated
	}
	// Access checks the workspace and its tenant are active and the Principal a member or a
	// Platform administrator, so that a token dies with its owner's access to the workspace.
	if _, err := s.Access(ctx, t.PrincipalID, t.WorkspaceID); errors.Is(err, ErrWorkspaceNotFound) {
		return PersonalAccessToken{}, ErrUnauthenticated
	} else if err != nil {
		return PersonalAccessToken{}, fmt.Errorf("authenticate personal access token: %w", err)
	}
	return s.patUsed(ctx, generation, key, t, now)
}

// patUsed records the use of a valid token, at most once per lastUsedResolution, and keeps it for
// the next request.
func (s *Service) patUsed(ctx context.Context, generation int64, key string, t PersonalAccessToken, now time.Time) (PersonalAccessToken, error) {
	if now.Sub(t.LastUsedAt) >= lastUsedResolution {
		if _, err := s.Store.DB().ExecContext(ctx, s.q(`UPDATE personal_access_tokens SET last_used_at = ? WHERE id = ?`), now, t.ID); err != nil {
			return PersonalAccessToken{}, fmt.Errorf("authenticate personal access token: %w", err)
		}
		t.LastUsedAt = now
	}
	s.cache.put(generation, key, t)
	return t, nil
}
