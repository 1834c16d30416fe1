package identity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"platform.dev/platform/apiserver/store"
)

// Errors of account and Platform administrator administration.
var (
	ErrNotPlatformAdministrator = errors.New("identity: the caller is not an active Platform administrator")
	ErrSelfRevocation           = errors.New("identity: a Platform administrator cannot revoke its own grant")
	ErrSelfDisable              = errors.New("identity: a Platform administrator cannot disable its own account")
	ErrLastAdministrator        = errors.New("identity: the last active Platform administrator cannot be revoked or disabled")
	ErrPrincipalDisabled        = errors.New("identity: the principal is disabled")
	ErrGrantNotFound            = errors.New("identity: the principal holds no Platform administrator grant")
	ErrInvalidStatus            = errors.New("identity: a status is Active or Disabled")
)

// Keys of the PostgreSQL advisory locks that serialize the transactions checking a rule over
// several rows: the number of active administrators, the Owners of a workspace.
const (
	administrationLockKey int64 = 0x706c61746631 // arbitrary, fixed for the instance's lifetime
	membershipsLockKey    int64 = 0x706c61746632
)

// lockFor serializes tx with every other transaction that takes key, in every process on the
// database, so that a rule checked in tx still holds when tx commits. SQLite needs nothing: its
// transactions begin IMMEDIATE (see store), so writers already run one at a time. On PostgreSQL
// the lock is held until the transaction ends, and each later statement (READ COMMITTED) sees
// what the previous holder committed.
func (s *Service) lockFor(ctx context.Context, tx *sql.Tx, key int64) error {
	if s.Store.Dialect() != store.Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, key)
	return err
}

// Account is a local account with its Principal, as administrators see it.
type Account struct {
	LocalAccount
	Principal Principal
	// PlatformAdministrator is set when the Principal holds the instance grant, also while it is
	// disabled (the grant is kept and applies again once it is enabled).
	PlatformAdministrator bool
}

// InitialAccess is the access a new account starts with: a role in one workspace, and through it
// a membership of the workspace's Tenant.
type InitialAccess struct {
	// Workspace is the id or route name of an active workspace of an active tenant.
	Workspace string
	Role      Role
}

const accountListColumns = `a.account_id, a.principal_id, a.username, a.created_at,
	p.kind, p.display_name, p.email, p.status, p.created_at,
	EXISTS (SELECT 1 FROM platform_administrators g WHERE g.principal_id = a.principal_id)
	FROM local_accounts a JOIN principals p ON p.id = a.principal_id`

type rowScanner interface{ Scan(dest ...any) error }

func scanAccount(row rowScanner) (Account, error) {
	var (
		a     Account
		email sql.NullString
	)
	err := row.Scan(&a.AccountID, &a.PrincipalID, &a.Username, &a.CreatedAt,
		&a.Principal.Kind, &a.Principal.DisplayName, &email, &a.Principal.Status, &a.Principal.CreatedAt, &a.PlatformAdministrator)
	a.Principal.ID, a.Principal.Email = a.PrincipalID, email.String
	return a, err
}

// LocalAccounts lists every local account, oldest first.
func (s *Service) LocalAccounts(ctx context.Context) ([]Account, error) {
	rows, err := s.Store.DB().QueryContext(ctx, `SELECT `+accountListColumns+` ORDER BY a.created_at, a.account_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Account reads one local account; ErrNotFound when there is none.
func (s *Service) Account(ctx context.Context, accountID string) (Account, error) {
	a, err := scanAccount(s.Store.DB().QueryRowContext(ctx, s.q(`SELECT `+accountListColumns+` WHERE a.account_id = ?`), accountID))
	if errors.Is(err, sql.ErrNoRows) {
		return a, ErrNotFound
	}
	return a, err
}

// CreateLocalAccountWithAccess creates an active human Principal, its local account, its
// membership of the workspace's Tenant and its role in the workspace, in one transaction that
// audits local-account.created and workspace-membership.set. actorID is the Platform
// administrator who asks (the route checks the policy).
func (s *Service) CreateLocalAccountWithAccess(ctx context.Context, actorID string, in NewLocalAccount, access InitialAccess) (Account, Workspace, error) {
	role, err := ParseRole(string(access.Role))
	if err != nil {
		return Account{}, Workspace{}, err
	}
	acct, p, normalized, hash, err := s.newLocalAccount(in)
	if err != nil {
		return Account{}, Workspace{}, err
	}
	var ws Workspace
	err = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		if ws, err = s.scanWorkspace(tx.QueryRowContext(ctx, s.q(`SELECT `+workspaceColumns+activeWorkspaces+
			` AND (w.id = ? OR w.route_name = ?)`), access.Workspace, access.Workspace)); err != nil {
			return err
		}
		if err := s.insertLocalAccount(ctx, tx, p, acct, normalized, hash); err != nil {
			return err
		}
		if err := s.ensureTenantMember(ctx, tx, ws.TenantID, p.ID, acct.CreatedAt); err != nil {
			return err
		}
		if err := s.upsertWorkspaceRole(ctx, tx, ws.ID, p.ID, role, acct.CreatedAt); err != nil {
			return err
		}
		for _, e := range []Event{
			{Action: ActionLocalAccountCreated, Outcome: OutcomeSuccess, ActorID: actorID, TargetID: p.ID, TenantID: ws.TenantID, WorkspaceID: ws.ID},
			{Action: ActionWorkspaceMembershipSet, Outcome: OutcomeSuccess, ActorID: actorID, TargetID: p.ID, TenantID: ws.TenantID, WorkspaceID: ws.ID},
		} {
			if err := s.audit().Record(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Account{}, Workspace{}, fmt.Errorf("create local account: %w", err)
	}
	return Account{LocalAccount: acct, Principal: p}, ws, nil
}

// isAdministrator reports whether the Principal holds the grant, active or not.
func (s *Service) isAdministrator(ctx context.Context, db queryer, principalID string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM platform_administrators WHERE principal_id = ?`), principalID).Scan(&n)
	return n > 0, err
}

