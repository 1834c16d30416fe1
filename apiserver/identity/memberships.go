package identity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Scopes of a membership's role.
const (
	ScopeTenant    = "tenant"
	ScopeWorkspace = "workspace"
)

// Errors of membership administration.
var (
	ErrMembershipNotFound = errors.New("identity: the principal has no membership in the workspace")
	ErrLastOwner          = errors.New("identity: the final effective Owner of a workspace cannot be demoted or removed")
	ErrRoleAboveCaller    = errors.New("identity: a caller may set, change or remove only roles whose permissions it holds in the workspace")
)

// Membership is the role of a Principal at one scope: a workspace, or a tenant (inherited by
// every workspace of the tenant).
type Membership struct {
	Principal Principal
	// ScopeKind is ScopeTenant or ScopeWorkspace; ScopeID the tenant's or the workspace's id.
	ScopeKind string
	ScopeID   string
	Role      Role
	CreatedAt time.Time
}

type rowsQueryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

const membershipColumns = `p.id, p.kind, p.display_name, p.email, p.status, p.created_at, m.scope_kind, m.scope_id, m.role, m.created_at
	FROM memberships m JOIN principals p ON p.id = m.principal_id`

func (s *Service) queryMemberships(ctx context.Context, db rowsQueryer, where string, args ...any) ([]Membership, error) {
	rows, err := db.QueryContext(ctx, s.q(`SELECT `+membershipColumns+` WHERE `+where+` ORDER BY m.created_at, p.id, m.scope_kind`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Membership
	for rows.Next() {
		var (
			m     Membership
			email sql.NullString
			role  string
		)
		if err := rows.Scan(&m.Principal.ID, &m.Principal.Kind, &m.Principal.DisplayName, &email, &m.Principal.Status, &m.Principal.CreatedAt,
			&m.ScopeKind, &m.ScopeID, &role, &m.CreatedAt); err != nil {
			return nil, err
		}
		m.Principal.Email, m.Role = email.String, Role(role)
		out = append(out, m)
	}
	return out, rows.Err()
}

// WorkspaceMemberships lists the roles that apply in the workspace: its own memberships and the
// tenant-scoped ones its Tenant passes on.
func (s *Service) WorkspaceMemberships(ctx context.Context, workspaceID string) ([]Membership, error) {
	ws, err := s.workspaceByID(ctx, s.Store.DB(), workspaceID)
	if err != nil {
		return nil, err
	}
	return s.queryMemberships(ctx, s.Store.DB(), `(m.scope_kind = 'workspace' AND m.scope_id = ?) OR (m.scope_kind = 'tenant' AND m.scope_id = ?)`,
		ws.ID, ws.TenantID)
}

// ensureTenantMember makes the Principal a member of the Tenant unless it is one.
func (s *Service) ensureTenantMember(ctx context.Context, tx *sql.Tx, tenantID, principalID string, now time.Time) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO tenant_members (tenant_id, principal_id, created_at) VALUES (?, ?, ?)
		ON CONFLICT (tenant_id, principal_id) DO NOTHING`), tenantID, principalID, now)
	return err
}

// upsertWorkspaceRole sets the Principal's role in the workspace, keeping the membership's
// creation time when it exists.
func (s *Service) upsertWorkspaceRole(ctx context.Context, tx *sql.Tx, workspaceID, principalID string, role Role, now time.Time) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO memberships (principal_id, scope_kind, scope_id, role, created_at) VALUES (?, 'workspace', ?, ?, ?)
		ON CONFLICT (principal_id, scope_kind, scope_id) DO UPDATE SET role = excluded.role`), principalID, workspaceID, string(role), now)
	return err
}

// workspaceRole is the Principal's own role in the workspace; "" without one.
func (s *Service) workspaceRole(ctx context.Context, db queryer, workspaceID, principalID string) (Role, error) {
	var role string
	err := db.QueryRowContext(ctx, s.q(`SELECT role FROM memberships WHERE principal_id = ? AND scope_kind = 'workspace' AND scope_id = ?`),
		principalID, workspaceID).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return Role(role), err
}

