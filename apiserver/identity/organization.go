package identity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of workspace administration.
var (
	ErrTenantNotFound     = errors.New("identity: no such active tenant")
	ErrWorkspaceNameTaken = errors.New("identity: a workspace of that name exists")
	ErrInvalidDisplayName = errors.New("identity: a display name is 1 to 128 characters without control characters or surrounding spaces")
)

const maxDisplayNameLength = 128

func validateDisplayName(name string) error {
	if name == "" || strings.TrimSpace(name) != name || utf8.RuneCountInString(name) > maxDisplayNameLength || !utf8.ValidString(name) {
		return ErrInvalidDisplayName
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return ErrInvalidDisplayName
		}
	}
	return nil
}

// Tenant reads a Tenant by id; ErrTenantNotFound when there is none.
func (s *Service) Tenant(ctx context.Context, id string) (Tenant, error) {
	var t Tenant
	err := s.Store.DB().QueryRowContext(ctx, s.q(`SELECT id, name, status, created_at FROM tenants WHERE id = ?`), id).
		Scan(&t.ID, &t.Name, &t.Status, &t.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return t, ErrTenantNotFound
	}
	return t, err
}

// workspaceByID reads a workspace, whatever its status; ErrWorkspaceNotFound when there is none.
func (s *Service) workspaceByID(ctx context.Context, db queryer, id string) (Workspace, error) {
	return s.scanWorkspace(db.QueryRowContext(ctx, s.q(`SELECT `+workspaceColumns+` FROM workspaces w WHERE w.id = ?`), id))
}

// Workspace reads the workspace that selector names, by id or route name, whatever its status.
// It checks no access: callers compare it with the request's resolved context.
func (s *Service) Workspace(ctx context.Context, selector string) (Workspace, error) {
	return s.scanWorkspace(s.Store.DB().QueryRowContext(ctx, s.q(`SELECT `+workspaceColumns+` FROM workspaces w
		WHERE w.id = ? OR w.route_name = ?`), selector, selector))
}

// Workspaces lists every workspace, oldest first, at most limit: what the kube API's reads across
// namespaces cover for the callers that other authorizers let read everything (administrators'
// certificates, the loopback client).
func (s *Service) Workspaces(ctx context.Context, limit int) ([]Workspace, error) {
	rows, err := s.Store.DB().QueryContext(ctx, s.q(`SELECT `+workspaceColumns+` FROM workspaces w ORDER BY w.created_at, w.id LIMIT ?`), limit)
	if err != nil {
		return nil, err
	}
	return scanWorkspaces(rows)
}

// ReadableWorkspaces lists the workspaces the Principal may read, oldest first, of the Tenant
// tenantID or of every Tenant when it is empty: for an active Platform administrator every
// workspace whatever its status, for others the active workspaces of active tenants where they
// hold a role (every role grants workspaces/read), directly or through the Tenant.
func (s *Service) ReadableWorkspaces(ctx context.Context, principalID, tenantID string) ([]Workspace, error) {
	admin, err := s.IsPlatformAdministrator(ctx, principalID)
	if err != nil {
		return nil, err
	}
	var (
		query string
		args  []any
	)
	if admin {
		query, args = `SELECT `+workspaceColumns+` FROM workspaces w WHERE 1 = 1`, nil
	} else {
		query, args = `SELECT `+workspaceColumns+activeWorkspaces+memberOf, []any{principalID}
	}
	if tenantID != "" {
		query += ` AND w.tenant_id = ?`
		args = append(args, tenantID)
	}
	rows, err := s.Store.DB().QueryContext(ctx, s.q(query+` ORDER BY w.created_at, w.id`), args...)
	if err != nil {
		return nil, err
	}
	return scanWorkspaces(rows)
}

