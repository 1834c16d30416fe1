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

	"k8s.io/apimachinery/pkg/util/validation"

	"platform.dev/platform/apis/platform/ownerscope"
)

// Errors of bootstrap and tenancy.
var (
	ErrAlreadyInitialized   = errors.New("identity: the identity store is already initialized")
	ErrInvalidWorkspaceName = errors.New("identity: a workspace name is a DNS label (lowercase letters, digits and '-', at most 63 characters) not starting with kube- or platform-tenant- and other than platform-instance")
	ErrInvalidTenantName    = errors.New("identity: a tenant name is 1 to 128 characters without control characters or surrounding spaces")
	ErrWorkspaceNotFound    = errors.New("identity: no such workspace for the caller")
	ErrProvisioningFailed   = errors.New("identity: provisioning the workspace failed; the bootstrap was undone")
)

const maxTenantNameLength = 128

// Tenant is an organization that owns workspaces.
type Tenant struct {
	ID        string
	Name      string
	Status    string
	CreatedAt time.Time
}

// Workspace belongs to one Tenant. RouteName selects it in requests and names its kube namespace.
type Workspace struct {
	ID          string
	TenantID    string
	RouteName   string
	DisplayName string
	Status      string
	CreatedAt   time.Time
}

// BootstrapRequest is the input of Bootstrap: the first administrator's credentials and the
// initial Tenant and Workspace. WorkspaceName is the route name; it is also the display name.
type BootstrapRequest struct {
	Username      string
	Password      string
	DisplayName   string
	TenantName    string
	WorkspaceName string
}

// ValidateWorkspaceName checks a workspace route name: a DNS label that kube accepts as a
// namespace name, outside the kube- prefix kube reserves for itself and the names of the
// instance's and tenants' own namespaces (see package scope).
func ValidateWorkspaceName(name string) error {
	if len(validation.IsDNS1123Label(name)) > 0 || strings.HasPrefix(name, "kube-") || ownerscope.IsReservedNamespace(name) {
		return ErrInvalidWorkspaceName
	}
	return nil
}

func validateTenantName(name string) error {
	if name == "" || strings.TrimSpace(name) != name || utf8.RuneCountInString(name) > maxTenantNameLength || !utf8.ValidString(name) {
		return ErrInvalidTenantName
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return ErrInvalidTenantName
		}
	}
	return nil
}

// Initialized reports whether the identity store was initialized: the bootstrap marker exists or
// any local account does (an account, however made, means there is a way in and bootstrap must
// not create another).
func (s *Service) Initialized(ctx context.Context) (bool, error) {
	return s.initialized(ctx, s.Store.DB())
}

