-- +goose Up
-- External identities: the exact (issuer, subject) pairs of OIDC sign-ins, each linked to one human
-- Principal by an administrator. Both are compared exactly and case-sensitively (SQLite's default
-- BINARY collation), as the spec requires for iss and sub.
CREATE TABLE external_identities (
    id           TEXT PRIMARY KEY,
    issuer       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    linked_at    DATETIME NOT NULL,
    UNIQUE (issuer, subject)
);
CREATE INDEX external_identities_principal_id ON external_identities (principal_id);

-- Sessions of Principals signed in through an external identity have no local account: a session
-- belongs to exactly one local account or one external identity, and ends with it. SQLite cannot
-- relax NOT NULL in place, so the table is rebuilt (nothing refers to it).
CREATE TABLE sessions_new (
    id                   TEXT PRIMARY KEY,
    principal_id         TEXT NOT NULL REFERENCES principals (id),
    account_id           TEXT REFERENCES local_accounts (account_id) ON DELETE CASCADE,
    external_identity_id TEXT REFERENCES external_identities (id) ON DELETE CASCADE,
    security_stamp       TEXT NOT NULL,
    created_at           DATETIME NOT NULL,
    expires_at           DATETIME NOT NULL,
    last_seen_at         DATETIME NOT NULL,
    CHECK ((account_id IS NULL) <> (external_identity_id IS NULL))
);
INSERT INTO sessions_new (id, principal_id, account_id, external_identity_id, security_stamp, created_at, expires_at, last_seen_at)
    SELECT id, principal_id, account_id, NULL, security_stamp, created_at, expires_at, last_seen_at FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;
CREATE INDEX sessions_account_id ON sessions (account_id);
CREATE INDEX sessions_external_identity_id ON sessions (external_identity_id);

-- +goose Down
-- Sessions of external identities cannot exist without them.
CREATE TABLE sessions_old (
    id             TEXT PRIMARY KEY,
    principal_id   TEXT NOT NULL REFERENCES principals (id),
    account_id     TEXT NOT NULL REFERENCES local_accounts (account_id) ON DELETE CASCADE,
    security_stamp TEXT NOT NULL,
    created_at     DATETIME NOT NULL,
    expires_at     DATETIME NOT NULL,
    last_seen_at   DATETIME NOT NULL
);
INSERT INTO sessions_old (id, principal_id, account_id, security_stamp, created_at, expires_at, last_seen_at)
    SELECT id, principal_id, account_id, security_stamp, created_at, expires_at, last_seen_at FROM sessions WHERE account_id IS NOT NULL;
DROP TABLE sessions;
ALTER TABLE sessions_old RENAME TO sessions;
CREATE INDEX sessions_account_id ON sessions (account_id);
DROP TABLE external_identities;