// activeAdministrators counts the grants whose Principal is active: a disabled Principal keeps its
// grant but administers nothing.
func (s *Service) activeAdministrators(ctx context.Context, db queryer) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM platform_administrators g JOIN principals p ON p.id = g.principal_id
		WHERE p.status = ?`), StatusActive).Scan(&n)
	return n, err
}

// requireActiveAdministrator checks, in the transaction of a change, that the actor still is an
// active Platform administrator: a concurrent revocation of the actor must not let its change
// through.
func (s *Service) requireActiveAdministrator(ctx context.Context, db queryer, actorID string) error {
	var n int
	if err := db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM platform_administrators g JOIN principals p ON p.id = g.principal_id
		WHERE g.principal_id = ? AND p.status = ?`), actorID, StatusActive).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return ErrNotPlatformAdministrator
	}
	return nil
}

// keepAnActiveAdministrator refuses, with ErrLastAdministrator, a change that takes the grant or
// the account of principalID away when it is the last active administrator.
func (s *Service) keepAnActiveAdministrator(ctx context.Context, tx *sql.Tx, principalID string) error {
	var active int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM platform_administrators g JOIN principals p ON p.id = g.principal_id
		WHERE g.principal_id = ? AND p.status = ?`), principalID, StatusActive).Scan(&active); err != nil {
		return err
	}
	if active == 0 {
		return nil // not an active administrator: the count does not change
	}
	n, err := s.activeAdministrators(ctx, tx)
	if err != nil {
		return err
	}
	if n <= 1 {
		return ErrLastAdministrator
	}
	return nil
}

// administer runs fn in a transaction that holds the administration lock.
func (s *Service) administer(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.serialized(ctx, &s.administration, administrationLockKey, fn)
}

// serialized runs fn in a transaction that holds one lock, in this process (mu) and in the
// database (key), so that replicas serialize too.
func (s *Service) serialized(ctx context.Context, mu *sync.Mutex, key int64, fn func(*sql.Tx) error) error {
	mu.Lock()
	defer mu.Unlock()
	return s.Store.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockFor(ctx, tx, key); err != nil {
			return err
		}
		return fn(tx)
	})
}

// SetLocalAccountStatus enables (Active) or disables (Disabled) a local account for the Platform
// administrator actorID. Disabling locks the account indefinitely, rotates its security stamp
// (its sessions fail at once) and marks its Principal Disabled; a Platform administrator grant
// is kept. Enabling clears the lockout and marks the Principal Active, which restores a kept
// grant. Rejected: ErrSelfDisable for the actor's own account, ErrLastAdministrator for the last
// active administrator, ErrNotPlatformAdministrator when the actor is no (longer an) active
// administrator. An account already in the status is left unchanged and nothing is audited.
func (s *Service) SetLocalAccountStatus(ctx context.Context, actorID, accountID, status string) (Account, error) {
	if status != StatusActive && status != StatusDisabled {
		return Account{}, ErrInvalidStatus
	}
	err := s.administer(ctx, func(tx *sql.Tx) error {
		cur, err := s.readAccount(ctx, tx, `a.account_id = ?`, accountID)
		if err != nil {
			return err
		}
		disable := status == StatusDisabled && !cur.disabled()
		enable := status == StatusActive && cur.disabled()
		if disable {
			if cur.principalID == actorID {
				return ErrSelfDisable
			}
			if err := s.keepAnActiveAdministrator(ctx, tx, cur.principalID); err != nil {
				return err
			}
		}
		// After the rules: a request whose actor lost its grant meanwhile (two administrators
		// disabling each other at once) reports the rule it would break.
		if err := s.requireActiveAdministrator(ctx, tx, actorID); err != nil {
			return err
		}
		switch {
		case disable:
			return s.disableInTx(ctx, tx, actorID, cur)
		case enable:
			return s.enableInTx(ctx, tx, actorID, cur)
		}
		return nil
	})
	if err != nil {
		return Account{}, fmt.Errorf("set account status: %w", err)
	}
	return s.Account(ctx, accountID)
}

// PlatformAdministrator is an instance grant and its Principal.
type PlatformAdministrator struct {
	Principal Principal
	GrantedAt time.Time
	// GrantedBy is the Principal that granted it; empty for the bootstrap's grant.
	GrantedBy string
}

const administratorColumns = `p.id, p.kind, p.display_name, p.email, p.status, p.created_at, g.granted_at, g.granted_by
	FROM platform_administrators g JOIN principals p ON p.id = g.principal_id`

func scanAdministrator(row rowScanner) (PlatformAdministrator, error) {
	var (
		a     PlatformAdministrator
		email sql.NullString
	)
	err := row.Scan(&a.Principal.ID, &a.Principal.Kind, &a.Principal.DisplayName, &email, &a.Principal.Status, &a.Principal.CreatedAt,
		&a.GrantedAt, &a.GrantedBy)
	a.Principal.Email = email.String
	return a, err
}

// PlatformAdministrators lists the grants, oldest first, with disabled Principals included.
func (s *Service) PlatformAdministrators(ctx context.Context) ([]PlatformAdministrator, error) {
	rows, err := s.Store.DB().QueryContext(ctx, `SELECT `+administratorColumns+` ORDER BY g.granted_at, p.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PlatformAdministrator
	for rows.Next() {
		a, err := scanAdministrator(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// GrantPlatformAdministrator grants the instance grant to principalID for the Platform
// administrator actorID and audits platform-administrator.granted. The target must exist
// (ErrPrincipalNotFound) and be active (ErrPrincipalDisabled). Granting a held grant changes
// nothing, audits nothing and reports created false.
func (s *Service) GrantPlatformAdministrator(ctx context.Context, actorID, principalID string) (grant PlatformAdministrator, created bool, err error) {
	err = s.administer(ctx, func(tx *sql.Tx) error {
		if err := s.requireActiveAdministrator(ctx, tx, actorID); err != nil {
			return err
		}
		target, err := s.readPrincipal(ctx, tx, principalID)
		if errors.Is(err, ErrNotFound) {
			return ErrPrincipalNotFound
		}
		if err != nil {
			return err
		}
		if target.Status != StatusActive {
			return ErrPrincipalDisabled
		}
		held, err := s.isAdministrator(ctx, tx, principalID)
		if err != nil || held {
			return err
		}
		created = true
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO platform_administrators (principal_id, granted_at, granted_by) VALUES (?, ?, ?)`),
			principalID, s.now(), actorID); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionPlatformAdministratorGranted, Outcome: OutcomeSuccess, ActorID: actorID, TargetID: principalID})
	})
	if err != nil {
		return PlatformAdministrator{}, false, fmt.Errorf("grant platform administrator: %w", err)
	}
	grant, err = scanAdministrator(s.Store.DB().QueryRowContext(ctx, s.q(`SELECT `+administratorColumns+` WHERE g.principal_id = ?`), principalID))
	return grant, created, err
}

// RevokePlatformAdministrator removes the grant of principalID for the Platform administrator
// actorID and audits platform-administrator.revoked. Rejected: ErrSelfRevocation for the actor's
// own grant, ErrLastAdministrator for the last active administrator, ErrGrantNotFound when the
// target holds none, ErrNotPlatformAdministrator when the actor is no (longer an) active
// administrator. The target's sessions stay valid: they lose the grant on their next request.
func (s *Service) RevokePlatformAdministrator(ctx context.Context, actorID, principalID string) error {
	err := s.administer(ctx, func(tx *sql.Tx) error {
		if principalID == actorID {
			return ErrSelfRevocation
		}
		held, err := s.isAdministrator(ctx, tx, principalID)
		if err != nil {
			return err
		}
		if !held {
			return ErrGrantNotFound
		}
		if err := s.keepAnActiveAdministrator(ctx, tx, principalID); err != nil {
			return err
		}
		// After the rules, as in SetLocalAccountStatus.
		if err := s.requireActiveAdministrator(ctx, tx, actorID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM platform_administrators WHERE principal_id = ?`), principalID); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionPlatformAdministratorRevoked, Outcome: OutcomeSuccess, ActorID: actorID, TargetID: principalID})
	})
	if err != nil {
		return fmt.Errorf("revoke platform administrator: %w", err)
	}
	return nil
}

// LatestAuditEvents reads the newest audit events first, at most limit (see Audit.Latest).
func (s *Service) LatestAuditEvents(ctx context.Context, limit int) ([]Event, error) {
	return s.audit().Latest(ctx, limit)
}
