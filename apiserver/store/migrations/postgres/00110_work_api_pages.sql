-- +goose Up
-- The kube API's work.platform.dev lists a workspace's Tasks, Interactions and FlowRuns a page at
-- a time in id order (UUIDv7: newest first, pages that stay put as rows change), and shows the
-- Trigger whose occurrence submitted a Task.
CREATE INDEX work_tasks_workspace_id ON work_tasks (workspace_id, id);
CREATE INDEX interactions_workspace_id ON interactions (workspace_id, id);
CREATE INDEX flow_runs_workspace_id ON flow_runs (workspace_id, id);
CREATE INDEX trigger_occurrences_task ON trigger_occurrences (work_task_id);

-- +goose Down
DROP INDEX trigger_occurrences_task;
DROP INDEX flow_runs_workspace_id;
DROP INDEX interactions_workspace_id;
DROP INDEX work_tasks_workspace_id;
