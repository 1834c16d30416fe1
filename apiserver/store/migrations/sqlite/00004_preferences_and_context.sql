-- +goose Up
-- Principal preferences, the declared default context of a Principal, and Tenant memberships.

-- Global per Principal. IF NOT EXISTS: the spec has the preferences table added idempotently at
-- initialization, so a database that already has it keeps it.
CREATE TABLE IF NOT EXISTS principal_preferences (
    principal_id TEXT PRIMARY KEY REFERENCES principals (id) ON DELETE CASCADE,
    theme        TEXT NOT NULL CHECK (theme IN ('System', 'Light', 'Dark')),
    updated_at   DATETIME NOT NULL
);

-- The Tenant and Workspace a Principal acts in when a request selects none, as declared (the
-- bootstrap declares its administrator's). Only Platform administrators are guided by it: a
-- member acts in its first active membership.
CREATE TABLE principal_default_contexts (
    principal_id TEXT PRIMARY KEY REFERENCES principals (id) ON DELETE CASCADE,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    updated_at   DATETIME NOT NULL
);

-- Membership of a Principal in a Tenant (the organization). It grants no permission: roles stay
-- in memberships (a tenant-scoped role there is inherited by every Workspace of the Tenant), so
-- belonging to the organization does not open its other Workspaces.
CREATE TABLE tenant_members (
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    principal_id TEXT NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    created_at   DATETIME NOT NULL,
    PRIMARY KEY (tenant_id, principal_id)
);
CREATE INDEX tenant_members_principal_id ON tenant_members (principal_id);

-- +goose Down
DROP TABLE tenant_members;
DROP TABLE principal_default_contexts;
DROP TABLE principal_preferences;
