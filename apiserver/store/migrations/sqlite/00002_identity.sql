-- +goose Up
-- Identity plane: principals, local accounts, server-side sessions and the security audit log.
CREATE TABLE principals (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('Human', 'Workload')),
    display_name TEXT NOT NULL,
    email        TEXT,
    status       TEXT NOT NULL CHECK (status IN ('Active', 'Disabled')),
    created_at   DATETIME NOT NULL
);

-- username keeps the spelling given at creation; normalized_username (case-folded) is unique.
CREATE TABLE local_accounts (
    account_id          TEXT PRIMARY KEY,
    principal_id        TEXT NOT NULL UNIQUE REFERENCES principals (id),
    username            TEXT NOT NULL,
    normalized_username TEXT NOT NULL UNIQUE,
    password_hash       TEXT NOT NULL,
    security_stamp      TEXT NOT NULL,
    failed_attempts     INTEGER NOT NULL DEFAULT 0,
    lockout_end         DATETIME,
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL
);

-- id is the SHA-256 digest (hex) of the session token; the token itself is never stored.
CREATE TABLE sessions (
    id             TEXT PRIMARY KEY,
    principal_id   TEXT NOT NULL REFERENCES principals (id),
    account_id     TEXT NOT NULL REFERENCES local_accounts (account_id) ON DELETE CASCADE,
    security_stamp TEXT NOT NULL,
    created_at     DATETIME NOT NULL,
    expires_at     DATETIME NOT NULL,
    last_seen_at   DATETIME NOT NULL
);
CREATE INDEX sessions_account_id ON sessions (account_id);

-- Append-only: seq orders the events, the triggers refuse updates and deletes.
CREATE TABLE audit_events (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT NOT NULL UNIQUE,
    occurred_at    DATETIME NOT NULL,
    action         TEXT NOT NULL,
    outcome        TEXT NOT NULL CHECK (outcome IN ('success', 'failure')),
    actor_id       TEXT NOT NULL DEFAULT '',
    target_id      TEXT NOT NULL DEFAULT '',
    tenant_id      TEXT,
    workspace_id   TEXT,
    reason_code    TEXT NOT NULL DEFAULT '',
    correlation_id TEXT NOT NULL DEFAULT ''
);

-- +goose StatementBegin
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only');
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE audit_events;
DROP TABLE sessions;
DROP TABLE local_accounts;
DROP TABLE principals;