// scanWorkspaces reads rows of workspaceColumns and closes them.
func scanWorkspaces(rows *sql.Rows) ([]Workspace, error) {
	defer rows.Close()
	var out []Workspace
	for rows.Next() {
		var w Workspace
		if err := rows.Scan(&w.ID, &w.TenantID, &w.RouteName, &w.DisplayName, &w.Status, &w.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// NewWorkspace is the input of CreateWorkspaceFor.
type NewWorkspace struct {
	TenantID string
	// RouteName is a DNS label, unique for the instance; it names the workspace's namespace.
	RouteName string
	// DisplayName is the route name when empty.
	DisplayName string
}

// CreateWorkspaceFor creates an active workspace in an active Tenant for actorID. Unless the actor
// is a Platform administrator (whose grant covers every workspace, so it gets no membership), the
// actor becomes the workspace's Owner and a member of the Tenant, audited as
// workspace-membership.set. It then calls provision (which creates the namespace); if that fails,
// the workspace and its membership are deleted again and ErrProvisioningFailed is returned.
func (s *Service) CreateWorkspaceFor(ctx context.Context, actorID string, in NewWorkspace, provision func(context.Context, Workspace) error) (Workspace, error) {
	if err := ValidateWorkspaceName(in.RouteName); err != nil {
		return Workspace{}, err
	}
	if in.DisplayName == "" {
		in.DisplayName = in.RouteName
	}
	if err := validateDisplayName(in.DisplayName); err != nil {
		return Workspace{}, err
	}
	admin, err := s.IsPlatformAdministrator(ctx, actorID)
	if err != nil {
		return Workspace{}, err
	}
	now := s.now()
	ws := Workspace{ID: newID(), TenantID: in.TenantID, RouteName: in.RouteName, DisplayName: in.DisplayName, Status: StatusActive, CreatedAt: now}
	err = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		var tenants, taken int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM tenants WHERE id = ? AND status = ?`), in.TenantID, StatusActive).Scan(&tenants); err != nil {
			return err
		}
		if tenants == 0 {
			return ErrTenantNotFound
		}
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM workspaces WHERE route_name = ?`), in.RouteName).Scan(&taken); err != nil {
			return err
		}
		if taken > 0 {
			return ErrWorkspaceNameTaken
		}
		if err := s.insertWorkspace(ctx, tx, ws); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23505" { // a concurrent create of the same name won
				return ErrWorkspaceNameTaken
			}
			return err
		}
		if admin {
			return nil
		}
		if err := s.ensureTenantMember(ctx, tx, ws.TenantID, actorID, now); err != nil {
			return err
		}
		if err := s.upsertWorkspaceRole(ctx, tx, ws.ID, actorID, RoleOwner, now); err != nil {
			return err
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionWorkspaceMembershipSet, Outcome: OutcomeSuccess,
			ActorID: actorID, TargetID: actorID, TenantID: ws.TenantID, WorkspaceID: ws.ID})
	})
	if err != nil {
		return Workspace{}, fmt.Errorf("create workspace: %w", err)
	}
	if err := provision(ctx, ws); err != nil {
		if cerr := s.compensateWorkspace(context.WithoutCancel(ctx), actorID, ws, !admin); cerr != nil {
			return Workspace{}, fmt.Errorf("create workspace: %w: %w (and the compensation failed: %v)", ErrProvisioningFailed, err, cerr)
		}
		return Workspace{}, fmt.Errorf("create workspace: %w: %w", ErrProvisioningFailed, err)
	}
	return ws, nil
}

// compensateWorkspace deletes a workspace whose provisioning failed, with its memberships. The
// audit log is append-only, so an audited Owner membership is recorded as removed again.
func (s *Service) compensateWorkspace(ctx context.Context, actorID string, ws Workspace, owner bool) error {
	return s.Store.InTx(ctx, func(tx *sql.Tx) error {
		for _, d := range []string{
			`DELETE FROM memberships WHERE scope_kind = 'workspace' AND scope_id = ?`,
			`DELETE FROM principal_default_contexts WHERE workspace_id = ?`,
			`DELETE FROM workspaces WHERE id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, s.q(d), ws.ID); err != nil {
				return err
			}
		}
		if !owner {
			return nil
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionWorkspaceMembershipRemoved, Outcome: OutcomeSuccess,
			ActorID: actorID, TargetID: actorID, TenantID: ws.TenantID, WorkspaceID: ws.ID, ReasonCode: "provisioning-failed"})
	})
}

// recordDefaultContext declares the Tenant and Workspace the Principal acts in when a request
// selects none (see DefaultWorkspace).
func (s *Service) recordDefaultContext(ctx context.Context, tx *sql.Tx, principalID string, ws Workspace, now time.Time) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO principal_default_contexts (principal_id, tenant_id, workspace_id, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (principal_id) DO UPDATE SET tenant_id = excluded.tenant_id, workspace_id = excluded.workspace_id, updated_at = excluded.updated_at`),
		principalID, ws.TenantID, ws.ID, now)
	return err
}
