-- +goose Up
-- External identities: the exact (issuer, subject) pairs of OIDC sign-ins, each linked to one human
-- Principal by an administrator. Both are compared exactly and case-sensitively (the default,
-- deterministic collation), as the spec requires for iss and sub.
CREATE TABLE external_identities (
    id           TEXT PRIMARY KEY,
    issuer       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    linked_at    TIMESTAMPTZ NOT NULL,
    UNIQUE (issuer, subject)
);
CREATE INDEX external_identities_principal_id ON external_identities (principal_id);

-- Sessions of Principals signed in through an external identity have no local account: a session
-- belongs to exactly one local account or one external identity, and ends with it.
ALTER TABLE sessions ALTER COLUMN account_id DROP NOT NULL;
ALTER TABLE sessions ADD COLUMN external_identity_id TEXT REFERENCES external_identities (id) ON DELETE CASCADE;
ALTER TABLE sessions ADD CONSTRAINT sessions_one_credential CHECK ((account_id IS NULL) <> (external_identity_id IS NULL));
CREATE INDEX sessions_external_identity_id ON sessions (external_identity_id);

-- +goose Down
-- Sessions of external identities cannot exist without them.
DELETE FROM sessions WHERE account_id IS NULL;
ALTER TABLE sessions DROP CONSTRAINT sessions_one_credential;
ALTER TABLE sessions DROP COLUMN external_identity_id;
ALTER TABLE sessions ALTER COLUMN account_id SET NOT NULL;
DROP TABLE external_identities;
