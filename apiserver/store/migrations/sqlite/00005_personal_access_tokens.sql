-- +goose Up
-- Personal access tokens: each bound to one human Principal and one Workspace, with a permission
-- allow-list and a mandatory expiry. The token is shown once at creation; only the SHA-256
-- digest (hex) of the whole token and its non-secret prefix are kept.
-- permissions is the allow-list as comma-separated catalog names (names, not bits, so that the
-- catalog can grow without rewriting rows). last_used_at is written at most once a minute.
-- A deleted workspace takes its tokens with it: they could never authenticate again.
CREATE TABLE personal_access_tokens (
    id           TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    digest       TEXT NOT NULL UNIQUE,
    permissions  TEXT NOT NULL,
    created_at   DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL,
    revoked_at   DATETIME,
    last_used_at DATETIME
);
CREATE INDEX personal_access_tokens_principal_id ON personal_access_tokens (principal_id);

-- +goose Down
DROP TABLE personal_access_tokens;