func (s *Service) initialized(ctx context.Context, db queryer) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM identity_bootstrap) + (SELECT COUNT(*) FROM local_accounts)`).Scan(&n)
	return n > 0, err
}

// Bootstrap creates the first local account, its Human Principal, the first Platform
// administrator grant (no membership and no role: the grant covers every active workspace), the
// initial Tenant and Workspace, and the administrator's declared default context (that Tenant and
// Workspace, see DefaultWorkspace), all in one transaction that also writes the bootstrap marker, so
// that of concurrent bootstraps exactly one commits. It then calls provision (which creates the
// workspace's namespace); if that fails, everything created is deleted again as compensation, the
// store is uninitialized again and the error is returned. On success it opens a session and
// audits local-account.created, platform-administrator.granted and instance.bootstrapped.
// Once initialized it fails with ErrAlreadyInitialized.
func (s *Service) Bootstrap(ctx context.Context, in BootstrapRequest, provision func(context.Context, Workspace) error) (Session, Principal, Workspace, error) {
	fail := func(err error) (Session, Principal, Workspace, error) {
		return Session{}, Principal{}, Workspace{}, err
	}
	if ok, err := s.Initialized(ctx); err != nil {
		return fail(err)
	} else if ok {
		return fail(ErrAlreadyInitialized)
	}
	normalized, err := NormalizeUsername(in.Username)
	if err != nil {
		return fail(err)
	}
	if err := ValidatePassword(in.Password); err != nil {
		return fail(err)
	}
	if err := validateTenantName(in.TenantName); err != nil {
		return fail(err)
	}
	if err := ValidateWorkspaceName(in.WorkspaceName); err != nil {
		return fail(err)
	}
	hash, err := HashPassword(in.Password)
	if err != nil {
		return fail(err)
	}
	now := s.now()
	p := Principal{ID: newID(), Kind: KindHuman, DisplayName: in.DisplayName, Status: StatusActive, CreatedAt: now}
	if p.DisplayName == "" {
		p.DisplayName = in.Username
	}
	acct := LocalAccount{AccountID: newID(), PrincipalID: p.ID, Username: in.Username, CreatedAt: now}
	tenant := Tenant{ID: newID(), Name: in.TenantName, Status: StatusActive, CreatedAt: now}
	ws := Workspace{ID: newID(), TenantID: tenant.ID, RouteName: in.WorkspaceName, DisplayName: in.WorkspaceName, Status: StatusActive, CreatedAt: now}

	err = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.initialized(ctx, tx); err != nil {
			return err
		} else if ok {
			return ErrAlreadyInitialized
		}
		// A concurrent bootstrap that got here too collides on the marker's primary key (SQLite
		// serializes writers; PostgreSQL reports a unique violation to the loser).
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO identity_bootstrap (singleton, principal_id, bootstrapped_at) VALUES (1, ?, ?)`), p.ID, now); err != nil {
			return errors.Join(ErrAlreadyInitialized, err)
		}
		if err := s.insertLocalAccount(ctx, tx, p, acct, normalized, hash); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO platform_administrators (principal_id, granted_at, granted_by) VALUES (?, ?, '')`), p.ID, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO tenants (id, name, status, created_at) VALUES (?, ?, ?, ?)`),
			tenant.ID, tenant.Name, tenant.Status, now); err != nil {
			return err
		}
		if err := s.insertWorkspace(ctx, tx, ws); err != nil {
			return err
		}
		return s.recordDefaultContext(ctx, tx, p.ID, ws, now)
	})
	if err != nil {
		return fail(fmt.Errorf("bootstrap: %w", err))
	}

	if err := provision(ctx, ws); err != nil {
		if cerr := s.compensateBootstrap(context.WithoutCancel(ctx), p, acct, tenant, ws); cerr != nil {
			return fail(fmt.Errorf("bootstrap: %w: %w (and the compensation failed: %v)", ErrProvisioningFailed, err, cerr))
		}
		return fail(fmt.Errorf("bootstrap: %w: %w", ErrProvisioningFailed, err))
	}

	var sess Session
	err = s.Store.InTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		cur, err := s.readAccount(ctx, tx, `a.account_id = ?`, acct.AccountID)
		if err != nil {
			return err
		}
		if sess, err = s.openSession(ctx, tx, cur, now); err != nil {
			return err
		}
		for _, e := range []Event{
			{Action: ActionLocalAccountCreated, Outcome: OutcomeSuccess, TargetID: p.ID},
			{Action: ActionPlatformAdministratorGranted, Outcome: OutcomeSuccess, TargetID: p.ID},
			{Action: ActionInstanceBootstrapped, Outcome: OutcomeSuccess, ActorID: p.ID, TargetID: p.ID, TenantID: tenant.ID, WorkspaceID: ws.ID},
		} {
			if err := s.audit().Record(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fail(fmt.Errorf("bootstrap: %w", err))
	}
	return sess, p, ws, nil
}

// compensateBootstrap deletes what Bootstrap created, the marker included, and audits the failed
// bootstrap.
func (s *Service) compensateBootstrap(ctx context.Context, p Principal, acct LocalAccount, tenant Tenant, ws Workspace) error {
	return s.Store.InTx(ctx, func(tx *sql.Tx) error {
		for _, d := range []struct{ query, arg string }{
			{`DELETE FROM principal_default_contexts WHERE principal_id = ?`, p.ID},
			{`DELETE FROM workspaces WHERE id = ?`, ws.ID},
			{`DELETE FROM tenants WHERE id = ?`, tenant.ID},
			{`DELETE FROM platform_administrators WHERE principal_id = ?`, p.ID},
			{`DELETE FROM sessions WHERE account_id = ?`, acct.AccountID},
			{`DELETE FROM local_accounts WHERE account_id = ?`, acct.AccountID},
			{`DELETE FROM principals WHERE id = ?`, p.ID},
			{`DELETE FROM identity_bootstrap WHERE principal_id = ?`, p.ID},
		} {
			if _, err := tx.ExecContext(ctx, s.q(d.query), d.arg); err != nil {
				return err
			}
		}
		return s.audit().Record(ctx, tx, Event{Action: ActionInstanceBootstrapped, Outcome: OutcomeFailure, ReasonCode: "provisioning-failed"})
	})
}

func (s *Service) insertWorkspace(ctx context.Context, tx *sql.Tx, ws Workspace) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO workspaces (id, tenant_id, route_name, display_name, status, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
		ws.ID, ws.TenantID, ws.RouteName, ws.DisplayName, ws.Status, ws.CreatedAt)
	return err
}

// CreateWorkspace adds an active Workspace to a Tenant. Provisioning its namespace is the
// caller's concern. (The audited, authorized route comes with workspace management.)
func (s *Service) CreateWorkspace(ctx context.Context, tenantID, routeName, displayName string) (Workspace, error) {
	if err := ValidateWorkspaceName(routeName); err != nil {
		return Workspace{}, err
	}
	if displayName == "" {
		displayName = routeName
	}
	ws := Workspace{ID: newID(), TenantID: tenantID, RouteName: routeName, DisplayName: displayName, Status: StatusActive, CreatedAt: s.now()}
	err := s.Store.InTx(ctx, func(tx *sql.Tx) error { return s.insertWorkspace(ctx, tx, ws) })
	if err != nil {
		return Workspace{}, fmt.Errorf("create workspace: %w", err)
	}
	return ws, nil
}

