-- +goose Up
-- The identity generation: a counter that every change to what authenticates a caller or decides
-- its rights bumps in the change's own transaction (a revoked or expired token, a disabled
-- Principal or account, a rotated security stamp, an ended session, a membership, a role, a
-- workspace or tenant, a Platform administrator, a linked identity, a default context). The
-- service API keeps what it resolved of callers in memory under the generation it read first,
-- and reads the generation once per request: a change committed by any replica, or written by
-- hand, applies to the next request everywhere. What changes at every use (last_used_at,
-- last_seen_at, failed attempts) and what is only added (a new token or session) does not bump it.
CREATE TABLE identity_generation (
    singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
    generation BIGINT NOT NULL
);
INSERT INTO identity_generation (singleton, generation) VALUES (1, 0);
-- +goose StatementBegin
CREATE TRIGGER principals_insert_identity_generation AFTER INSERT ON principals
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER principals_delete_identity_generation AFTER DELETE ON principals
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER principals_update_identity_generation AFTER UPDATE ON principals
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER local_accounts_delete_identity_generation AFTER DELETE ON local_accounts
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER local_accounts_update_identity_generation AFTER UPDATE OF principal_id, security_stamp, lockout_end ON local_accounts
WHEN OLD.principal_id IS NOT NEW.principal_id OR OLD.security_stamp IS NOT NEW.security_stamp OR OLD.lockout_end IS NOT NEW.lockout_end
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER sessions_delete_identity_generation AFTER DELETE ON sessions
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER sessions_update_identity_generation AFTER UPDATE OF principal_id, account_id, external_identity_id, security_stamp, expires_at ON sessions
WHEN OLD.principal_id IS NOT NEW.principal_id OR OLD.account_id IS NOT NEW.account_id OR OLD.external_identity_id IS NOT NEW.external_identity_id OR OLD.security_stamp IS NOT NEW.security_stamp OR OLD.expires_at IS NOT NEW.expires_at
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER personal_access_tokens_delete_identity_generation AFTER DELETE ON personal_access_tokens
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER personal_access_tokens_update_identity_generation AFTER UPDATE OF principal_id, workspace_id, digest, permissions, expires_at, revoked_at ON personal_access_tokens
WHEN OLD.principal_id IS NOT NEW.principal_id OR OLD.workspace_id IS NOT NEW.workspace_id OR OLD.digest IS NOT NEW.digest OR OLD.permissions IS NOT NEW.permissions OR OLD.expires_at IS NOT NEW.expires_at OR OLD.revoked_at IS NOT NEW.revoked_at
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER memberships_insert_identity_generation AFTER INSERT ON memberships
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER memberships_delete_identity_generation AFTER DELETE ON memberships
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER memberships_update_identity_generation AFTER UPDATE ON memberships
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER workspaces_insert_identity_generation AFTER INSERT ON workspaces
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER workspaces_delete_identity_generation AFTER DELETE ON workspaces
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER workspaces_update_identity_generation AFTER UPDATE ON workspaces
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER tenants_insert_identity_generation AFTER INSERT ON tenants
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER tenants_delete_identity_generation AFTER DELETE ON tenants
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER tenants_update_identity_generation AFTER UPDATE ON tenants
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER platform_administrators_insert_identity_generation AFTER INSERT ON platform_administrators
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER platform_administrators_delete_identity_generation AFTER DELETE ON platform_administrators
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER platform_administrators_update_identity_generation AFTER UPDATE ON platform_administrators
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER external_identities_insert_identity_generation AFTER INSERT ON external_identities
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER external_identities_delete_identity_generation AFTER DELETE ON external_identities
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER external_identities_update_identity_generation AFTER UPDATE ON external_identities
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER principal_default_contexts_insert_identity_generation AFTER INSERT ON principal_default_contexts
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER principal_default_contexts_delete_identity_generation AFTER DELETE ON principal_default_contexts
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER principal_default_contexts_update_identity_generation AFTER UPDATE ON principal_default_contexts
BEGIN UPDATE identity_generation SET generation = generation + 1; END;
-- +goose StatementEnd
-- +goose Down
DROP TRIGGER principals_insert_identity_generation;
DROP TRIGGER principals_delete_identity_generation;
DROP TRIGGER principals_update_identity_generation;
DROP TRIGGER local_accounts_delete_identity_generation;
DROP TRIGGER local_accounts_update_identity_generation;
DROP TRIGGER sessions_delete_identity_generation;
DROP TRIGGER sessions_update_identity_generation;
DROP TRIGGER personal_access_tokens_delete_identity_generation;
DROP TRIGGER personal_access_tokens_update_identity_generation;
DROP TRIGGER memberships_insert_identity_generation;
DROP TRIGGER memberships_delete_identity_generation;
DROP TRIGGER memberships_update_identity_generation;
DROP TRIGGER workspaces_insert_identity_generation;
DROP TRIGGER workspaces_delete_identity_generation;
DROP TRIGGER workspaces_update_identity_generation;
DROP TRIGGER tenants_insert_identity_generation;
DROP TRIGGER tenants_delete_identity_generation;
DROP TRIGGER tenants_update_identity_generation;
DROP TRIGGER platform_administrators_insert_identity_generation;
DROP TRIGGER platform_administrators_delete_identity_generation;
DROP TRIGGER platform_administrators_update_identity_generation;
DROP TRIGGER external_identities_insert_identity_generation;
DROP TRIGGER external_identities_delete_identity_generation;
DROP TRIGGER external_identities_update_identity_generation;
DROP TRIGGER principal_default_contexts_insert_identity_generation;
DROP TRIGGER principal_default_contexts_delete_identity_generation;
DROP TRIGGER principal_default_contexts_update_identity_generation;
DROP TABLE identity_generation;
