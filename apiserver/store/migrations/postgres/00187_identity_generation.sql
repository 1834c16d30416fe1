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
CREATE FUNCTION identity_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE identity_generation SET generation = generation + 1;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- Deferred to the commit, so that the counter's row is the last lock a transaction takes: two
-- transactions that change identity rows never wait on each other in opposite orders.
CREATE CONSTRAINT TRIGGER principals_identity_generation AFTER INSERT OR DELETE OR UPDATE ON principals
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER local_accounts_identity_generation AFTER DELETE ON local_accounts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER local_accounts_update_identity_generation AFTER UPDATE OF principal_id, security_stamp, lockout_end ON local_accounts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.principal_id IS DISTINCT FROM NEW.principal_id OR OLD.security_stamp IS DISTINCT FROM NEW.security_stamp OR OLD.lockout_end IS DISTINCT FROM NEW.lockout_end)
    EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER sessions_identity_generation AFTER DELETE ON sessions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER sessions_update_identity_generation AFTER UPDATE OF principal_id, account_id, external_identity_id, security_stamp, expires_at ON sessions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.principal_id IS DISTINCT FROM NEW.principal_id OR OLD.account_id IS DISTINCT FROM NEW.account_id OR OLD.external_identity_id IS DISTINCT FROM NEW.external_identity_id OR OLD.security_stamp IS DISTINCT FROM NEW.security_stamp OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER personal_access_tokens_identity_generation AFTER DELETE ON personal_access_tokens
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER personal_access_tokens_update_identity_generation AFTER UPDATE OF principal_id, workspace_id, digest, permissions, expires_at, revoked_at ON personal_access_tokens
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.principal_id IS DISTINCT FROM NEW.principal_id OR OLD.workspace_id IS DISTINCT FROM NEW.workspace_id OR OLD.digest IS DISTINCT FROM NEW.digest OR OLD.permissions IS DISTINCT FROM NEW.permissions OR OLD.expires_at IS DISTINCT FROM NEW.expires_at OR OLD.revoked_at IS DISTINCT FROM NEW.revoked_at)
    EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER memberships_identity_generation AFTER INSERT OR DELETE OR UPDATE ON memberships
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER workspaces_identity_generation AFTER INSERT OR DELETE OR UPDATE ON workspaces
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER tenants_identity_generation AFTER INSERT OR DELETE OR UPDATE ON tenants
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER platform_administrators_identity_generation AFTER INSERT OR DELETE OR UPDATE ON platform_administrators
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER external_identities_identity_generation AFTER INSERT OR DELETE OR UPDATE ON external_identities
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();
CREATE CONSTRAINT TRIGGER principal_default_contexts_identity_generation AFTER INSERT OR DELETE OR UPDATE ON principal_default_contexts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_generation_bump();

-- +goose Down
DROP TRIGGER principals_identity_generation ON principals;
DROP TRIGGER local_accounts_identity_generation ON local_accounts;
DROP TRIGGER local_accounts_update_identity_generation ON local_accounts;
DROP TRIGGER sessions_identity_generation ON sessions;
DROP TRIGGER sessions_update_identity_generation ON sessions;
DROP TRIGGER personal_access_tokens_identity_generation ON personal_access_tokens;
DROP TRIGGER personal_access_tokens_update_identity_generation ON personal_access_tokens;
DROP TRIGGER memberships_identity_generation ON memberships;
DROP TRIGGER workspaces_identity_generation ON workspaces;
DROP TRIGGER tenants_identity_generation ON tenants;
DROP TRIGGER platform_administrators_identity_generation ON platform_administrators;
DROP TRIGGER external_identities_identity_generation ON external_identities;
DROP TRIGGER principal_default_contexts_identity_generation ON principal_default_contexts;
DROP FUNCTION identity_generation_bump();
DROP TABLE identity_generation;
