-- +goose Up
-- One row per model call, written in the transaction that records what the call decided (the
-- step's outcome, or the tool calls it asked for): which workspace, run, step attempt, agent and
-- Entry ('' when the run came from none) it served, which provider and model answered, its input
-- and output tokens and its cost in millionths of currency ('' when the model has no price).
-- day is the call's UTC day (YYYY-MM-DD), what usage reads and budget periods group by. Rows stay
-- when their run is deleted: they are what was spent.
CREATE TABLE model_usage (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    step TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    agent TEXT NOT NULL,
    entry TEXT NOT NULL DEFAULT '',
    model_provider TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL DEFAULT 0,
    currency TEXT NOT NULL DEFAULT '',
    day TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX model_usage_workspace_day ON model_usage (workspace_id, day);
CREATE INDEX model_usage_agent_day ON model_usage (workspace_id, agent, day);
CREATE INDEX model_usage_entry_day ON model_usage (workspace_id, entry, day);
CREATE INDEX model_usage_run ON model_usage (run_id, step);
-- budget is what an approval to continue past a budget shows (scope, period, limit, usage);
-- usage on an event is the usage of the model calls of its step (JSON), on the events that record
-- them.
ALTER TABLE pending_actions ADD COLUMN budget TEXT;
ALTER TABLE flow_run_events ADD COLUMN usage TEXT;

-- +goose Down
ALTER TABLE flow_run_events DROP COLUMN usage;
ALTER TABLE pending_actions DROP COLUMN budget;
DROP TABLE model_usage;
