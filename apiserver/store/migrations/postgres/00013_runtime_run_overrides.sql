-- +goose Up
-- The run's overrides of the agent's generation settings (JSON: temperature, maxOutputTokens);
-- '{}' when it overrides nothing.
ALTER TABLE runtime_runs ADD COLUMN overrides TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE runtime_runs DROP COLUMN overrides;