// permissionsIn are the Principal's effective permissions in the workspace: every permission for
// an active Platform administrator, else the union of its roles there and in the workspace's
// Tenant; none for an inactive Principal.
func (s *Service) permissionsIn(ctx context.Context, db interface {
	queryer
	rowsQueryer
}, principalID string, ws Workspace) (Permissions, error) {
	p, err := s.readPrincipal(ctx, db, principalID)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil || p.Status != StatusActive {
		return 0, err
	}
	if admin, err := s.isAdministrator(ctx, db, principalID); err != nil || admin {
		return AllPermissions, err
	}
	rows, err := db.QueryContext(ctx, s.q(`SELECT role FROM memberships WHERE principal_id = ? AND
		((scope_kind = 'workspace' AND scope_id = ?) OR (scope_kind = 'tenant' AND scope_id = ?))`), principalID, ws.ID, ws.TenantID)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var set Permissions
	for rows.Next() {
		var role string
		if err := rows.Scan(&role); err != nil {
			return 0, err
		}
		set |= Role(role).Permissions()
	}
	return set, rows.Err()
}

// otherEffectiveOwners counts the active Principals other than principalID's own workspace
// membership that are Owners of the workspace, directly or through its Tenant.
func (s *Service) otherEffectiveOwners(ctx context.Context, db queryer, ws Workspace, principalID string) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, s.q(`SELECT COUNT(DISTINCT m.principal_id) FROM memberships m JOIN principals p ON p.id = m.principal_id
		WHERE p.status = ? AND m.role = ?
		AND ((m.scope_kind = 'workspace' AND m.scope_id = ?) OR (m.scope_kind = 'tenant' AND m.scope_id = ?))
		AND NOT (m.principal_id = ? AND m.scope_kind = 'workspace')`),
		StatusActive, string(RoleOwner), ws.ID, ws.TenantID, principalID).Scan(&n)
	return n, err
}

// changeWorkspaceRole runs the checks of a change of principalID's workspace role from current to
// next ("" for none) by actorID, in tx: the actor must hold every permission of both roles, and
// the change must leave the workspace an effective Owner if it takes one away.
func (s *Service) changeWorkspaceRole(ctx context.Context, tx *sql.Tx, actorID string, ws Workspace, principalID string, target Principal, current, next Role) error {
	actor, err := s.permissionsIn(ctx, tx, actorID, ws)
	if err != nil {
		return err
	}
	need := current.Permissions() | next.Permissions()
	if actor&need != need {
		return ErrRoleAboveCaller
	}
	if current == RoleOwner && next != RoleOwner && target.Status == StatusActive {
		others, err := s.otherEffectiveOwners(ctx, tx, ws, principalID)
		if err != nil {
			return err
		}
		if others == 0 {
			return ErrLastOwner
		}
	}
	return nil
}

// withMembershipLock runs fn in a transaction that holds the membership lock.
func (s *Service) withMembershipLock(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.serialized(ctx, &s.memberships, membershipsLockKey, fn)
}

