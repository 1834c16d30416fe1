-- +goose Up
-- Tenancy: tenants, their workspaces, memberships and the Platform administrator grants, and the
-- marker of the one-time bootstrap.

-- status: Active or Disabled. Names are display names; ids are stable.
CREATE TABLE tenants (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('Active', 'Disabled')),
    created_at DATETIME NOT NULL
);

-- route_name is a DNS label, unique for the instance: it selects the workspace in requests and is
-- the name of the workspace's kube namespace.
CREATE TABLE workspaces (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id),
    route_name   TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('Active', 'Disabled')),
    created_at   DATETIME NOT NULL
);
CREATE INDEX workspaces_tenant_id ON workspaces (tenant_id);

-- A membership and its role at one scope: a tenant (inherited by its workspaces) or a workspace.
-- scope_id is a tenants.id or a workspaces.id according to scope_kind.
CREATE TABLE memberships (
    principal_id TEXT NOT NULL REFERENCES principals (id),
    scope_kind   TEXT NOT NULL CHECK (scope_kind IN ('tenant', 'workspace')),
    scope_id     TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('Owner', 'Admin', 'Member', 'Viewer')),
    created_at   DATETIME NOT NULL,
    PRIMARY KEY (principal_id, scope_kind, scope_id)
);
CREATE INDEX memberships_scope ON memberships (scope_kind, scope_id);

-- The instance-level grant, distinct from any membership. granted_by is empty for the grant made
-- by the bootstrap.
CREATE TABLE platform_administrators (
    principal_id TEXT PRIMARY KEY REFERENCES principals (id),
    granted_at   DATETIME NOT NULL,
    granted_by   TEXT NOT NULL DEFAULT ''
);

-- At most one row: written in the bootstrap's transaction, so that concurrent bootstraps collide
-- on the primary key and exactly one wins. The identity store is initialized once this row or any
-- local account exists.
CREATE TABLE identity_bootstrap (
    singleton       INTEGER PRIMARY KEY CHECK (singleton = 1),
    principal_id    TEXT NOT NULL,
    bootstrapped_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE identity_bootstrap;
DROP TABLE platform_administrators;
DROP TABLE memberships;
DROP TABLE workspaces;
DROP TABLE tenants;
