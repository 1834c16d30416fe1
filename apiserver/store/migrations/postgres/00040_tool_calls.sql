-- +goose Up
-- Governed tool execution: every tool call an Agent step's model asks for, persisted before it
-- runs and again with its result, so that a crash never runs a completed call twice and never
-- loses one. Unlike flow_run_events, these rows hold the call's arguments and result: they are
-- what the run did, read with runs/read like the run itself, and deleted with it.
--
-- seq numbers the calls of one step of a run from 1; turn numbers the model answers that asked
-- for them. status is requested (persisted, not yet run), started (running, or interrupted by a
-- crash), awaitingApproval, approved, rejected, completed or failed. idempotency_key
-- (run/step/tool/seq) goes to the provider with every execution of the call.
CREATE TABLE flow_run_tool_calls (
    run_id            TEXT NOT NULL REFERENCES flow_runs (id) ON DELETE CASCADE,
    step              TEXT NOT NULL,
    seq               BIGINT NOT NULL,
    turn              BIGINT NOT NULL,
    call_id           TEXT NOT NULL,
    function_name     TEXT NOT NULL,
    tool              TEXT NOT NULL DEFAULT '',
    provider          TEXT NOT NULL DEFAULT '',
    arguments         TEXT NOT NULL,
    model_text        TEXT NOT NULL DEFAULT '',
    status            TEXT NOT NULL,
    executions        BIGINT NOT NULL DEFAULT 0,
    result            TEXT,
    is_error          BIGINT NOT NULL DEFAULT 0,
    truncated         BIGINT NOT NULL DEFAULT 0,
    duration_ms       BIGINT NOT NULL DEFAULT 0,
    idempotency_key   TEXT NOT NULL,
    pending_action_id TEXT,
    decided_by        TEXT NOT NULL DEFAULT '',
    decision_reason   TEXT NOT NULL DEFAULT '',
    created_at        BIGINT NOT NULL,
    completed_at      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, step, seq)
);
CREATE INDEX flow_run_tool_calls_action ON flow_run_tool_calls (pending_action_id);

-- +goose Down
DROP TABLE flow_run_tool_calls;