// IsPlatformAdministrator reports whether the Principal holds the instance grant and is active: a
// disabled Principal keeps its grant, which applies again once it is enabled.
func (s *Service) IsPlatformAdministrator(ctx context.Context, principalID string) (bool, error) {
	generation, err := s.generation(ctx)
	if err != nil {
		return false, err
	}
	key := cachedAdministrator + principalID
	if v, ok := s.cache.get(generation, key); ok {
		return v.(bool), nil
	}
	err = s.requireActiveAdministrator(ctx, s.Store.DB(), principalID)
	if errors.Is(err, ErrNotPlatformAdministrator) {
		s.cache.put(generation, key, false)
		return false, nil
	}
	if err == nil {
		s.cache.put(generation, key, true)
	}
	return err == nil, err
}

const workspaceColumns = `w.id, w.tenant_id, w.route_name, w.display_name, w.status, w.created_at`

// activeWorkspaces are the active workspaces of active tenants.
const activeWorkspaces = ` FROM workspaces w JOIN tenants t ON t.id = w.tenant_id WHERE w.status = 'Active' AND t.status = 'Active'`

// memberOf is the condition that the Principal (the first argument) has a membership in the
// workspace w, directly or through its tenant.
const memberOf = ` AND EXISTS (SELECT 1 FROM memberships m WHERE m.principal_id = ? AND
	((m.scope_kind = 'workspace' AND m.scope_id = w.id) OR (m.scope_kind = 'tenant' AND m.scope_id = w.tenant_id)))`

func (s *Service) scanWorkspace(row *sql.Row) (Workspace, error) {
	var w Workspace
	err := row.Scan(&w.ID, &w.TenantID, &w.RouteName, &w.DisplayName, &w.Status, &w.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return w, ErrWorkspaceNotFound
	}
	return w, err
}

// DefaultWorkspace is the workspace a Principal acts in when a request selects none. For a
// Platform administrator: its declared default context (recorded by the bootstrap) while that
// workspace is active, else the first active workspace it is a member of, else the first active
// workspace. For others: the first active workspace they are a member of (directly or through
// the tenant). ErrWorkspaceNotFound when there is none.
func (s *Service) DefaultWorkspace(ctx context.Context, principalID string) (Workspace, error) {
	generation, err := s.generation(ctx)
	if err != nil {
		return Workspace{}, err
	}
	key := cachedDefaultWorkspace + principalID
	if v, ok := s.cache.get(generation, key); ok {
		return v.(Workspace), nil
	}
	w, err := s.defaultWorkspace(ctx, principalID)
	if err == nil {
		s.cache.put(generation, key, w)
	}
	return w, err
}

func (s *Service) defaultWorkspace(ctx context.Context, principalID string) (Workspace, error) {
	admin, err := s.IsPlatformAdministrator(ctx, principalID)
	if err != nil {
		return Workspace{}, err
	}
	if admin {
		w, err := s.scanWorkspace(s.Store.DB().QueryRowContext(ctx, s.q(`SELECT `+workspaceColumns+activeWorkspaces+
			` AND w.id = (SELECT workspace_id FROM principal_default_contexts WHERE principal_id = ?)`), principalID))
		if !errors.Is(err, ErrWorkspaceNotFound) {
			return w, err
		}
	}
	w, err := s.scanWorkspace(s.Store.DB().QueryRowContext(ctx, s.q(`SELECT `+workspaceColumns+activeWorkspaces+memberOf+
		` ORDER BY w.created_at, w.id LIMIT 1`), principalID))
	if !errors.Is(err, ErrWorkspaceNotFound) || !admin {
		return w, err
	}
	return s.scanWorkspace(s.Store.DB().QueryRowContext(ctx, s.q(`SELECT `+workspaceColumns+activeWorkspaces+
		` ORDER BY w.created_at, w.id LIMIT 1`)))
}

// AccessibleWorkspace returns the workspace of routeName if the Principal may select it: it is
// active, of an active tenant, and the Principal is a member of it (directly or through its
// tenant) or a Platform administrator. Otherwise ErrWorkspaceNotFound, whether the workspace does
// not exist or is someone else's.
func (s *Service) AccessibleWorkspace(ctx context.Context, principalID, routeName string) (Workspace, error) {
	w, err := s.scanWorkspace(s.Store.DB().QueryRowContext(ctx, s.q(`SELECT `+workspaceColumns+activeWorkspaces+memberOf+
		` AND w.route_name = ?`), principalID, routeName))
	if !errors.Is(err, ErrWorkspaceNotFound) {
		return w, err
	}
	admin, err := s.IsPlatformAdministrator(ctx, principalID)
	if err != nil || !admin {
		return Workspace{}, errors.Join(ErrWorkspaceNotFound, err)
	}
	return s.scanWorkspace(s.Store.DB().QueryRowContext(ctx, s.q(`SELECT `+workspaceColumns+activeWorkspaces+
		` AND w.route_name = ?`), routeName))
}
