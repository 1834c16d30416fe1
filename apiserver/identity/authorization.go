package identity

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// Permission is one entry of the permission catalog.
type Permission string

// The permission catalog, exactly as the spec names it.
const (
	PermTenantsRead        Permission = "tenants/read"
	PermTenantsManage      Permission = "tenants/manage"
	PermWorkspacesRead     Permission = "workspaces/read"
	PermWorkspacesWrite    Permission = "workspaces/write"
	PermWorkspacesDelete   Permission = "workspaces/delete"
	PermResourcesRead      Permission = "resources/read"
	PermResourcesWrite     Permission = "resources/write"
	PermResourcesDelete    Permission = "resources/delete"
	PermRunsRead           Permission = "runs/read"
	PermRunsExecute        Permission = "runs/execute"
	PermRunsDelete         Permission = "runs/delete"
	PermAuthorizationRead  Permission = "authorization/read"
	PermAuthorizationWrite Permission = "authorization/write"
)

// Catalog lists every permission in the spec's order; a permission's bit in Permissions is its
// index here.
var Catalog = []Permission{
	PermTenantsRead, PermTenantsManage,
	PermWorkspacesRead, PermWorkspacesWrite, PermWorkspacesDelete,
	PermResourcesRead, PermResourcesWrite, PermResourcesDelete,
	PermRunsRead, PermRunsExecute, PermRunsDelete,
	PermAuthorizationRead, PermAuthorizationWrite,
}

// Permissions is a set of catalog permissions.
type Permissions uint16

// AllPermissions holds the whole catalog.
var AllPermissions = PermissionsOf(Catalog...)

func bit(p Permission) Permissions {
	for i, c := range Catalog {
		if c == p {
			return 1 << i
		}
	}
	return 0
}

// PermissionsOf is the set of ps.
func PermissionsOf(ps ...Permission) Permissions {
	var set Permissions
	for _, p := range ps {
		set |= bit(p)
	}
	return set
}

// Has reports whether p is in the set.
func (s Permissions) Has(p Permission) bool {
	b := bit(p)
	return b != 0 && s&b == b
}

// List is the set in catalog order.
func (s Permissions) List() []Permission {
	out := make([]Permission, 0, bits.OnesCount16(uint16(s)))
	for i, p := range Catalog {
		if s&(1<<i) != 0 {
			out = append(out, p)
		}
	}
	return out
}

// ParsePermission checks that name is in the catalog.
func ParsePermission(name string) (Permission, error) {
	p := Permission(name)
	if bit(p) == 0 {
		return "", fmt.Errorf("identity: unknown permission %q", name)
	}
	return p, nil
}

// Role is a membership role.
type Role string

// Roles, from the most to the least privileged.
const (
	RoleOwner  Role = "Owner"
	RoleAdmin  Role = "Admin"
	RoleMember Role = "Member"
	RoleViewer Role = "Viewer"
)

// Roles lists every role, most privileged first.
var Roles = []Role{RoleOwner, RoleAdmin, RoleMember, RoleViewer}

var rolePermissions = map[Role]Permissions{
	RoleOwner: AllPermissions,
	RoleAdmin: PermissionsOf(PermTenantsRead, PermWorkspacesRead, PermWorkspacesWrite,
		PermResourcesRead, PermResourcesWrite, PermResourcesDelete,
		PermRunsRead, PermRunsExecute, PermRunsDelete,
		PermAuthorizationRead, PermAuthorizationWrite),
	RoleMember: PermissionsOf(PermWorkspacesRead, PermResourcesRead, PermRunsRead, PermRunsExecute),
	RoleViewer: PermissionsOf(PermWorkspacesRead, PermResourcesRead, PermRunsRead),
}

// Permissions of the role; none for an unknown role.
func (r Role) Permissions() Permissions { return rolePermissions[r] }

// ErrUnknownRole is returned by ParseRole.
var ErrUnknownRole = errors.New("identity: a role is Owner, Admin, Member or Viewer")

// ParseRole checks that name is a role.
func ParseRole(name string) (Role, error) {
	r := Role(name)
	if _, ok := rolePermissions[r]; !ok {
		return "", ErrUnknownRole
	}
	return r, nil
}

// Access is what a Principal may do in one Workspace.
type Access struct {
	Workspace Workspace
	// Permissions are the union of the Principal's roles in the Workspace and its Tenant; every
	// permission for a Platform administrator.
	Permissions Permissions
}

// Access resolves what the Principal may do in the workspace selected by selector, its id or its
// route name. The workspace and its tenant must be active, and the Principal active and a member
// (directly or through the tenant) or a Platform administrator; otherwise ErrWorkspaceNotFound,
// whether the workspace does not exist or is someone else's.
func (s *Service) Access(ctx context.Context, principalID, selector string) (Access, error) {
	if selector == "" {
		return Access{}, ErrWorkspaceNotFound
	}
	generation, err := s.generation(ctx)
	if err != nil {
		return Access{}, err
	}
	key := cachedAccess + principalID + "\x00" + selector
	if v, ok := s.cache.get(generation, key); ok {
		return v.(Access), nil
	}
	db := s.Store.DB()
	ws, err := s.scanWorkspace(db.QueryRowContext(ctx, s.q(`SELECT `+workspaceColumns+activeWorkspaces+
		` AND (w.id = ? OR w.route_name = ?)`), selector, selector))
	if err != nil {
		return Access{}, err
	}
	permissions, err := s.permissionsIn(ctx, db, principalID, ws)
	if err != nil {
		return Access{}, err
	}
	// Every role grants something, so no permission means no role: not a member.
	if permissions == 0 {
		return Access{}, ErrWorkspaceNotFound
	}
	a := Access{Workspace: ws, Permissions: permissions}
	s.cache.put(generation, key, a)
	return a, nil
}

// String is the set as a comma-separated list, for messages.
func (s Permissions) String() string {
	names := make([]string, 0, len(Catalog))
	for _, p := range s.List() {
		names = append(names, string(p))
	}
	return strings.Join(names, ",")
}

// IsOwnerOrAdmin reports whether the Principal, active, is an Owner or an Admin of the workspace
// or of its tenant, or a Platform administrator (who holds every permission in every workspace):
// those who may answer an escalated question. The question is re-addressed (notified) to the
// workspace's and tenant's Owners and Admins; a Platform administrator may answer it too, so that
// an instance whose only administrator is its Platform administrator is not left with a question
// nobody may answer.
func (s *Service) IsOwnerOrAdmin(ctx context.Context, principalID, workspaceID string) (bool, error) {
	return s.IsOwnerOrAdminIn(ctx, s.Store.DB(), principalID, workspaceID)
}

// IsOwnerOrAdminIn is IsOwnerOrAdmin read through db: a transaction of the same store, for a
// decision that must hold until it commits.
func (s *Service) IsOwnerOrAdminIn(ctx context.Context, db queryer, principalID, workspaceID string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM principals p WHERE p.id = ? AND p.status = 'Active' AND (
		EXISTS (SELECT 1 FROM platform_administrators g WHERE g.principal_id = p.id) OR
		EXISTS (SELECT 1 FROM memberships m JOIN workspaces w ON w.id = ?
			WHERE m.principal_id = p.id AND m.role IN ('Owner', 'Admin') AND
			((m.scope_kind = 'workspace' AND m.scope_id = w.id) OR (m.scope_kind = 'tenant' AND m.scope_id = w.tenant_id))))`),
		principalID, workspaceID).Scan(&n)
	return n > 0, err
}
