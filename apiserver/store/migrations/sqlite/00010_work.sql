-- +goose Up
-- Work plane: WorkItems, their FlowRuns with an append-only event history, and the
-- PendingActions a suspended run waits on. Times are Unix milliseconds (INTEGER) so that lease
-- and expiry comparisons are exact on both dialects.

-- A submitted WorkItem. tenant_id, workspace_id and principal_id are the resolved management
-- context of the submission; namespace is the workspace's kube namespace, where its Flow lives.
CREATE TABLE work_items (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    workspace_id   TEXT NOT NULL,
    namespace      TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    interaction_id TEXT,
    type           TEXT NOT NULL,
    title          TEXT NOT NULL,
    instruction    TEXT NOT NULL,
    flow_name      TEXT NOT NULL,
    flow_version   TEXT NOT NULL,
    flow_run_id    TEXT NOT NULL,
    status         TEXT NOT NULL,
    result         TEXT,
    reason         TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE INDEX work_items_workspace ON work_items (workspace_id, created_at);

-- One durable execution of a Flow. flow_snapshot and agents are pinned at first execution (NULL
-- before); every later step, resume and retry uses them. current_step is the step to run next,
-- step_started says its StepStarted transition is persisted, attempt numbers its tries (the
-- agent idempotency key is id/current_step/attempt). A worker owns the run while lease_expires_at
-- is in the future. version is the optimistic version and the ETag.
CREATE TABLE flow_runs (
    id                 TEXT PRIMARY KEY,
    work_item_id       TEXT NOT NULL,
    tenant_id          TEXT NOT NULL,
    workspace_id       TEXT NOT NULL,
    namespace          TEXT NOT NULL,
    principal_id       TEXT NOT NULL,
    interaction_id     TEXT,
    parent_flow_run_id TEXT REFERENCES flow_runs (id) ON DELETE SET NULL,
    flow_name          TEXT NOT NULL,
    flow_version       TEXT NOT NULL,
    flow_digest        TEXT NOT NULL DEFAULT '',
    flow_snapshot      TEXT,
    agents             TEXT,
    state              TEXT NOT NULL CHECK (state IN ('Pending', 'Running', 'ActionRequired', 'Paused', 'Completed', 'Failed', 'Cancelled')),
    paused_from        TEXT NOT NULL DEFAULT '',
    current_step       TEXT NOT NULL DEFAULT '',
    step_started       INTEGER NOT NULL DEFAULT 0,
    attempt            INTEGER NOT NULL DEFAULT 1,
    data               TEXT NOT NULL,
    result             TEXT,
    reason             TEXT NOT NULL DEFAULT '',
    resume_token_hash  TEXT NOT NULL,
    lease_owner        TEXT NOT NULL DEFAULT '',
    lease_expires_at   INTEGER NOT NULL DEFAULT 0,
    version            INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);
CREATE INDEX flow_runs_runnable ON flow_runs (state, lease_expires_at);
CREATE INDEX flow_runs_workspace ON flow_runs (workspace_id, created_at);

-- Append-only history of a run's transitions, numbered per run. It never holds prompts, inputs,
-- outputs or tokens: only what happened, to which step, and a readable reason.
CREATE TABLE flow_run_events (
    run_id     TEXT NOT NULL REFERENCES flow_runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    step       TEXT NOT NULL DEFAULT '',
    attempt    INTEGER NOT NULL DEFAULT 0,
    state      TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- +goose StatementBegin
CREATE TRIGGER flow_run_events_append_only BEFORE UPDATE ON flow_run_events
BEGIN
    SELECT RAISE(ABORT, 'flow_run_events is append-only');
END;
-- +goose StatementEnd

-- A durable suspension. token_hash is the SHA-256 (hex) of the single-use resume token, which
-- is never stored. continuation_step is where the run resumes once the action is completed.
CREATE TABLE pending_actions (
    id                TEXT PRIMARY KEY,
    workspace_id      TEXT NOT NULL,
    interaction_id    TEXT,
    run_id            TEXT NOT NULL REFERENCES flow_runs (id) ON DELETE CASCADE,
    step              TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('text', 'choice', 'confirmation', 'file', 'approval')),
    prompt            TEXT NOT NULL,
    options           TEXT,
    status            TEXT NOT NULL CHECK (status IN ('created', 'completed', 'expired', 'cancelled')),
    expires_at        INTEGER NOT NULL,
    continuation_step TEXT NOT NULL,
    version           INTEGER NOT NULL,
    token_hash        TEXT NOT NULL,
    answered_by       TEXT NOT NULL DEFAULT '',
    answer            TEXT,
    answered_at       INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL
);
CREATE INDEX pending_actions_run ON pending_actions (run_id, status);
CREATE INDEX pending_actions_open ON pending_actions (status, expires_at);

-- +goose Down
DROP TABLE pending_actions;
DROP TRIGGER flow_run_events_append_only;
DROP TABLE flow_run_events;
DROP TABLE flow_runs;
DROP TABLE work_items;