// SetWorkspaceMembership gives principalID the role in the workspace, for actorID, and makes the
// Principal a member of the workspace's Tenant if it is not one; it audits
// workspace-membership.set when something changed. Rejected: ErrPrincipalNotFound,
// ErrWorkspaceNotFound, ErrRoleAboveCaller when the actor lacks a permission of the old or the new
// role, ErrLastOwner when it would demote the final effective Owner.
func (s *Service) SetWorkspaceMembership(ctx context.Context, actorID, workspaceID, principalID string, role Role) (Membership, error) {
	if _, err := ParseRole(string(role)); err != nil {
		return Membership{}, err
	}
	var out Membership
	err := s.withMembershipLock(ctx, func(tx *sql.Tx) error {
		ws, err := s.workspaceByID(ctx, tx, workspaceID)
		if err != nil {
			return err
		}
		target, err := s.readPrincipal(ctx, tx, principalID)
		if errors.Is(err, ErrNotFound) {
			return ErrPrincipalNotFound
		}
		if err != nil {
			return err
		}
		current, err := s.workspaceRole(ctx, tx, ws.ID, principalID)
		if err != nil {
			return err
		}
		if err := s.changeWorkspaceRole(ctx, tx, actorID, ws, principalID, target, current, role); err != nil {
			return err
		}
		now := s.now()
		var members int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM tenant_members WHERE tenant_id = ? AND principal_id = ?`),
			ws.TenantID, principalID).Scan(&members); err != nil {
			return err
		}
		if current != role || members == 0 {
			if err := s.ensureTenantMember(ctx, tx, ws.TenantID, principalID, now); err != nil {
				return err
			}
			if err := s.upsertWorkspaceRole(ctx, tx, ws.ID, principalID, role, now); err != nil {
				return err
			}
			if err := s.audit().Record(ctx, tx, Event{Action: ActionWorkspaceMembershipSet, Outcome: OutcomeSuccess,
				ActorID: actorID, TargetID: principalID, TenantID: ws.TenantID, WorkspaceID: ws.ID}); err != nil {
				return err
			}
		}
		ms, err := s.queryMemberships(ctx, tx, `m.principal_id = ? AND m.scope_kind = 'workspace' AND m.scope_id = ?`, principalID, ws.ID)
		if err != nil {
			return err
		}
		if len(ms) != 1 {
			return fmt.Errorf("identity: the membership just written is missing")
		}
		out = ms[0]
		return nil
	})
	if err != nil {
		return Membership{}, fmt.Errorf("set workspace membership: %w", err)
	}
	return out, nil
}

// RemoveWorkspaceMembership removes principalID's own role in the workspace, for actorID, and
// audits workspace-membership.removed. The Tenant membership stays. Rejected:
// ErrMembershipNotFound, ErrRoleAboveCaller, ErrLastOwner (see SetWorkspaceMembership).
func (s *Service) RemoveWorkspaceMembership(ctx context.Context, actorID, workspaceID, principalID string) error {
	err := s.withMembershipLock(ctx, func(tx *sql.Tx) error {
		ws, err := s.workspaceByID(ctx, tx, workspaceID)
		if err != nil {
			return err
		}
		current, err := s.workspaceRole(ctx, tx, ws.ID, principalID)
		if err != nil {
			return err
		}
		if current == "" {
			return ErrMembershipNotFound
		}
		target, err := s.readPrincipal(ctx, tx, principalID)
		if err != nil {
			return err
		}
		if err := s.changeWorkspaceRole(ctx, tx, actorID, ws, principalID, target, current, ""); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM memberships WHERE principal_id = ? AND scope_kind = 'workspace' AND scope_id = ?`),
			principalID, ws.ID); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionWorkspaceMembershipRemoved, Outcome: OutcomeSuccess,
			ActorID: actorID, TargetID: principalID, TenantID: ws.TenantID, WorkspaceID: ws.ID})
	})
	if err != nil {
		return fmt.Errorf("remove workspace membership: %w", err)
	}
	return nil
}

// Member is a member of an organization (Tenant) with its roles there.
type Member struct {
	Principal Principal
	// Roles are the member's tenant-scoped role and its roles in the Tenant's workspaces.
	Roles []Membership
}

// OrganizationMembers lists the members of the Tenant, oldest first: the Principals with a Tenant
// membership, a tenant-scoped role, or a role in one of its workspaces.
func (s *Service) OrganizationMembers(ctx context.Context, tenantID string) ([]Member, error) {
	db := s.Store.DB()
	rows, err := db.QueryContext(ctx, s.q(`SELECT p.id, p.kind, p.display_name, p.email, p.status, p.created_at FROM principals p
		WHERE p.id IN (SELECT principal_id FROM tenant_members WHERE tenant_id = ?)
		OR p.id IN (SELECT principal_id FROM memberships WHERE scope_kind = 'tenant' AND scope_id = ?)
		OR p.id IN (SELECT m.principal_id FROM memberships m JOIN workspaces w ON m.scope_kind = 'workspace' AND m.scope_id = w.id WHERE w.tenant_id = ?)
		ORDER BY p.created_at, p.id`), tenantID, tenantID, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		members []Member
		index   = map[string]int{}
	)
	for rows.Next() {
		var (
			p     Principal
			email sql.NullString
		)
		if err := rows.Scan(&p.ID, &p.Kind, &p.DisplayName, &email, &p.Status, &p.CreatedAt); err != nil {
			return nil, err
		}
		p.Email = email.String
		index[p.ID] = len(members)
		members = append(members, Member{Principal: p})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	roles, err := s.queryMemberships(ctx, db, `(m.scope_kind = 'tenant' AND m.scope_id = ?) OR
		(m.scope_kind = 'workspace' AND m.scope_id IN (SELECT id FROM workspaces WHERE tenant_id = ?))`, tenantID, tenantID)
	if err != nil {
		return nil, err
	}
	for _, m := range roles {
		if i, ok := index[m.Principal.ID]; ok {
			members[i].Roles = append(members[i].Roles, m)
		}
	}
	return members, nil
}
