-- +goose Up
-- Runtime Runs: one durable, asynchronous invocation of an agent (POST /api/runtime/runs).
-- Times are Unix milliseconds. A worker owns the run while lease_expires_at is in the future.
-- input holds the messages (JSON); response the agent's final answer (JSON).
CREATE TABLE runtime_runs (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL,
    workspace_id     TEXT NOT NULL,
    namespace        TEXT NOT NULL,
    principal_id     TEXT NOT NULL,
    agent_name       TEXT NOT NULL,
    agent_uid        TEXT NOT NULL,
    agent_version    TEXT NOT NULL,
    input            TEXT NOT NULL,
    mode             TEXT NOT NULL,
    timeout_seconds  INTEGER NOT NULL,
    origin           TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('Pending', 'Running', 'Completed', 'Failed')),
    model_provider   TEXT NOT NULL DEFAULT '',
    resolved_model   TEXT NOT NULL DEFAULT '',
    response         TEXT,
    error            TEXT NOT NULL DEFAULT '',
    attempt          INTEGER NOT NULL DEFAULT 1,
    lease_owner      TEXT NOT NULL DEFAULT '',
    lease_expires_at INTEGER NOT NULL DEFAULT 0,
    version          INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    completed_at     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runtime_runs_runnable ON runtime_runs (status, lease_expires_at);
CREATE INDEX runtime_runs_workspace ON runtime_runs (workspace_id, created_at);

-- +goose Down
DROP TABLE runtime_runs;
